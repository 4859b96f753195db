"use client";
/** Outages for review (one backend's, or the fleet's) and uptime per backend over 24 h / 7 d / 30 d. */
import type { UptimeDTO } from "@/lib/api/types";
import type { Outage } from "@/lib/core/outages";
import { UPTIME_WINDOWS } from "@/lib/core/outages";
import { formatDuration } from "@/lib/core/format";
import { STATE_TONE } from "@/lib/ui/state";
import type { BackendState } from "@/lib/core/states";
import { BackendCell, LogTable } from "./Review";
import { Time } from "./TimeZone";

const tone = (s: string) => STATE_TONE[s as BackendState] ?? "muted";

export function formatUptime(p: number | null): string {
  if (p === null) return "—";
  if (p >= 99.995) return "100%";
  return `${p >= 99 ? p.toFixed(2) : p.toFixed(1)}%`;
}

export function UptimeTable({ uptime, showBackend = true }: { uptime: UptimeDTO[]; showBackend?: boolean }) {
  if (uptime.length === 0) return null;
  return (
    <div className="table-wrap">
      <table data-testid="uptime-table" className="uptime">
        <caption className="sr-only">Uptime over the last 24 hours, 7 days and 30 days</caption>
        <thead>
          <tr>
            {showBackend ? <th>Backend</th> : null}
            {UPTIME_WINDOWS.map((w) => (
              <th key={w.key}>{w.key.replace("h", " h").replace("d", " d")}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {uptime.map((u) => (
            <tr key={u.backendId} data-testid={`uptime-${u.backendId}`}>
              {showBackend ? <BackendCell id={u.backendId} /> : null}
              {UPTIME_WINDOWS.map((w) => (
                <td key={w.key} data-label={`Uptime ${w.key}`} className="num" data-testid={`uptime-${u.backendId}-${w.key}`}>
                  {formatUptime(u.uptime[w.key])}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function OutagesTable({ outages, showBackend = true, now }: { outages: Outage[]; showBackend?: boolean; now: number }) {
  return (
    <LogTable
      testId="outages-table"
      className="restarts outages"
      columns={["Start", "End", showBackend ? "Backend" : null, "State", "Duration", "Cause"]}
      rows={outages.length}
      empty={{ text: "No outages in this range.", testId: "outages-empty" }}
    >
      {outages.map((o) => (
        <tr key={`${o.backendId}-${o.start}`} data-testid="outage-row" data-backend={o.backendId} data-state={o.state}>
          <td className="mono when" data-label="Start">
            <Time at={o.start} />
          </td>
          <td className="mono when" data-label="End">
            {o.end === null ? <span className="badge tone-bad">ongoing</span> : <Time at={o.end} />}
          </td>
          {showBackend ? <BackendCell id={o.backendId} href={`/backends/${encodeURIComponent(o.backendId)}?from=${o.start - 5 * 60_000}&to=${(o.end ?? now) + 5 * 60_000}`} /> : null}
          <td data-label="State">
            <span className={`badge tone-${tone(o.state)}`}>{o.state}</span>
          </td>
          <td data-label="Duration" className="when">
            {formatDuration(o.end === null ? (now - o.start) / 1000 : o.durationSeconds)}
          </td>
          <td data-label="Cause" className="why small">
            {o.exitedNotRestarted ? (
              <span className="badge tone-bad" data-testid="outage-exited" title="the server went away and nothing brought it back within startupGraceSeconds">
                exited, not restarted
              </span>
            ) : null}{" "}
            {o.cause}{" "}
            {/* The bundles captured when it got stuck or went down, and before any restart (issue 32). */}
            <a href={`/backends/${encodeURIComponent(o.backendId)}#evidence`} data-testid="outage-evidence">
              evidence
            </a>
          </td>
        </tr>
      ))}
    </LogTable>
  );
}
