/**
 * GET /api/outages: every outage of the fleet (or one backend) in a window, and each backend's
 * uptime over the last 24 h / 7 d / 30 d, derived from the recorded transitions (lib/outages.ts)
 * and named with the restart log (who restarted). Reads SQLite only; no backend is touched.
 */
import type { Db } from "../../db/types";
import { listRestartEvents } from "../../db/queries/restarts";
import { firstTransitionAt, transitionsWithPrior } from "../../db/queries/readings";
import { DomainError } from "../core/errors";
import { deriveOutages, uptimePercent, withRestartCauses } from "../outages";
import { type OutagesResponse, type UptimeDTO } from "./types";
import { UPTIME_WINDOWS, type Outage } from "../core/outages";
import { getRuntime } from "../runtime";
import { transitionDTO } from "./snapshot";
import { backendOrThrow, type Config, type MaintenanceWindowConfig } from "../config";
import { maintenanceBetween } from "../../db/queries/oncall";
import { configWindowsBetween } from "../oncall/book";

const LONGEST_UPTIME_MS = Math.max(...UPTIME_WINDOWS.map((w) => w.ms));

export function outagesOf(
  db: Db,
  backendIds: string[],
  from: number,
  to: number,
  opts: { now: number; unknownAfterSeconds: number; graceSeconds?: number; maintenanceWindows?: MaintenanceWindowConfig[] },
): OutagesResponse {
  // One read per backend covers both the asked window and the longest uptime window.
  const start = Math.min(from, opts.now - LONGEST_UPTIME_MS);
  const end = Math.max(to, opts.now);
  const outages: Outage[] = [];
  const uptime: UptimeDTO[] = [];
  for (const id of backendIds) {
    const ts = transitionsWithPrior(db, "backend", id, start, end).map(transitionDTO);
    const restarts = listRestartEvents(db, { backendId: id, from: start - 60_000, to: end, limit: 10_000 });
    // Planned time: the API's periods and the config's windows, as the on-call book silences them.
    const maintenance = [...maintenanceBetween(db, id, start, end), ...configWindowsBetween(opts.maintenanceWindows ?? [], id, start, end)];
    const all = withRestartCauses(deriveOutages(id, ts, start, end, { ...opts, maintenance }), restarts);
    outages.push(...all.filter((o) => o.start <= to && (o.end === null || o.end >= from)));
    const firstSeen = firstTransitionAt(db, "backend", id);
    const u = {} as UptimeDTO["uptime"];
    for (const w of UPTIME_WINDOWS) u[w.key] = uptimePercent(all, firstSeen, opts.now - w.ms, opts.now, opts.now, maintenance);
    uptime.push({ backendId: id, uptime: u });
  }
  outages.sort((a, b) => b.start - a.start || a.backendId.localeCompare(b.backendId));
  return { from, to, outages, uptime };
}

/** How the config tells outages apart: the outages and the availability report count the same episodes. */
export function outageOptions(c: Pick<Config, "stuckAfterSeconds" | "startupGraceSeconds" | "maintenance">, now: number) {
  return {
    now,
    // "unknown for long": as long as a hang takes to be called stuck.
    unknownAfterSeconds: c.stuckAfterSeconds,
    // A server down past the grace the check gives a loading server was not restarted by its supervisor.
    graceSeconds: c.startupGraceSeconds,
    maintenanceWindows: c.maintenance,
  };
}

export async function getOutages(q: { backendId?: string; from: number; to: number }, now: number = Date.now()): Promise<OutagesResponse> {
  const rt = await getRuntime();
  const ids = rt.config.backends.map((b) => b.id);
  if (q.backendId !== undefined) backendOrThrow(rt.config.backends, q.backendId);
  try {
    return outagesOf(rt.db.db, q.backendId ? [q.backendId] : ids, q.from, q.to, outageOptions(rt.config, now));
  } catch (e) {
    throw new DomainError("unavailable", `cannot read the outages from the database: ${(e as Error).message}`);
  }
}
