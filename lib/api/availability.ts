/**
 * GET /api/availability: per backend and period (UTC day, ISO week, month), where the time went
 * (each state, maintenance apart), restarts by stepwatch and by others, and the mean time to
 * recover; measured from the recorded transitions, i.e. from progress, never from probe
 * successes (a busy server fails probes, a hung one can pass them). Reads SQLite only.
 */
import type { Db } from "../../db/types";
import { transitionsWithPrior } from "../../db/queries/readings";
import { listRestartEvents } from "../../db/queries/restarts";
import { processStartCounts } from "../../db/queries/processes";
import { maintenanceBetween } from "../../db/queries/oncall";
import { DomainError } from "../core/errors";
import { STATE_INFO, type BackendState } from "../core/states";
import type { AvailabilityPeriod } from "../core/outages";
import { deriveOutages, periodsBetween, timeInStates } from "../outages";
import { configWindowsBetween } from "../oncall/book";
import { backendOrThrow, type MaintenanceWindowConfig } from "../config";
import { getRuntime } from "../runtime";
import { transitionDTO } from "./snapshot";
import { outageOptions } from "./outages";
import type { AvailabilityResponse, AvailabilityRow } from "./types";

/** The longest range one answer covers: a year of days is 366 rows per backend. */
export const MAX_AVAILABILITY_DAYS = 366;

export function availabilityOf(
  db: Db,
  backendIds: string[],
  q: { from: number; to: number; period: AvailabilityPeriod },
  opts: { now: number; unknownAfterSeconds: number; graceSeconds?: number; maintenanceWindows?: MaintenanceWindowConfig[] },
): AvailabilityResponse {
  // Nothing is known of the future: a period that is still going on ends now.
  const to = Math.min(q.to, opts.now);
  const rows: AvailabilityRow[] = [];
  for (const id of backendIds) {
    const ts = q.from < to ? transitionsWithPrior(db, "backend", id, q.from, to).map(transitionDTO) : [];
    const maintenance = [...maintenanceBetween(db, id, q.from, to), ...configWindowsBetween(opts.maintenanceWindows ?? [], id, q.from, to)];
    const outages = deriveOutages(id, ts, q.from, to, { ...opts, maintenance });
    const restarts = listRestartEvents(db, { backendId: id, from: q.from, to, limit: 100_000 });
    for (const p of periodsBetween(q.from, to, q.period)) {
      const { states, maintenanceMs } = timeInStates(ts, p.start, p.end, maintenance);
      const healthy = (Object.keys(states) as BackendState[]).filter((s) => STATE_INFO[s].health === "yes").reduce((sum, s) => sum + states[s], 0);
      const outside = p.end - p.start - maintenanceMs;
      const recovered = outages.filter((o) => o.end !== null && o.end >= p.start && o.end < p.end);
      rows.push({
        backendId: id,
        start: p.start,
        end: p.end,
        seconds: (p.end - p.start) / 1000,
        states: Object.fromEntries(Object.entries(states).map(([s, ms]) => [s, ms / 1000])) as Record<BackendState, number>,
        maintenanceSeconds: maintenanceMs / 1000,
        availablePercent: outside > 0 ? (100 * healthy) / outside : null,
        restartsByStepwatch: restarts.filter((r) => r.requestedAt >= p.start && r.requestedAt < p.end).length,
        restartsByOthers: processStartCounts(db, id, p.start, p.end).byOthers,
        recoveries: recovered.length,
        meanTimeToRecoverSeconds: recovered.length > 0 ? recovered.reduce((sum, o) => sum + o.durationSeconds, 0) / recovered.length : null,
      });
    }
  }
  return { from: q.from, to, period: q.period, rows };
}

export async function getAvailability(q: { backendId?: string; from: number; to: number; period: AvailabilityPeriod }, now: number = Date.now()): Promise<AvailabilityResponse> {
  const rt = await getRuntime();
  if (q.backendId !== undefined) backendOrThrow(rt.config.backends, q.backendId);
  const ids = q.backendId !== undefined ? [q.backendId] : rt.config.backends.map((b) => b.id);
  try {
    // As the outages are told apart: the same episodes, the same recoveries.
    return availabilityOf(rt.db.db, ids, q, outageOptions(rt.config, now));
  } catch (e) {
    throw new DomainError("unavailable", `cannot read the availability from the database: ${(e as Error).message}`);
  }
}
