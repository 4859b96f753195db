/**
 * The on-call lines a person reads on a card and the backend page, as pure functions (tested in
 * tests/unit/ui-oncall.test.ts): "maintenance until 14:30 (alice: driver update)".
 */
import type { ChannelStatusDTO, FleetBackend } from "../api/types";
import { formatClock } from "./format";

export function maintenanceLine(m: NonNullable<FleetBackend["maintenance"]>, tzOffsetMinutes?: number): string {
  const who = m.source === "config" ? "config" : (m.by ?? "someone");
  const why = m.note ? `${who}: ${m.note}` : who;
  return `maintenance until ${formatClock(m.until, tzOffsetMinutes)} (${why})`;
}

export function acknowledgedLine(a: NonNullable<FleetBackend["acknowledged"]>, tzOffsetMinutes?: number): string {
  return `acknowledged by ${a.by} at ${formatClock(a.at, tzOffsetMinutes)}${a.note ? `: ${a.note}` : ""}`;
}

export function unattendedLine(id: string, at: number, tzOffsetMinutes?: number): string {
  return `${id} will be restarted at ${formatClock(at, tzOffsetMinutes)} unless someone acknowledges`;
}

export function failingChannelLine(c: ChannelStatusDTO): string {
  return `notification channel ${c.id} (${c.type}) keeps failing: ${c.consecutiveFailures} attempts in a row${c.lastError ? `, last: ${c.lastError}` : ""}. Messages are kept and retried.`;
}

/** Acknowledge makes sense for a backend that is not healthy and not acknowledged yet. */
export function canAcknowledge(b: Pick<FleetBackend, "healthy" | "acknowledged">): boolean {
  return !b.healthy && b.acknowledged === null;
}
