/**
 * How much of a backend's past the watcher keeps in memory (and reloads from SQLite at start).
 * The classifier computes "two waits" and "probe failed twice" from these readings, so the window
 * must cover stuckAfterSeconds several times over and the last idle probe; the count cap bounds
 * memory for fast polls.
 */
import { flatRunStart } from "../check/classify";
import type { Reading, Thresholds } from "../check/types";

export const MAX_HISTORY_READINGS = 200;

export function historyWindowMs(t: Pick<Thresholds, "stuckAfterSeconds" | "idleProbeSeconds">): number {
  return Math.max(3 * t.stuckAfterSeconds, 2 * t.idleProbeSeconds) * 1000;
}

/**
 * The readings still inside the window ending at `now`, at most MAX_HISTORY_READINGS (the newest),
 * plus, during a hang, the read the hang is measured from (classify's flatRunStart): without it
 * the evidence "0 new steps in N s" would stop growing at the window's length while the hang goes on.
 */
export function trimHistory(readings: Reading[], now: number, t: Pick<Thresholds, "stuckAfterSeconds" | "idleProbeSeconds">): Reading[] {
  const since = now - historyWindowMs(t);
  let start = readings.findIndex((r) => r.at >= since);
  if (start < 0) start = readings.length;
  start = Math.max(start, readings.length - MAX_HISTORY_READINGS);
  if (start === 0) return readings;
  const kept = readings.slice(start);
  const anchor = flatRunStart(readings);
  return anchor && anchor.at < (kept[0]?.at ?? Infinity) ? [anchor, ...kept] : kept;
}
