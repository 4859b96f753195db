"use client";
/** Outages for review (one backend's, or the fleet's) and uptime per backend over 24 h / 7 d / 30 d. */
import Link from "next/link";
import type { Outage, UptimeDTO } from "@/lib/outages";
import { UPTIME_WINDOWS } from "@/lib/outages";
import { formatDuration } from "@/lib/ui/format";
import { STATE_TONE } from "@/lib/ui/state";
import type { BackendState } from "@/lib/check/states";
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
              {showBackend ? (
                <td data-label="Backend">
                  <Link href={`/backends/${encodeURIComponent(u.backendId)}`}>{u.backendId}</Link>
                </td>
              ) : null}
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
  if (outages.length === 0) return <p className="empty" data-testid="outages-empty">No outages in this range.</p>;
  return (
    <div className="table-wrap restarts-wrap">
      <table data-testid="outages-table" className="restarts outages">
        <thead>
          <tr>
            <th>Start</th>
            <th>End</th>
            {showBackend ? <th>Backend</th> : null}
            <th>State</th>
            <th>Duration</th>
            <th>Cause</th>
          </tr>
        </thead>
        <tbody>
          {outages.map((o) => (
            <tr key={`${o.backendId}-${o.start}`} data-testid="outage-row" data-backend={o.backendId} data-state={o.state}>
              <td className="mono when" data-label="Start">
                <Time at={o.start} />
              </td>
              <td className="mono when" data-label="End">
                {o.end === null ? <span className="badge tone-bad">ongoing</span> : <Time at={o.end} />}
              </td>
              {showBackend ? (
                <td data-label="Backend">
                  <Link href={`/backends/${encodeURIComponent(o.backendId)}?from=${o.start - 5 * 60_000}&to=${(o.end ?? now) + 5 * 60_000}`}>{o.backendId}</Link>
                </td>
              ) : null}
              <td data-label="State">
                <span className={`badge tone-${tone(o.state)}`}>{o.state}</span>
              </td>
              <td data-label="Duration" className="when">
                {formatDuration(o.end === null ? (now - o.start) / 1000 : o.durationSeconds)}
              </td>
              <td data-label="Cause" className="why small">
                {o.cause}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
