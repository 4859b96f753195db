/**
 * The on-call lines a person reads on a card and the backend page, as pure functions (tested in
 * tests/unit/ui-oncall.test.ts): "maintenance until 14:30 (alice: driver update)".
 */
import type { ChannelStatusDTO, FleetBackend } from "../api/types";
import { formatClock, zoneName, type TimeZone } from "../core/format";

/** "14:30 UTC": the dashboard's chosen zone, named (components/TimeZone.tsx). */
function clock(at: number, timeZone: TimeZone): string {
  return `${formatClock(at, timeZone)} ${zoneName(at, timeZone)}`;
}

export function maintenanceLine(m: NonNullable<FleetBackend["maintenance"]>, timeZone: TimeZone = "UTC"): string {
  const who = m.source === "config" ? "config" : (m.by ?? "someone");
  const why = m.note ? `${who}: ${m.note}` : who;
  return `maintenance until ${clock(m.until, timeZone)} (${why})`;
}

export function acknowledgedLine(a: NonNullable<FleetBackend["acknowledged"]>, timeZone: TimeZone = "UTC"): string {
  return `acknowledged by ${a.by} at ${clock(a.at, timeZone)}${a.note ? `: ${a.note}` : ""}`;
}

export function unattendedLine(id: string, at: number, timeZone: TimeZone = "UTC"): string {
  return `${id} will be restarted at ${clock(at, timeZone)} unless someone acknowledges`;
}

/** "crash loop: 4 new processes since 14:02 UTC not restarted by stepwatch (3 in 5 min); over at 14:12 UTC if none comes". */
export function crashLoopLine(c: NonNullable<FleetBackend["crashLoop"]>, timeZone: TimeZone = "UTC"): string {
  return `crash loop: ${c.restarts} new processes since ${clock(c.since, timeZone)} not restarted by stepwatch (${c.threshold} in ${c.windowMinutes} min); over at ${clock(c.clearsAt, timeZone)} if no new one comes`;
}

export function failingChannelLine(c: ChannelStatusDTO): string {
  return `notification channel ${c.id} (${c.type}) keeps failing: ${c.consecutiveFailures} attempts in a row${c.lastError ? `, last: ${c.lastError}` : ""}. Messages are kept and retried.`;
}

/** Acknowledge makes sense for a backend that is not healthy and not acknowledged yet. */
export function canAcknowledge(b: Pick<FleetBackend, "healthy" | "acknowledged">): boolean {
  return !b.healthy && b.acknowledged === null;
}
