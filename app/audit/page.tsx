import type { Metadata } from "next";
import Link from "next/link";
import { auditPage } from "@/lib/api/audit";
import { DomainError } from "@/lib/core/errors";
import { formatDateTime } from "@/lib/core/format";

export const metadata: Metadata = { title: "Audit log" };
export const dynamic = "force-dynamic";

/** Who did what: sign-ins (ok and failed), sign-outs, sessions ended, restarts, config loads. Operators only. */
export default async function AuditPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const before = typeof sp.before === "string" && /^\d+$/.test(sp.before) ? Number(sp.before) : undefined;
  let page: Awaited<ReturnType<typeof auditPage>>;
  try {
    page = await auditPage({ before });
  } catch (e) {
    if (e instanceof DomainError && (e.code === "unauthenticated" || e.code === "forbidden")) {
      return (
        <div className="panel" data-testid="audit-refused">
          <h1>Audit log</h1>
          <p>
            {e.message}. <Link href="/signin?next=%2Faudit">Sign in</Link>
          </p>
        </div>
      );
    }
    throw e;
  }
  return (
    <>
      <div className="page-head">
        <h1>Audit log</h1>
        <span className="meta">sign-ins, sign-outs, restarts and configuration, newest first</span>
      </div>
      <div className="table-wrap">
        <table data-testid="audit-table">
          <thead>
            <tr>
              <th>When</th>
              <th>Who</th>
              <th>What</th>
              <th>On</th>
              <th>From</th>
              <th>Detail</th>
            </tr>
          </thead>
          <tbody>
            {page.entries.map((e) => (
              <tr key={e.id} data-testid="audit-row">
                <td>{formatDateTime(e.at)}</td>
                <td>
                  {e.actor ?? "stepwatch"} <span className="muted small">{e.actorKind}</span>
                </td>
                <td>{e.action}</td>
                <td>{e.target ?? ""}</td>
                <td>{e.address ?? ""}</td>
                <td className="small">{e.detail ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {page.nextBefore !== null ? (
        <p>
          <Link href={`/audit?before=${page.nextBefore}`}>Older entries</Link>
        </p>
      ) : null}
    </>
  );
}
