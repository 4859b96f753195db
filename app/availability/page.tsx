import type { Metadata } from "next";
import { getAvailability } from "@/lib/api/availability";
import type { AvailabilityResponse } from "@/lib/api/types";
import { getRuntime } from "@/lib/runtime";
import { AVAILABILITY_PERIODS } from "@/lib/core/outages";
import { BACKEND_STATES, STATE_INFO } from "@/lib/core/states";
import { formatDuration } from "@/lib/core/format";
import { AVAILABILITY_RANGES, availabilityRange, parseAvailabilityQuery, periodLabel } from "@/lib/ui/availability";

export const metadata: Metadata = { title: "Availability" };
export const dynamic = "force-dynamic";

/**
 * Availability from progress (GET /api/availability, rendered on the server): per backend and
 * period, where the time went, restarts by stepwatch and by others, mean time to recover. A plain
 * form: the report is a link, and the page needs no script.
 */
export default async function AvailabilityPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const q = parseAvailabilityQuery(await searchParams);
  const { from, to } = availabilityRange(q, Date.now());
  let backendIds: string[] = [];
  let report: AvailabilityResponse | null = null;
  let error: string | null = null;
  try {
    backendIds = (await getRuntime()).config.backends.map((b) => b.id);
    report = await getAvailability({ backendId: q.backend ?? undefined, from, to, period: q.period });
  } catch (e) {
    error = (e as Error).message;
  }
  const csv = `/api/availability?${new URLSearchParams({ ...(q.backend ? { backend: q.backend } : {}), from: String(from), to: String(to), period: q.period, format: "csv" })}`;
  return (
    <>
      <div className="page-head">
        <h1>Availability</h1>
        <span className="meta">from progress, by {q.period}, the last {q.days} day{q.days === 1 ? "" : "s"}</span>
      </div>
      <p className="muted small">
        Time in each state, measured from the engines&apos; progress (not from probes: a busy server fails them, a hung one can pass them). Periods are
        UTC; maintenance is counted apart; before stepwatch first saw a backend is unknown. Each row adds up to its period.
      </p>
      <form method="get" className="filters" data-testid="availability-form">
        <label>
          Backend{" "}
          <select name="backend" defaultValue={q.backend ?? ""} data-testid="availability-backend">
            <option value="">all</option>
            {backendIds.map((id) => (
              <option key={id} value={id}>
                {id}
              </option>
            ))}
          </select>
        </label>{" "}
        <label>
          By{" "}
          <select name="period" defaultValue={q.period} data-testid="availability-period">
            {AVAILABILITY_PERIODS.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>{" "}
        <label>
          Last{" "}
          <select name="days" defaultValue={String(q.days)} data-testid="availability-days">
            {AVAILABILITY_RANGES.map((d) => (
              <option key={d} value={d}>
                {d} day{d === 1 ? "" : "s"}
              </option>
            ))}
          </select>
        </label>{" "}
        <button type="submit">Show</button> <a href={csv} data-testid="availability-csv">CSV</a>
      </form>
      {error ? (
        <div className="banner error" role="alert">
          {error}
        </div>
      ) : null}
      {report && report.rows.length === 0 ? <p data-testid="availability-empty">No backends.</p> : null}
      {report && report.rows.length > 0 ? (
        <div className="table-wrap">
          <table data-testid="availability-table" className="restarts availability">
            <thead>
              <tr>
                <th>Backend</th>
                <th>Period (UTC)</th>
                <th>Available</th>
                {BACKEND_STATES.map((s) => (
                  <th key={s}>{STATE_INFO[s].label}</th>
                ))}
                <th>Maintenance</th>
                <th>Restarts by stepwatch</th>
                <th>Restarts by others</th>
                <th>Mean time to recover</th>
              </tr>
            </thead>
            <tbody>
              {report.rows.map((r) => (
                <tr key={`${r.backendId}-${r.start}`} data-testid="availability-row" data-backend={r.backendId} data-start={r.start}>
                  <td data-label="Backend">
                    <a href={`/backends/${encodeURIComponent(r.backendId)}`}>{r.backendId}</a>
                  </td>
                  <td data-label="Period" className="mono">
                    {periodLabel(r.start, report.period)}
                  </td>
                  <td data-label="Available" className="num">
                    {r.availablePercent === null ? "—" : `${r.availablePercent.toFixed(r.availablePercent >= 99 ? 2 : 1)}%`}
                  </td>
                  {BACKEND_STATES.map((s) => (
                    <td key={s} data-label={STATE_INFO[s].label} className={r.states[s] > 0 ? "num" : "num muted"}>
                      {r.states[s] > 0 ? formatDuration(r.states[s]) : "—"}
                    </td>
                  ))}
                  <td data-label="Maintenance" className="num">
                    {r.maintenanceSeconds > 0 ? formatDuration(r.maintenanceSeconds) : "—"}
                  </td>
                  <td data-label="Restarts by stepwatch" className="num">
                    {r.restartsByStepwatch}
                  </td>
                  <td data-label="Restarts by others" className="num" data-testid="availability-others">
                    {r.restartsByOthers}
                  </td>
                  <td data-label="Mean time to recover" className="num">
                    {r.meanTimeToRecoverSeconds === null ? "—" : `${formatDuration(r.meanTimeToRecoverSeconds)} (${r.recoveries})`}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
