/**
 * The read verbs of the JSON API: the fleet from the watcher's memory (no backend is touched),
 * a backend's history and the restart log from SQLite. Route handlers only parse and call these.
 */
import { backendOrThrow } from "../config";
import { createHash } from "node:crypto";
import type { FleetRecentResponse, FleetResponse, FleetSeed, HistoryResponse, RestartEventDTO, RestartPlanDTO } from "./types";
import { toColumnRows } from "../core/columns";
import { listRestartEvents } from "../../db/queries/restarts";
import { describeAction } from "../restart/execute";
import { DomainError } from "../core/errors";
import { getRuntime, type Runtime } from "../runtime";
import { fleetRecent, fleetSnapshot, historyOf, restartsOf } from "./snapshot";

export async function getFleet(now: number = Date.now()): Promise<FleetResponse> {
  const rt = await getRuntime();
  return fleetSnapshot(rt.watcher, {
    demo: rt.demo,
    now,
    restartCooldownSeconds: rt.config.restartCooldownSeconds,
    configError: rt.configStatus.error,
    pollIntervalSeconds: rt.config.pollIntervalSeconds,
  });
}

/** The fleet page's server-rendered first answer: getFleet with its backends as columns (FleetSeed). */
export function fleetSeed(fleet: FleetResponse): FleetSeed {
  return { ...fleet, backends: toColumnRows(fleet.backends) };
}

/** What the sparklines show: each backend's recent points (lib/watcher/recent.ts keeps RECENT_POINTS of them). */
export async function getFleetRecent(now: number = Date.now()): Promise<FleetRecentResponse> {
  const rt = await getRuntime();
  return fleetRecent(rt.watcher, now);
}

/**
 * A JSON answer encoded once for every client that asks within FLEET_JSON_MAX_AGE_MS: the UTF-8
 * bytes and an ETag naming exactly these bytes, so a dashboard that already has them is answered
 * 304 with no body (lib/api/respond respondEncoded).
 */
export interface EncodedJson {
  body: Uint8Array;
  etag: string;
}

export function encodeJson(value: unknown): EncodedJson {
  // A plain Uint8Array, not a Buffer: what Next's Response handling writes as is.
  const body = new TextEncoder().encode(JSON.stringify(value));
  return { body, etag: `"${createHash("sha1").update(body).digest("base64url")}"` };
}

/**
 * Many dashboards polling at once would otherwise serialize and encode the same snapshot per
 * request; a quarter of a second is far below the watcher's own interval.
 */
export const FLEET_JSON_MAX_AGE_MS = 250;

/**
 * `keyOf` names what the answer was built from besides the clock: when it changes (a config
 * reload replaces the runtime's configStatus, good file or bad), the cached bytes are not served
 * again, so the first answer after a reload is the new fleet with a new ETag. `revision` (the
 * watcher's: it moves when an acknowledgement, a maintenance or a restart request changed the
 * fleet between polls) likewise, so the dashboard's refetch right after such a POST gets the new
 * snapshot and a new ETag, never the bytes from just before it.
 */
export function cachedEncoding(
  build: (now: number) => Promise<unknown>,
  keyOf: () => Promise<unknown>,
  revision: () => Promise<number> = async () => 0,
  shareAs?: symbol,
): (now?: number) => Promise<EncodedJson> {
  type Entry = { at: number; key: unknown; revision: number; encoded: Promise<EncodedJson> };
  // With `shareAs`, the one cache of the process lives on globalThis: the route handler and the
  // fast lane (lib/api/fast-lane.ts) are separate module instances, and must hand out the same
  // bytes under the same ETag at the same moment.
  const slot: { cache: Entry | null } = shareAs ? (((globalThis as { [k: symbol]: { cache: Entry | null } })[shareAs] ??= { cache: null })) : { cache: null };
  return async (now = Date.now()) => {
    const key = await keyOf();
    const rev = await revision();
    const cache = slot.cache;
    if (cache && cache.key === key && cache.revision === rev && now - cache.at >= 0 && now - cache.at < FLEET_JSON_MAX_AGE_MS) return cache.encoded;
    const encoded = build(now).then(encodeJson);
    const entry = { at: now, key, revision: rev, encoded };
    slot.cache = entry;
    encoded.catch(() => {
      if (slot.cache === entry) slot.cache = null; // a failure is not cached
    });
    return encoded;
  };
}

/** Replaced by every reload attempt (lib/reload.ts), so it keys the cached fleet answers. */
const configGeneration = async (): Promise<unknown> => (await getRuntime()).configStatus;
const watcherRevision = async () => (await getRuntime()).watcher.revision();

/** GET /api/fleet, encoded (see cachedEncoding); one cache per process, shared with the fast lane. */
export const getFleetJson = cachedEncoding(getFleet, configGeneration, watcherRevision, Symbol.for("stepwatch.fleetJson"));
/** GET /api/fleet/recent, encoded. */
export const getFleetRecentJson = cachedEncoding(getFleetRecent, configGeneration);

export function fromStorage<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw new DomainError("unavailable", `cannot read ${what} from the database: ${(e as Error).message}`);
  }
}

export async function getHistory(id: string, from: number, to: number, opts: { exact?: boolean } = {}): Promise<HistoryResponse> {
  const rt = await getRuntime();
  backendOrThrow(rt.config.backends, id);
  return fromStorage("the history", () => historyOf(rt.db.db, id, from, to, opts));
}

/**
 * What a restart would do, for the dialog: the action as described in the audit log (never its
 * env, headers or URL credentials), the cooldown it starts, and the last recovered restart's
 * downtime as the outage to expect.
 */
export async function getRestartPlan(id: string): Promise<RestartPlanDTO> {
  const rt = await getRuntime();
  backendOrThrow(rt.config.backends, id);
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
  if (filter.backendId !== undefined) backendOrThrow(rt.config.backends, filter.backendId);
  return fromStorage("the restart log", () => restartsOf(rt.db.db, { ...filter, limit: Math.min(filter.limit ?? RESTARTS_DEFAULT_LIMIT, RESTARTS_MAX_LIMIT) }));
}
