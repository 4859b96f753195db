/**
 * Restart events: created by the restart verb (lib/restart/request.ts) with one conditional
 * insert, resolved later from what the watcher sees. One pending restart per backend is a database
 * fact (the partial unique index restart_events_one_pending).
 */
import { and, count, desc, eq, gte, isNotNull, isNull, lt, lte, sql } from "drizzle-orm";
import type { BackendState } from "../../lib/core/states";
import type { Db } from "../types";
import { perConnection } from "../per-connection";
import { restartEvents, type RestartEventRow, type RestartEvidence, type RestartOutcome } from "../schema";
import { statementsOf } from "./readings";
import { recordAudit, type AuditEntry } from "./auth";

export function listRestartEvents(
  db: Db,
  filter: { backendId?: string; from?: number; to?: number; limit?: number; beforeId?: number } = {},
): RestartEventRow[] {
  const { beforeId, backendId, from, to } = filter;
  const shape = [beforeId, backendId, from, to].map((v) => (v === undefined ? "-" : "x")).join("");
  const byShape = restartListStatements(db);
  let q = byShape.get(shape);
  if (!q) {
    const conds = [
      beforeId !== undefined ? lt(restartEvents.id, sql.placeholder("beforeId")) : undefined,
      backendId !== undefined ? eq(restartEvents.backendId, sql.placeholder("backendId")) : undefined,
      from !== undefined ? gte(restartEvents.requestedAt, sql.placeholder("from")) : undefined,
      to !== undefined ? lte(restartEvents.requestedAt, sql.placeholder("to")) : undefined,
    ].filter((c) => c !== undefined);
    q = db
      .select()
      .from(restartEvents)
      .where(conds.length ? and(...conds) : undefined)
      .orderBy(desc(restartEvents.requestedAt), desc(restartEvents.id))
      .limit(sql.placeholder("limit"))
      .prepare();
    byShape.set(shape, q);
  }
  return q.all({ beforeId, backendId, from, to, limit: filter.limit ?? 100 });
}

/** listRestartEvents' queries, prepared once per connection for each set of filters given (16 at most). */
const restartListStatements = perConnection(
  (_db: Db) => new Map<string, { all(values: { beforeId?: number; backendId?: string; from?: number; to?: number; limit: number }): RestartEventRow[] }>(),
);

/** The unresolved restart of a backend (at most one: a partial unique index guarantees it). */
export function pendingRestartOf(db: Db, backendId: string): RestartEventRow | undefined {
  return db
    .select()
    .from(restartEvents)
    .where(and(eq(restartEvents.backendId, backendId), isNull(restartEvents.outcome)))
    .get();
}

/** The newest restart event of a backend, resolved or not (the cooldown runs from it). */
export function lastRestartOf(db: Db, backendId: string): RestartEventRow | undefined {
  // Read by the watcher when the restart verb told it of a change: prepared once (see statementsOf).
  return statementsOf(db).lastRestart.get({ backendId });
}

/**
 * The newest restart event of every backend (as lastRestartOf, for all at once): what the watcher
 * reads once a second instead of one row before every poll.
 */
export function latestRestartsOf(db: Db): Map<string, RestartEventRow> {
  const byBackend = new Map<string, RestartEventRow>();
  for (const r of statementsOf(db).latestRestarts.all()) byBackend.set(r.backendId, r);
  return byBackend;
}

/** How many restarts of each backend ended each way (the Prometheus export seeds its counter once from this). */
export function restartOutcomeCounts(db: Db): Array<{ backendId: string; outcome: RestartOutcome; count: number }> {
  return db
    .select({ backendId: restartEvents.backendId, outcome: restartEvents.outcome, count: count() })
    .from(restartEvents)
    .where(isNotNull(restartEvents.outcome))
    .groupBy(restartEvents.backendId, restartEvents.outcome)
    .all()
    .map((r) => ({ backendId: r.backendId, outcome: r.outcome as RestartOutcome, count: r.count }));
}

/** A restart event by id. */
export function restartEventById(db: Db, id: number): RestartEventRow | undefined {
  return db.select().from(restartEvents).where(eq(restartEvents.id, id)).get();
}

/** What the restart verb records when an operator asks for a restart (the rest is filled in later). */
export interface NewRestartRequest {
  backendId: string;
  requestedAt: number;
  requestedBy: string;
  note: string | null;
  state: BackendState;
  healthy: boolean;
  running: number | null;
  waiting: number | null;
  processStartTime: number | null;
  evidence: RestartEvidence;
  overrideCooldown: boolean;
  confirmedHealthy: boolean;
  action: string;
}

/**
 * Why a backend cannot get a new restart now: its pending restart, or else its newest restart when
 * that one is still inside the cooldown. Without a cooldownStart (an override), only a pending one blocks.
 */
export type RestartBlock = { reason: "pending"; event: RestartEventRow } | { reason: "cooldown"; event: RestartEventRow };

export function restartBlockOf(db: Db, backendId: string, cooldownStart: number | null): RestartBlock | null {
  const pending = pendingRestartOf(db, backendId);
  if (pending) return { reason: "pending", event: pending };
  if (cooldownStart === null) return null;
  const last = lastRestartOf(db, backendId);
  return last && last.requestedAt > cooldownStart ? { reason: "cooldown", event: last } : null;
}

const INSERT_RESTART_UNLESS_BLOCKED = `
INSERT INTO restart_events (
  backend_id, requested_at, requested_by, note, state_at_request, healthy_at_request,
  running_at_request, waiting_at_request, process_start_time_at_request, evidence,
  override_cooldown, confirmed_healthy, action)
SELECT CAST(@backendId AS TEXT), CAST(@requestedAt AS INTEGER), CAST(@requestedBy AS TEXT), CAST(@note AS TEXT), CAST(@state AS TEXT), CAST(@healthy AS INTEGER),
  CAST(@running AS REAL), CAST(@waiting AS REAL), CAST(@processStartTime AS REAL), CAST(@evidence AS TEXT),
  CAST(@overrideCooldown AS INTEGER), CAST(@confirmedHealthy AS INTEGER), CAST(@action AS TEXT)
WHERE NOT EXISTS (
  SELECT 1 FROM restart_events
  WHERE backend_id = @backendId
    AND (outcome IS NULL OR (@enforceCooldown = 1 AND requested_at > @cooldownStart))
)
RETURNING id`;

/**
 * ONE transaction (BEGIN IMMEDIATE): insert the restart unless a pending restart, or one inside
 * the cooldown (when cooldownStart is given), exists; no check-then-act in JS. Returns the inserted
 * row, or what blocked it, read inside the same transaction. The partial unique index
 * restart_events_one_pending backs the NOT EXISTS up across processes: a concurrent insert from
 * another process throws SQLITE_CONSTRAINT_UNIQUE, for the caller to map.
 */
export function insertRestartUnlessBlocked(
  db: Db,
  r: NewRestartRequest,
  cooldownStart: number | null,
  /**
   * Both run inside the transaction once the row is in: `audit` gives the event's audit line (no
   * restart without its line), `onInserted` writes what else belongs with it (the restart-requested
   * notification).
   */
  hooks: { audit?: (row: RestartEventRow) => AuditEntry; onInserted?: (row: RestartEventRow) => void } = {},
): { inserted: RestartEventRow } | { blocked: RestartBlock } {
  const sqlite = db.$client;
  const params = {
    ...r,
    healthy: r.healthy ? 1 : 0,
    evidence: JSON.stringify(r.evidence),
    overrideCooldown: r.overrideCooldown ? 1 : 0,
    confirmedHealthy: r.confirmedHealthy ? 1 : 0,
    enforceCooldown: cooldownStart === null ? 0 : 1,
    cooldownStart: cooldownStart ?? 0,
  };
  const tx = sqlite.transaction(() => {
    // RETURNING, not lastInsertRowid: PostgreSQL has no rowid to report.
    const inserted = sqlite.prepare(INSERT_RESTART_UNLESS_BLOCKED).get(params) as { id: number } | undefined;
    if (inserted) {
      // Same connection, inside the open transaction: drizzle maps columns, JSON and booleans.
      const row = restartEventById(db, inserted.id);
      if (!row) throw new Error(`restart event #${inserted.id} vanished inside its own transaction`);
      if (hooks.audit) recordAudit(db, hooks.audit(row));
      hooks.onInserted?.(row);
      return { inserted: row };
    }
    const block = restartBlockOf(db, r.backendId, cooldownStart);
    // NOT EXISTS found a row, so one of the two holds; the fallback only satisfies the types.
    return { blocked: block ?? { reason: "pending" as const, event: lastRestartOf(db, r.backendId)! } };
  });
  return tx.immediate();
}

/**
 * What the restart action did (exit code, output, error), in one transaction with, when `failed`
 * gives a resolution, closing the event as failed. True when this call closed it (still pending).
 */
export function recordActionResult(
  db: Db,
  id: number,
  result: { exitCode: number | null; output: string; error: string | null; finishedAt: number },
  failed: { resolution: string } | null,
  /** Runs inside the transaction when this call closed the event as failed (the restart-finished notification). */
  onFailed?: () => void,
): boolean {
  return db.$client.transaction(() => {
    db.update(restartEvents)
      .set({ commandExitCode: result.exitCode, commandOutput: result.output, commandError: result.error, commandFinishedAt: result.finishedAt })
      .where(eq(restartEvents.id, id))
      .run();
    // Conditional on still pending: the watcher may have resolved it meanwhile (it came back anyway).
    const closed = failed ? resolveRestart(db, id, { outcome: "failed", resolvedAt: result.finishedAt, resolution: failed.resolution }) : false;
    if (closed) onFailed?.();
    return closed;
  })();
}

/**
 * Close a pending restart. Conditional on it still being pending, so the watcher and the restart
 * verb (a failed command) can race without overwriting each other; returns whether this call won.
 */
export function resolveRestart(
  db: Db,
  id: number,
  r: {
    outcome: RestartOutcome;
    resolvedAt: number;
    resolution: string;
    recoveredAt?: number | null;
    downtimeSeconds?: number | null;
  },
): boolean {
  const res = db
    .update(restartEvents)
    .set({
      outcome: r.outcome,
      resolvedAt: r.resolvedAt,
      resolution: r.resolution,
      recoveredAt: r.recoveredAt ?? null,
      downtimeSeconds: r.downtimeSeconds ?? null,
    })
    .where(and(eq(restartEvents.id, id), isNull(restartEvents.outcome)))
    .run();
  return res.changes === 1;
}

/**
 * Marks a restart started by this leader, just before its action runs: conditional on it being
 * neither started nor resolved, so two executors (a takeover racing the asking replica's leader)
 * cannot both run it. Call it inside a fenced transaction (db/fence.ts). True when this call won.
 */
export function markRestartStarted(db: Db, id: number, by: { at: number; replicaId: string; epoch: number }): boolean {
  const res = db
    .update(restartEvents)
    .set({ startedAt: by.at, startedBy: by.replicaId, startedEpoch: by.epoch })
    .where(and(eq(restartEvents.id, id), isNull(restartEvents.startedAt), isNull(restartEvents.outcome)))
    .run();
  return res.changes === 1;
}

/** Pending restarts whose action was started and whose result was never recorded (a new leader resolves them `unknown`). */
export function startedWithoutResult(db: Db): RestartEventRow[] {
  return db
    .select()
    .from(restartEvents)
    .where(and(isNull(restartEvents.outcome), isNotNull(restartEvents.startedAt), isNull(restartEvents.commandFinishedAt)))
    .all();
}
