/**
 * The JSON views of what the watcher knows: the fleet from memory (no backend is touched, no DB
 * read), a backend's history and the restart log from SQLite. Field by field, so nothing secret
 * (API keys, restart commands' config, webhook headers) can ride along with a config object; URLs
 * through publicUrl, so a user:password or ?token= in them is not shown either.
 */
import type { Db } from "../../db/types";
import { historyPoints } from "../../db/queries/history";
import { listRestartEvents } from "../../db/queries/restarts";
import { transitionsInRange } from "../../db/queries/readings";
import { roundColumns } from "../core/history";
import type { RestartEventRow, TransitionRow } from "../../db/schema";
import { evidenceIdsOf } from "../../db/queries/evidence";
import type { ConfigErrorDTO, CrashLoopDTO, FleetBackend, FleetProxy, FleetRecentResponse, FleetResponse, HistoryResponse, RestartEventDTO, SparkPoint, TransitionDTO } from "./types";
import { STATE_INFO, proxyHealth } from "../core/states";
import { figuresOf, reason } from "../core/types";
import { lastEngine } from "../check/read";
import { publicUrl } from "../net/public-url";
import type { OnCallBook } from "../oncall/book";
import { onCallView } from "./oncall-view";
import { cooldownUntil as cooldownEnd } from "../restart/cooldown";
import type { BackendMonitor, ProxyMonitor } from "../watcher/monitors";
import type { Watcher } from "../watcher";

/** Rates to three significant digits: what the dashboard shows, and a third of the bytes. */
const shown = (x: number | null) => (x === null || !Number.isFinite(x) || x === 0 ? x : Number(x.toPrecision(3)));

export function backendView(m: BackendMonitor, restartCooldownSeconds: number, now: number, book: OnCallBook): FleetBackend {
  const figures = figuresOf(m.last?.reading ?? null, m.last?.verdict ?? null);
  const reading = m.last?.reading ?? null;
  const verdict = m.last?.verdict ?? null;
  const metrics = reading?.metrics ?? null;
  const state = verdict?.state ?? "unknown";
  const last = m.lastRestart;
  const cooldownUntil = last ? cooldownEnd(last.requestedAt, restartCooldownSeconds) : null;
  const models = metrics?.models.length ? metrics.models : (reading?.models?.ids ?? []);
  const configured = m.config.engine && m.config.engine !== "auto" ? m.config.engine : null;
  return {
    id: m.config.id,
    url: publicUrl(m.config.url),
    model: m.config.model ?? models[0] ?? null,
    engine: configured ?? lastEngine(m.history) ?? null,
    models: models.slice(0, 20),
    labels: m.config.labels,
    configProblem: verdict?.configProblem ?? null,
    state,
    healthy: verdict?.healthy ?? false,
    since: verdict ? m.since : null,
    ...figures,
    stepsPerSecond: shown(figures.stepsPerSecond),
    generationTokensPerSecond: shown(figures.generationTokensPerSecond),
    promptTokensPerSecond: shown(figures.promptTokensPerSecond),
    kvCacheUsage: shown(figures.kvCacheUsage),
    processStartTime: metrics?.processStartTime ?? null,
    lastReadAt: reading?.at ?? null,
    reasons: verdict?.reasons ?? [reason("not-read-yet", `${STATE_INFO.unknown.description} Not read yet since stepwatch started.`)],
    restartConfigured: m.config.restart !== undefined,
    pendingRestartId: last && last.outcome === null ? last.id : null,
    cooldownUntil: cooldownUntil !== null && cooldownUntil > now ? cooldownUntil : null,
    ...onCallView(m, book, now),
    crashLoop: crashLoopView(m, now),
  };
}

function crashLoopView(m: BackendMonitor, now: number): CrashLoopDTO | null {
  const loop = m.crashLoop(now);
  if (!loop) return null;
  const rule = m.crashLoopRule;
  return { since: loop.since, restarts: loop.restarts, lastAt: loop.lastAt, clearsAt: loop.clearsAt, threshold: rule.restarts, windowMinutes: rule.windowMinutes };
}

export function fleetRecent(w: Watcher, now: number): FleetRecentResponse {
  const backends: Record<string, SparkPoint[]> = {};
  for (const m of w.backends.values()) backends[m.config.id] = m.recent.map(([at, running, gen]) => [at, running, shown(gen)]);
  return { generatedAt: now, backends };
}

/**
 * "1 of 2 healthy": the backends a proxy fronts (`proxies[].backends`), from the watcher's memory.
 * A `sleeping` backend counts as healthy (put to sleep on purpose, never a fault, and stepwatch
 * never wakes it) and is also counted apart, so the page can say it is not serving right now.
 */
export function frontedHealth(
  m: ProxyMonitor,
  backends: ReadonlyMap<string, BackendMonitor>,
): Pick<FleetProxy, "healthyBackends" | "totalBackends" | "sleepingBackends" | "health"> {
  const ids = m.config.backends;
  if (!ids || ids.length === 0) return { healthyBackends: null, totalBackends: null, sleepingBackends: null, health: null };
  const verdicts = ids.map((id) => backends.get(id)?.last?.verdict ?? null);
  const healthy = verdicts.filter((v) => v?.healthy === true).length;
  const sleeping = verdicts.filter((v) => v?.healthy === true && v.state === "sleeping").length;
  return { healthyBackends: healthy, totalBackends: ids.length, sleepingBackends: sleeping, health: proxyHealth(healthy, ids.length) };
}


export function proxyView(m: ProxyMonitor, backends: ReadonlyMap<string, BackendMonitor> = new Map()): FleetProxy {
  return {
    id: m.config.id,
    url: publicUrl(m.config.url),
    state: m.state,
    models: m.last?.models ?? [],
    lastReadAt: m.last?.at ?? null,
    since: m.since,
    error: m.last && m.last.outcome !== "ok" ? (m.last.error ?? m.last.outcome) : null,
    ...frontedHealth(m, backends),
  };
}

export function fleetSnapshot(
  w: Watcher,
  opts: { demo: boolean; now: number; restartCooldownSeconds: number; pollIntervalSeconds: number; configError?: ConfigErrorDTO | null },
): FleetResponse {
  return {
    generatedAt: opts.now,
    demo: opts.demo,
    pollIntervalSeconds: opts.pollIntervalSeconds,
    storageError: w.store.storageError,
    notificationChannels: w.outbox.channelStatus(),
    configError: opts.configError ? configErrorDTO(opts.configError) : null,
    backends: [...w.backends.values()].map((m) => backendView(m, opts.restartCooldownSeconds, opts.now, w.book)),
    proxies: [...w.proxies.values()].map((p) => proxyView(p, w.backends)),
  };
}

export function configErrorDTO(e: ConfigErrorDTO): ConfigErrorDTO {
  return { at: e.at, trigger: e.trigger, problems: [...e.problems] };
}

export function transitionDTO(t: TransitionRow): TransitionDTO {
  return { at: t.at, from: t.fromState, to: t.toState, reasons: t.reasons };
}

/** `evidenceId`: the bundle linked to the event (db/queries/evidence.ts evidenceIdsOf), null when none. */
export function restartDTO(r: RestartEventRow, evidenceId: number | null = null): RestartEventDTO {
  return {
    id: r.id,
    backendId: r.backendId,
    requestedAt: r.requestedAt,
    requestedBy: r.requestedBy,
    note: r.note,
    stateAtRequest: r.stateAtRequest,
    healthyAtRequest: r.healthyAtRequest,
    runningAtRequest: r.runningAtRequest,
    waitingAtRequest: r.waitingAtRequest,
    evidence: r.evidence,
    overrideCooldown: r.overrideCooldown,
    confirmedHealthy: r.confirmedHealthy,
    action: r.action,
    startedAt: r.startedAt,
    startedBy: r.startedBy,
    startedEpoch: r.startedEpoch,
    commandExitCode: r.commandExitCode,
    commandOutput: r.commandOutput,
    commandError: r.commandError,
    commandFinishedAt: r.commandFinishedAt,
    recoveredAt: r.recoveredAt,
    downtimeSeconds: r.downtimeSeconds,
    outcome: r.outcome,
    resolvedAt: r.resolvedAt,
    resolution: r.resolution,
    evidenceId,
  };
}

/** The events as DTOs, each with its evidence bundle's id (one query for all). */
function restartDTOs(db: Db, rows: RestartEventRow[]): RestartEventDTO[] {
  const links = evidenceIdsOf(db, rows.map((r) => r.id));
  return rows.map((r) => restartDTO(r, links.get(r.id) ?? null));
}

/** A backend's history in its wire form (columns, lib/core/history.ts); `exact`: unrounded (the CSV). */
export function historyOf(db: Db, backendId: string, from: number, to: number, opts: { exact?: boolean } = {}): HistoryResponse {
  const h = historyPoints(db, backendId, from, to);
  return {
    backendId,
    from,
    to,
    resolution: h.resolution,
    bucketSeconds: h.bucketMs === null ? null : h.bucketMs / 1000,
    count: h.columns.at.length,
    columns: opts.exact ? h.columns : roundColumns(h.columns),
    transitions: transitionsInRange(db, "backend", backendId, from, to).map(transitionDTO),
    restarts: restartDTOs(db, listRestartEvents(db, { backendId, from, to, limit: 500 })),
  };
}

/**
 * One page of the restart log, newest first: at most `limit` events older than event `beforeId`,
 * and the cursor of the next page (null on the last one).
 */
export function restartsOf(db: Db, filter: { backendId?: string; limit: number; beforeId?: number }): { events: RestartEventDTO[]; nextBefore: number | null } {
  const rows = listRestartEvents(db, { ...filter, limit: filter.limit + 1 });
  const page = rows.slice(0, filter.limit);
  return { events: restartDTOs(db, page), nextBefore: rows.length > filter.limit ? page[page.length - 1].id : null };
}
