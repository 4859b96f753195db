"use client";
/**
 * The fleet-wide history: uptime per backend over 24 h / 7 d / 30 d, and every outage in the
 * chosen window (down, stuck, long unknown, restarts from stepwatch and from outside), as Uptime
 * Kuma shows them. The backend and the window live in the URL, so a link shows the same review.
 */
import { usePathname, useRouter } from "next/navigation";
import useSWR from "swr";
import type { OutagesResponse } from "@/lib/api/types";
import { HISTORY_RANGES, type HistoryRangeKey } from "@/lib/ui/chart";
import { getJson } from "@/lib/ui/fetcher";
import { OutagesTable, UptimeTable } from "./OutagesTable";
import { BackendSelect, ErrorBanner } from "./Review";
import { Time } from "./TimeZone";

export function HistoryView({
  backend,
  backendIds,
  range,
  window: fixed,
}: {
  backend: string | null;
  backendIds: string[];
  range: HistoryRangeKey;
  window: { from: number; to: number } | null;
}) {
  const router = useRouter();
  const path = usePathname();
  const query = (over: { backend?: string | null; range?: string | null; from?: number; to?: number }) => {
    const p = new URLSearchParams();
    const b = over.backend === undefined ? backend : over.backend;
    if (b) p.set("backend", b);
    if (over.from !== undefined && over.to !== undefined) {
      p.set("from", String(over.from));
      p.set("to", String(over.to));
    } else if ((over.range ?? range) !== "7d") p.set("range", over.range ?? range);
    const s = p.toString();
    return s ? `?${s}` : "";
  };
  const ms = HISTORY_RANGES.find((r) => r.key === range)!.ms;
  const key = ["outages", backend, range, fixed?.from, fixed?.to];
  const { data, error } = useSWR<OutagesResponse>(
    key,
    () => {
      const to = fixed?.to ?? Date.now();
      const from = fixed?.from ?? to - ms;
      return getJson<OutagesResponse>(`/api/outages?from=${from}&to=${to}${backend ? `&backend=${encodeURIComponent(backend)}` : ""}`);
    },
    { refreshInterval: fixed && fixed.to < Date.now() ? 0 : 15_000, keepPreviousData: true },
  );
  const csv = (what: "outages" | "restarts") => {
    const p = new URLSearchParams({ format: "csv" });
    if (backend) p.set("backend", backend);
    if (what === "outages" && data) {
      p.set("from", String(data.from));
      p.set("to", String(data.to));
    }
    if (what === "restarts") p.set("limit", "1000");
    return `/api/${what}?${p}`;
  };
  // An ongoing outage lasts until now, not until the end of a window that may lie in the future.
  const now = Math.min(data?.to ?? Date.now(), Date.now());

  return (
    <>
      <div className="page-head">
        <h1>History</h1>
        <span className="meta">every outage, whoever caused it: down, stuck, unknown for long, restarts from stepwatch and from outside</span>
      </div>
      <div className="filters">
        <BackendSelect id="history-backend" value={backend} backendIds={backendIds} onChange={(b) => router.replace(`${path}${query({ backend: b })}`)} />
        <div className="ranges" role="group" aria-label="Window">
          {HISTORY_RANGES.map((r) => (
            <button key={r.key} type="button" aria-pressed={!fixed && range === r.key} onClick={() => router.replace(`${path}${query({ range: r.key })}`)} data-testid={`history-range-${r.key}`}>
              {r.label}
            </button>
          ))}
        </div>
        <span className="small">
          <a href={csv("outages")} download data-testid="outages-csv">
            Outages as CSV
          </a>{" "}
          ·{" "}
          <a href={csv("restarts")} download data-testid="restarts-csv">
            Restarts as CSV
          </a>
        </span>
      </div>
      <ErrorBanner error={error} />
      <section className="section" style={{ marginTop: 0 }}>
        <h2>Uptime</h2>
        {data ? <UptimeTable uptime={data.uptime} /> : <p className="empty">Loading…</p>}
      </section>
      <section className="section">
        <h2>
          Outages{" "}
          {data ? (
            <span className="muted small" data-testid="outages-window">
              <Time at={data.from} /> to <Time at={data.to} />
            </span>
          ) : null}
        </h2>
        {data ? <OutagesTable outages={data.outages} now={now} /> : <p className="empty">Loading…</p>}
      </section>
    </>
  );
}
