/**
 * The read verbs of the JSON API: the fleet from the watcher's memory (no backend is touched),
 * a backend's history and the restart log from SQLite. Route handlers only parse and call these.
 */
import type { FleetResponse, HistoryResponse, RestartEventDTO, RestartPlanDTO } from "./types";
import { listRestartEvents } from "../../db/queries";
import { describeAction } from "../restart/execute";
import { DomainError } from "../errors";
import { getRuntime, type Runtime } from "../runtime";
import { fleetSnapshot, historyOf, restartsOf } from "./snapshot";

export async function getFleet(now: number = Date.now()): Promise<FleetResponse> {
  const rt = await getRuntime();
  return fleetSnapshot(rt.watcher, {
    demo: rt.demo,
    now,
    restartCooldownSeconds: rt.config.restartCooldownSeconds,
    pollIntervalSeconds: rt.config.pollIntervalSeconds,
  });
}

/**
 * The fleet as encoded JSON, built at most every FLEET_JSON_MAX_AGE_MS. Many dashboards polling at
 * once would otherwise serialize and encode the same snapshot (about 64 KB at 100 backends) per
 * request; a quarter of a second is far below the watcher's own interval.
 */
export const FLEET_JSON_MAX_AGE_MS = 250;
let fleetJson: { at: number; body: Promise<Uint8Array> } | null = null;

export function getFleetJson(now: number = Date.now()): Promise<Uint8Array> {
  if (fleetJson && now - fleetJson.at >= 0 && now - fleetJson.at < FLEET_JSON_MAX_AGE_MS) return fleetJson.body;
  const body = getFleet(now).then((f) => new TextEncoder().encode(JSON.stringify(f)));
  fleetJson = { at: now, body };
  body.catch(() => {
    if (fleetJson?.body === body) fleetJson = null; // a failure is not cached
  });
  return body;
}

function knownBackend(rt: Runtime, id: string): void {
  if (!rt.config.backends.some((b) => b.id === id)) throw new DomainError("not-found", `no backend "${id}" in the config`);
}

function fromStorage<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw new DomainError("unavailable", `cannot read ${what} from the database: ${(e as Error).message}`);
  }
}

export async function getHistory(id: string, from: number, to: number): Promise<HistoryResponse> {
  const rt = await getRuntime();
  knownBackend(rt, id);
  return fromStorage("the history", () => historyOf(rt.db.db, id, from, to));
}

/**
 * What a restart would do, for the dialog: the action as described in the audit log (never its
 * env, headers or URL credentials), the cooldown it starts, and the last recovered restart's
 * downtime as the outage to expect.
 */
export async function getRestartPlan(id: string): Promise<RestartPlanDTO> {
  const rt = await getRuntime();
  knownBackend(rt, id);
  const backend = rt.config.backends.find((b) => b.id === id)!;
  const last = fromStorage("the restart log", () => listRestartEvents(rt.db.db, { backendId: id, limit: 50 }));
  const recovered = last.find((r) => r.outcome === "recovered" && r.downtimeSeconds !== null);
  return {
    backendId: id,
    action: backend.restart ? describeAction(backend.restart) : null,
    cooldownSeconds: rt.config.restartCooldownSeconds,
    expectedOutageSeconds: recovered?.downtimeSeconds ?? null,
    lastRestartAt: last[0]?.requestedAt ?? null,
  };
}

/** Restart log pages: GET /api/restarts?limit= (default 100, at most 1000) &before=<id of the last event seen>. */
export const RESTARTS_DEFAULT_LIMIT = 100;
export const RESTARTS_MAX_LIMIT = 1000;

export async function listRestarts(
  filter: { backendId?: string; limit?: number; beforeId?: number } = {},
): Promise<{ events: RestartEventDTO[]; nextBefore: number | null }> {
  const rt = await getRuntime();
  if (filter.backendId !== undefined) knownBackend(rt, filter.backendId);
  return fromStorage("the restart log", () => restartsOf(rt.db.db, { ...filter, limit: Math.min(filter.limit ?? RESTARTS_DEFAULT_LIMIT, RESTARTS_MAX_LIMIT) }));
}
