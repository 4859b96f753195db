/**
 * How much of a backend's past the watcher keeps in memory (and reloads from SQLite at start).
 * The classifier computes "two waits" and "probe failed twice" from these readings, so the window
 * must cover stuckAfterSeconds several times over and the last idle probe; the count cap bounds
 * memory for fast polls.
 */
import type { Reading, Thresholds } from "../check/types";

export const MAX_HISTORY_READINGS = 200;

export function historyWindowMs(t: Pick<Thresholds, "stuckAfterSeconds" | "idleProbeSeconds">): number {
  return Math.max(3 * t.stuckAfterSeconds, 2 * t.idleProbeSeconds) * 1000;
}

/** The readings still inside the window ending at `now`, at most MAX_HISTORY_READINGS (the newest). */
export function trimHistory(readings: Reading[], now: number, t: Pick<Thresholds, "stuckAfterSeconds" | "idleProbeSeconds">): Reading[] {
  const since = now - historyWindowMs(t);
  let start = readings.findIndex((r) => r.at >= since);
  if (start < 0) start = readings.length;
  start = Math.max(start, readings.length - MAX_HISTORY_READINGS);
  return start === 0 ? readings : readings.slice(start);
}
