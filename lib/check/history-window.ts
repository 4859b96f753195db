/**
 * How much of a backend's past the watcher keeps in memory (and reloads from SQLite at start), and a
 * replay (./replay.ts) feeds the classifier the same way: here, in the judge's layer, so both can.
 * The classifier computes "two waits", "probe failed twice" and "refused for startupGraceSeconds"
 * from these readings, so the window must cover stuckAfterSeconds several times over, the last idle
 * probe and the startup grace; the count cap bounds memory for fast polls.
 */
import { flatRunStart } from "./classify";
import type { Reading, Thresholds } from "../core/types";

export const MAX_HISTORY_READINGS = 200;

type WindowThresholds = Pick<Thresholds, "stuckAfterSeconds" | "idleProbeSeconds" | "startupGraceSeconds">;

export function historyWindowMs(t: WindowThresholds): number {
  return Math.max(3 * t.stuckAfterSeconds, 2 * t.idleProbeSeconds, (t.startupGraceSeconds ?? 0) + t.stuckAfterSeconds) * 1000;
}

/**
 * The readings still inside the window ending at `now`, at most MAX_HISTORY_READINGS (the newest),
 * plus two readings kept past the window or the cap: during a hang, the read the hang is measured
 * from (classify's flatRunStart), without which the evidence "0 new steps in N s" would stop
 * growing at the window's length while the hang goes on; and the first of a run of unanswered
 * reads at the end, so "down for 12 min" is still known when polls are fast.
 */
export function trimHistory(readings: Reading[], now: number, t: WindowThresholds): Reading[] {
  const plan = trimPlan(readings, now, t);
  if (plan.from === 0) return readings;
  const kept = readings.slice(plan.from);
  return plan.keep === null ? kept : [readings[plan.keep], ...kept];
}

/**
 * trimHistory as indices into `readings`: the window goes on from `from` (0: nothing is dropped),
 * with `keep` (an index before `from`, or null) in front. A replay (./replay.ts) keeps its window as
 * indices into the record with this, so it judges with exactly the window the watcher would have.
 */
export function trimPlan(readings: Reading[], now: number, t: WindowThresholds): { from: number; keep: number | null } {
  const since = now - historyWindowMs(t);
  let start = 0;
  while (start < readings.length && !(readings[start].at >= since)) start++;
  const capped = Math.max(start, readings.length - MAX_HISTORY_READINGS);
  if (capped === 0) return { from: 0, keep: null };
  const anchor = flatRunStart(readings);
  if (anchor && anchor.at < (readings[capped]?.at ?? Infinity)) return { from: capped, keep: readings.indexOf(anchor) };
  let streak = readings.length;
  while (streak > 0 && !readings[streak - 1].metrics && !readings[streak - 1].noMetrics) streak--;
  if (streak < capped && streak >= start && streak < readings.length) return { from: capped, keep: streak };
  return { from: capped, keep: null };
}
