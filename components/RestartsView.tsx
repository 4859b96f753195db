"use client";
import { usePathname, useRouter } from "next/navigation";
import useSWR from "swr";
import type { RestartEventDTO } from "@/lib/api/types";
import { getJson } from "@/lib/ui/fetcher";
import { RestartsTable } from "./RestartsTable";

export function RestartsView({ backend, backendIds }: { backend: string | null; backendIds: string[] }) {
  const router = useRouter();
  const path = usePathname();
  const url = `/api/restarts?limit=500${backend ? `&backend=${encodeURIComponent(backend)}` : ""}`;
  // Pending restarts resolve on their own; a slow poll keeps the outcome column current.
  const { data, error } = useSWR<RestartEventDTO[]>(url, getJson, { refreshInterval: 5000 });
  return (
    <>
      <div className="page-head">
        <h1>Restarts</h1>
        <span className="meta">
          every restart asked for from stepwatch, newest first ·{" "}
          <a href={`/api/restarts?limit=1000&format=csv${backend ? `&backend=${encodeURIComponent(backend)}` : ""}`} download data-testid="restarts-csv">
            CSV
          </a>{" "}
          · outages from any cause: <a href={`/history${backend ? `?backend=${encodeURIComponent(backend)}` : ""}`}>History</a>
        </span>
      </div>
      <div className="filters">
        <div>
          <label htmlFor="restart-filter">Backend</label>
          <select
            id="restart-filter"
            value={backend ?? ""}
            onChange={(e) => router.replace(e.target.value ? `${path}?backend=${encodeURIComponent(e.target.value)}` : path)}
            data-testid="restart-filter"
          >
            <option value="">All backends</option>
            {backendIds.map((id) => (
              <option key={id} value={id}>
                {id}
              </option>
            ))}
          </select>
        </div>
      </div>
      {error ? (
        <div className="banner error" role="alert">
          {(error as Error).message}
        </div>
      ) : null}
      {data ? <RestartsTable restarts={data} /> : !error ? <p className="empty">Loading…</p> : null}
    </>
  );
}
