/**
 * Named queries. Everything that knows a table's shape lives here; lib/ calls these verbs and
 * never builds SQL. Transitions and restart events are kept forever: only the retention of raw
 * samples and minute rollups deletes anything.
 */
import type Database from "better-sqlite3";
import { and, asc, count, desc, eq, getTableColumns, gt, gte, isNotNull, isNull, lt, lte, SQL, sql } from "drizzle-orm";
import { figuresOf, type Figures, type Reading, type Verdict } from "../lib/check/types";
import type { BackendState } from "../lib/check/states";
import { LATENCY_FIELDS } from "../lib/metrics/vllm-latency";
import { columnsFrom, HISTORY_FIGURES } from "../lib/api/history";
import type { HistoryColumns } from "../lib/api/types";
import type { Db } from "./client";
import { perConnection } from "./per-connection";
import { auditLog, restartEvents, samples, sessions, transitions, type AuditRow, type RestartEventRow, type RestartEvidence, type RestartOutcome, type SessionRow, type TransitionRow } from "./schema";

export type NewSample = typeof samples.$inferInsert;
export type NewTransition = typeof transitions.$inferInsert;
export type TargetKind = "backend" | "proxy";

/** The sample row of one reading and the verdict drawn from it. */
export function sampleRow(backendId: string, reading: Reading, verdict: Verdict): NewSample {
  const m = reading.metrics;
  return {
    backendId,
    at: reading.at,
    state: verdict.state,
    outcome: reading.outcome,
    error: reading.error ?? null,
    latencyMs: Math.round(reading.latencyMs),
    ...figuresOf(reading, verdict),
    steps: m?.steps ?? null,
    promptTokens: m?.promptTokens ?? null,
    generationTokens: m?.generationTokens ?? null,
    finishedRequests: m?.finishedRequests ?? null,
    processStartTime: m?.processStartTime ?? null,
    probeOk: reading.probe ? reading.probe.ok : null,
    probeLatencyMs: reading.probe ? Math.round(reading.probe.latencyMs) : null,
    // The cumulative histograms stay in memory for the next read's deltas; a row keeps the figures.
    reading: { ...reading, latency: undefined },
  };
}

/**
 * The statements the watcher runs on every poll, prepared once per connection: building the SQL
 * through drizzle on each call was ~20% of the watcher's CPU at 1000 backends (bench/RESULTS.md).
 * The sample insert is a better-sqlite3 statement whose column list and value encoders come from
 * the drizzle table itself (getTableColumns), so a new column in db/schema.ts is written with no
 * change here and each value is encoded as drizzle would (JSON, booleans). The restart read is a
 * drizzle prepared query, so its rows are mapped exactly as the unprepared query maps them.
 */
interface PollStatements {
  insertSample: Database.Statement;
  sampleColumns: Array<{ key: keyof NewSample; encode: (v: unknown) => unknown; absent: unknown }>;
  lastRestart: { get(values: { backendId: string }): RestartEventRow | undefined };
  latestRestarts: { all(): RestartEventRow[] };
  // Read once per monitor when it is seeded: at 1000 backends the start spent ~half of its 2.6 s
  // building and preparing these two (and the on-call book's) queries anew for every backend.
  recentReadings: { all(values: { backendId: string; since: number; limit: number }): Array<{ reading: unknown }> };
  lastTransition: { get(values: { kind: TargetKind; targetId: string }): TransitionRow | undefined };
  // Read with every history (GET /api/backends/{id}/history): built anew it was ~8% of one.
  transitionsInRange: { all(values: { kind: TargetKind; targetId: string; from: number; to: number }): TransitionRow[] };
}

const statementsOf = perConnection((db: Db): PollStatements => {
  const columns = Object.entries(getTableColumns(samples)).filter(([, c]) => !(c.primary && c.columnType === "SQLiteInteger"));
  const sampleColumns = columns.map(([key, c]) => ({
    key: key as keyof NewSample,
    encode: (v: unknown) => c.mapToDriverValue(v),
    // What drizzle writes for a value left out: the column's default (folded: false), else NULL.
    absent: c.hasDefault && c.default !== undefined && !(c.default instanceof SQL) ? c.mapToDriverValue(c.default) : null,
  }));
  return {
    insertSample: db.$client.prepare(
      `INSERT INTO samples (${columns.map(([, c]) => `"${c.name}"`).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    ),
    sampleColumns,
    lastRestart: db
      .select()
      .from(restartEvents)
      .where(eq(restartEvents.backendId, sql.placeholder("backendId")))
      .orderBy(desc(restartEvents.requestedAt), desc(restartEvents.id))
      .limit(1)
      .prepare(),
    // The newest event of every backend that has one, in the same order as lastRestart: one
    // index lookup per distinct backend (restart_events_backend_requested), events being rare.
    latestRestarts: db
      .select()
      .from(restartEvents)
      .where(
        sql`${restartEvents.id} IN (SELECT (SELECT x.id FROM restart_events x WHERE x.backend_id = d.b ORDER BY x.requested_at DESC, x.id DESC LIMIT 1) FROM (SELECT DISTINCT backend_id AS b FROM restart_events) d)`,
      )
      .prepare(),
    recentReadings: db
      .select({ reading: samples.reading })
      .from(samples)
      .where(and(eq(samples.backendId, sql.placeholder("backendId")), gte(samples.at, sql.placeholder("since"))))
      .orderBy(desc(samples.at), desc(samples.id))
      .limit(sql.placeholder("limit"))
      .prepare(),
    lastTransition: db
      .select()
      .from(transitions)
      .where(and(eq(transitions.kind, sql.placeholder("kind")), eq(transitions.targetId, sql.placeholder("targetId"))))
      .orderBy(desc(transitions.at), desc(transitions.id))
      .limit(1)
      .prepare(),
    transitionsInRange: db
      .select()
      .from(transitions)
      .where(
        and(
          eq(transitions.kind, sql.placeholder("kind")),
          eq(transitions.targetId, sql.placeholder("targetId")),
          gte(transitions.at, sql.placeholder("from")),
          lte(transitions.at, sql.placeholder("to")),
        ),
      )
      .orderBy(asc(transitions.at), asc(transitions.id))
      .prepare(),
  };
});

/** One transaction for the whole batch: one fsync per poll round instead of one per row. */
export function insertSamples(db: Db, rows: NewSample[]): void {
  if (rows.length === 0) return;
  const { insertSample, sampleColumns } = statementsOf(db);
  const values: unknown[] = new Array(sampleColumns.length);
  // better-sqlite3's transaction nests as a savepoint, so a caller may wrap this in a larger one.
  db.$client.transaction(() => {
    for (const row of rows) {
      for (let i = 0; i < sampleColumns.length; i++) {
        const c = sampleColumns[i];
        const v = row[c.key];
        values[i] = v === undefined ? c.absent : v === null ? null : c.encode(v);
      }
      insertSample.run(values);
    }
  })();
}

/** The stored readings of a backend taken at or after `since`, oldest first, at most `limit` (the newest). */
export function recentReadings(db: Db, backendId: string, since: number, limit: number): Reading[] {
  const rows = statementsOf(db).recentReadings.all({ backendId, since, limit });
  return rows.map((r) => r.reading as Reading).reverse();
}

export function lastTransition(db: Db, kind: TargetKind, targetId: string): TransitionRow | undefined {
  return statementsOf(db).lastTransition.get({ kind, targetId });
}

export function insertTransition(db: Db, row: NewTransition): void {
  db.insert(transitions).values(row).run();
}

export function transitionsInRange(db: Db, kind: TargetKind, targetId: string, from: number, to: number): TransitionRow[] {
  return statementsOf(db).transitionsInRange.all({ kind, targetId, from, to });
}

/**
 * The transitions of a target in [from, to], oldest first, preceded by the last one before `from`
 * (the state the window starts in): an outage that began before the window is still seen whole.
 */
export function transitionsWithPrior(db: Db, kind: TargetKind, targetId: string, from: number, to: number): TransitionRow[] {
  const prior = db
    .select()
    .from(transitions)
    .where(and(eq(transitions.kind, kind), eq(transitions.targetId, targetId), lt(transitions.at, from)))
    .orderBy(desc(transitions.at), desc(transitions.id))
    .limit(1)
    .all();
  return [...prior, ...transitionsInRange(db, kind, targetId, from, to)];
}

/** When stepwatch first recorded a state of this target (it has watched it since), or null. */
export function firstTransitionAt(db: Db, kind: TargetKind, targetId: string): number | null {
  const row = db
    .select({ at: transitions.at })
    .from(transitions)
    .where(and(eq(transitions.kind, kind), eq(transitions.targetId, targetId)))
    .orderBy(asc(transitions.at), asc(transitions.id))
    .limit(1)
    .get();
  return row?.at ?? null;
}

// ---- restart events (created by lib/restart; the watcher only resolves pending ones) ----

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
SELECT @backendId, @requestedAt, @requestedBy, @note, @state, @healthy,
  @running, @waiting, @processStartTime, @evidence,
  @overrideCooldown, @confirmedHealthy, @action
WHERE NOT EXISTS (
  SELECT 1 FROM restart_events
  WHERE backend_id = @backendId
    AND (outcome IS NULL OR (@enforceCooldown = 1 AND requested_at > @cooldownStart))
)`;

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
    const info = sqlite.prepare(INSERT_RESTART_UNLESS_BLOCKED).run(params);
    if (info.changes === 1) {
      // Same connection, inside the open transaction: drizzle maps columns, JSON and booleans.
      const row = restartEventById(db, Number(info.lastInsertRowid));
      if (!row) throw new Error(`restart event #${info.lastInsertRowid} vanished inside its own transaction`);
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
    outcome: "recovered" | "failed" | "timed-out";
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

// ---- history and retention ----

/** Higher is worse: a minute that saw "down" once is shown down in the rollup. A Record, so a new state must be ranked. */
const SEVERITY_RANK: Record<BackendState, number> = {
  idle: 1,
  sleeping: 2,
  busy: 3,
  unknown: 4,
  "no-metrics": 5,
  starting: 6,
  restarting: 7,
  stalled: 8,
  stuck: 9,
  down: 10,
};
const RANKED = Object.entries(SEVERITY_RANK) as Array<[BackendState, number]>;
const rankOf = (col: string) => `CASE ${col} ${RANKED.map(([s, r]) => `WHEN '${s}' THEN ${r}`).join(" ")} ELSE 0 END`;
const stateOfRank = (expr: string) => `CASE ${expr} ${RANKED.map(([s, r]) => `WHEN ${r} THEN '${s}'`).join(" ")} ELSE 'unknown' END`;

/** A figure's column: ttftP50 -> ttft_p50, preemptionsPerSecond -> preemptions_per_second. */
const snake = (f: string) => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
/** The latency figures' columns, alike in samples and the rollups. */
const LATENCY_COLUMNS = LATENCY_FIELDS.map((f) => [f, snake(f)] as const);
const LATENCY = new Set<string>(LATENCY_FIELDS);
/** A mean weighted by the readings that have the figure (a NULL is "not exposed", not zero). */
const weightedMean = (c: string) => `SUM(${c} * n) / SUM(CASE WHEN ${c} IS NULL THEN 0 ELSE n END)`;

/** Each history figure's column in `samples`, and in the rollups (where running is running_avg). */
const SAMPLE_COLUMNS = HISTORY_FIGURES.map(snake);
const ROLLUP_COLUMNS = HISTORY_FIGURES.map((f) => (f === "running" || f === "waiting" ? `${f}_avg` : snake(f)));

/**
 * Rollup rows (minutes or windows) merged into one, each figure's mean in HISTORY_FIGURES order.
 * The latency figures are weighted by the readings that have them; the others by all of a window's
 * readings, as the history has always merged minutes.
 */
const mergedMeans = HISTORY_FIGURES.map((f, k) => (LATENCY.has(f) ? weightedMean(ROLLUP_COLUMNS[k]) : `SUM(${ROLLUP_COLUMNS[k]} * n) / SUM(n)`));
const worstRank = `MAX(${rankOf("worst_state")})`;

/**
 * A point of a backend's history as SQLite answers it in raw mode (arrays, not objects: an object
 * per row with 20 keys cost 5x the query): its time, how many readings it holds, its (worst)
 * state, then each of HISTORY_FIGURES.
 */
type PointRow = [at: number, n: number, state: BackendState, ...figures: Array<number | null>];
const FIRST_FIGURE = 3;

/** Up to this range, raw readings are shown; beyond it, rollup windows. */
export const RAW_HISTORY_MAX_MS = 6 * 3600_000;
/** A long range is read at the finest rollup level that keeps it within this many points. */
export const MAX_HISTORY_POINTS = 1500;
/** The windows of `sample_rollups`, finest first; `sample_minutes` is the one-minute level below them. */
export const ROLLUP_WIDTHS_MS = [10 * 60_000, 3600_000] as const;

/** Where each level's rows are: one-minute rows in sample_minutes, coarser windows in sample_rollups. */
function levelSource(widthMs: number): { table: string; at: string; where: string } {
  return widthMs === 60_000
    ? { table: "sample_minutes", at: "minute", where: "" }
    : { table: "sample_rollups", at: "start", where: `AND width_ms = ${widthMs}` };
}

/**
 * The level and bucket a long range is read at: the finest level (a minute, 10 minutes, an hour)
 * whose windows keep it within MAX_HISTORY_POINTS, each window one point as stored; past the
 * coarsest level's reach (~62 days), whole hours grouped into wider buckets.
 */
export function historyLevel(rangeMs: number): { widthMs: number; bucketMs: number } {
  for (const widthMs of [60_000, ...ROLLUP_WIDTHS_MS]) {
    if (Math.ceil(rangeMs / widthMs) <= MAX_HISTORY_POINTS) return { widthMs, bucketMs: widthMs };
  }
  const widthMs = ROLLUP_WIDTHS_MS[ROLLUP_WIDTHS_MS.length - 1];
  return { widthMs, bucketMs: Math.ceil(rangeMs / MAX_HISTORY_POINTS / widthMs) * widthMs };
}

/**
 * A backend's history over [from, to] as columns, every digit kept (lib/api/snapshot historyOf
 * rounds what it sends): the raw readings up to RAW_HISTORY_MAX_MS, else the rollup level
 * historyLevel picks, with the raw readings not folded yet bucketed alike and merged in by weight.
 */
export function historyPoints(
  db: Db,
  backendId: string,
  from: number,
  to: number,
): { resolution: "raw" | "rollup"; bucketMs: number | null; columns: HistoryColumns } {
  if (to - from <= RAW_HISTORY_MAX_MS) {
    const rows = pointRows(db, ["at", "1", "state", ...SAMPLE_COLUMNS], "FROM samples WHERE backend_id = @id AND at >= @from AND at <= @to ORDER BY at, id", { id: backendId, from, to });
    return { resolution: "raw", bucketMs: null, columns: columnsOf(rows) };
  }
  const { widthMs, bucketMs: bucket } = historyLevel(to - from);
  const src = levelSource(widthMs);
  // Every folded sample is in its minute, and every minute in its windows; the raw samples not
  // folded yet (the last few minutes, through the partial index samples_unfolded) are bucketed
  // too, and both merged by weight. Each sample is counted once: in the rollups, or raw. A window
  // is in range when it overlaps [from, to].
  const params = { b: bucket, id: backendId, from, to };
  const fromRaw = pointRows(
    db,
    ["(at / CAST(@b AS INTEGER)) * @b", "COUNT(*)", stateOfRank(`MAX(${rankOf("state")})`), ...SAMPLE_COLUMNS.map((c) => `AVG(${c})`)],
    "FROM samples WHERE backend_id = @id AND folded = 0 AND at >= @from AND at <= @to GROUP BY 1 ORDER BY 1",
    params,
  );
  const inRange = `FROM ${src.table} WHERE backend_id = @id ${src.where} AND ${src.at} > @from - ${widthMs} AND ${src.at} <= @to`;
  const fromRollups =
    bucket === widthMs
      ? // A window per point, as stored: no grouping.
        pointRows(db, [src.at, "n", "worst_state", ...ROLLUP_COLUMNS], `${inRange} ORDER BY ${src.at}`, params)
      : pointRows(db, [`(${src.at} / CAST(@b AS INTEGER)) * @b`, "SUM(n)", stateOfRank(worstRank), ...mergedMeans], `${inRange} GROUP BY 1 ORDER BY 1`, params);
  return { resolution: "rollup", bucketMs: bucket, columns: columnsOf(mergeByTime(fromRollups, fromRaw)) };
}

/**
 * The points of one history query (`SELECT <select> <rest>`, in its order), as SQLite writes them
 * in one JSON text. better-sqlite3 makes every cell a V8 value through the C++ API, ~250 ns a
 * cell, NULLs too: 7 days of 10-minute windows are 1008 rows of 23 cells, 6 ms. SQLite's JSON
 * (17 significant digits: every double comes back exactly) and one JSON.parse take ~60% of that.
 * The points keep their order: SQLite does not flatten a subquery with ORDER BY into an aggregate
 * (the rule that keeps group_concat's order).
 */
function pointRows(db: Db, select: readonly string[], rest: string, params: Record<string, number | string>): PointRow[] {
  const text = `SELECT json_group_array(json_array(${select.map((_, i) => `c${i}`).join(", ")})) FROM (SELECT ${select.map((e, i) => `${e} AS c${i}`).join(", ")} ${rest})`;
  return JSON.parse(historyStatement(db, text).get(params) as string) as PointRow[];
}

/** The history's statements, prepared once per connection (their SQL is one of a few fixed texts). */
const historyStatements = perConnection((_db: Db) => new Map<string, Database.Statement>());
function historyStatement(db: Db, text: string): Database.Statement {
  const byText = historyStatements(db);
  let st = byText.get(text);
  if (!st) byText.set(text, (st = db.$client.prepare(text).pluck()));
  return st;
}

function columnsOf(rows: readonly PointRow[]): HistoryColumns {
  return columnsFrom(rows.length, { at: (i) => rows[i][0], state: (i) => rows[i][2], value: (i, k) => rows[i][FIRST_FIGURE + k] as number | null });
}

/** Two lists of points in time order as one; two points at one time become one, weighted by their readings. */
function mergeByTime(a: PointRow[], b: PointRow[]): PointRow[] {
  if (!b.length) return a;
  if (!a.length) return b;
  const out: PointRow[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j === b.length || (i < a.length && a[i][0] < b[j][0])) out.push(a[i++]);
    else if (i === a.length || b[j][0] < a[i][0]) out.push(b[j++]);
    else out.push(mergePoints(a[i++], b[j++]));
  }
  return out;
}

function mergePoints(x: PointRow, y: PointRow): PointRow {
  const n = x[1] + y[1];
  const merged: PointRow = [x[0], n, SEVERITY_RANK[y[2]] > SEVERITY_RANK[x[2]] ? y[2] : x[2]];
  for (let k = FIRST_FIGURE; k < x.length; k++) {
    const p = x[k] as number | null;
    const q = y[k] as number | null;
    merged.push(p === null ? q : q === null ? p : (p * x[1] + q * y[1]) / n);
  }
  return merged;
}

/**
 * Recompute every window of sample_rollups that holds a minute at or after its backend's `since`,
 * from sample_minutes: a window is replaced whole, so it always sums exactly its minutes, however
 * often it is recomputed. `touched` is a query of (backend_id, since) rows.
 */
function refreshRollups(client: Database.Database, touched: string, params: Record<string, number | string>, widths: readonly number[] = ROLLUP_WIDTHS_MS): void {
  for (const w of widths) {
    client
      .prepare(
        `WITH touched AS (${touched})
         INSERT OR REPLACE INTO sample_rollups (backend_id, width_ms, start, n, ${ROLLUP_COLUMNS.join(", ")}, running_max, waiting_max, worst_state)
         SELECT m.backend_id, ${w}, (m.minute / ${w}) * ${w}, SUM(n), ${mergedMeans.join(", ")},
                MAX(running_max), MAX(waiting_max), ${stateOfRank(worstRank)}
           FROM sample_minutes m JOIN touched t ON m.backend_id = t.backend_id AND m.minute >= (t.since / ${w}) * ${w}
          GROUP BY m.backend_id, 3`,
      )
      .run(params);
  }
}

/**
 * Fill each width of sample_rollups that has no row from sample_minutes, when there are minutes: a
 * database from before the table (or the width) existed. Called at open (db/client.ts); a no-op
 * once every width has its windows.
 */
export function ensureRollups(db: Db): void {
  const client = db.$client;
  if (!client.prepare("SELECT 1 FROM sample_minutes LIMIT 1").get()) return;
  const has = client.prepare("SELECT 1 FROM sample_rollups WHERE width_ms = ? LIMIT 1");
  const missing = ROLLUP_WIDTHS_MS.filter((w) => !has.get(w));
  if (!missing.length) return;
  // Once, after an upgrade: 6-10 s per million minute rows (90 days of 8 backends), so say why the start waits.
  const { n } = client.prepare("SELECT COUNT(*) AS n FROM sample_minutes").get() as { n: number };
  console.error(`stepwatch: building the ${missing.map((w) => `${w / 60_000}-minute`).join(" and ")} rollup windows from ${n} minute rows (once)`);
  client.transaction(() => refreshRollups(client, "SELECT DISTINCT backend_id, 0 AS since FROM sample_minutes", {}, missing))();
}

export interface RetentionResult {
  rolledMinutes: number;
  deletedSamples: number;
  deletedRollups: number;
}

/**
 * Fold the raw samples not folded yet whose minute is FOLD_AFTER_MS behind into per-minute rows
 * (marking them folded; they stay raw for rawHours), recompute the 10-minute and hourly windows
 * those minutes are in, delete raw samples older than rawHours and rollups older than rollupDays
 * (a window once its end is), for the backends of `scope` (all by default), in one transaction
 * (a crash leaves all or none; lib/watcher runs it in chunks of backends). The cutoff is
 * floored to a minute so a minute is folded whole; the upsert merges by weight and `folded` marks
 * what was counted, so running it twice, or after a late write into an already-folded minute,
 * never double-counts nor loses a reading. Folding early is what keeps a 7-day history fast: it
 * reads 10-minute windows, not 48 h of raw rows nor 10,000 minutes (bench/RESULTS.md, history).
 * `deletedRollups` counts minutes.
 */
/** A raw sample is folded into its minute once the minute is this far behind (late writes merge by weight). */
export const FOLD_AFTER_MS = 2 * 60_000;

/**
 * Which backends one run of applyRetention covers: all of them, the ids listed, or all but those
 * (the watcher runs it in chunks of its backends, then once for the rest: backends a reload removed).
 */
export type RetentionScope = { only: readonly string[] } | { except: readonly string[] };

/** A predicate on backend_id for a scope, with its parameter (SQLite reads the ids from JSON, one statement for any count). */
function scopeSql(scope: RetentionScope | undefined, col = "backend_id"): { where: string; ids: string | null } {
  if (!scope) return { where: "", ids: null };
  if ("only" in scope) return { where: `AND ${col} IN (SELECT value FROM json_each(@ids))`, ids: JSON.stringify(scope.only) };
  return { where: `AND ${col} NOT IN (SELECT value FROM json_each(@ids))`, ids: JSON.stringify(scope.except) };
}

export function applyRetention(db: Db, opts: { now: number; rawHours: number; rollupDays: number; scope?: RetentionScope }): RetentionResult {
  const rawCutoff = Math.floor((opts.now - opts.rawHours * 3600_000) / 60_000) * 60_000;
  const foldCutoff = Math.max(rawCutoff, Math.floor((opts.now - FOLD_AFTER_MS) / 60_000) * 60_000);
  const rollupCutoff = opts.now - opts.rollupDays * 86_400_000;
  const client = db.$client;
  const scope = scopeSql(opts.scope);
  const params = (p: Record<string, number>) => (scope.ids === null ? p : { ...p, ids: scope.ids });
  const wavg = (col: string) =>
    `CASE WHEN ${col} IS NULL THEN excluded.${col} WHEN excluded.${col} IS NULL THEN ${col}
          ELSE (${col} * n + excluded.${col} * excluded.n) / (n + excluded.n) END`;
  const roll = client.prepare(
    `INSERT INTO sample_minutes (backend_id, minute, n, running_avg, running_max, waiting_avg, waiting_max,
            steps_per_second, generation_tokens_per_second, prompt_tokens_per_second, kv_cache_usage, worst_state
            ${LATENCY_COLUMNS.map(([, c]) => `, ${c}`).join("")})
     SELECT backend_id, (at / 60000) * 60000, COUNT(*), AVG(running), MAX(running), AVG(waiting), MAX(waiting),
            AVG(steps_per_second), AVG(generation_tokens_per_second), AVG(prompt_tokens_per_second), AVG(kv_cache_usage),
            ${stateOfRank(`MAX(${rankOf("state")})`)}
            ${LATENCY_COLUMNS.map(([, c]) => `, AVG(${c})`).join("")}
       FROM samples WHERE folded = 0 AND at < @cutoff ${scope.where} GROUP BY 1, 2
     ON CONFLICT (backend_id, minute) DO UPDATE SET
       ${LATENCY_COLUMNS.map(([, c]) => `${c} = ${wavg(c)},`).join("\n       ")}
       running_avg = ${wavg("running_avg")},
       waiting_avg = ${wavg("waiting_avg")},
       steps_per_second = ${wavg("steps_per_second")},
       generation_tokens_per_second = ${wavg("generation_tokens_per_second")},
       prompt_tokens_per_second = ${wavg("prompt_tokens_per_second")},
       kv_cache_usage = ${wavg("kv_cache_usage")},
       running_max = MAX(COALESCE(running_max, excluded.running_max), COALESCE(excluded.running_max, running_max)),
       waiting_max = MAX(COALESCE(waiting_max, excluded.waiting_max), COALESCE(excluded.waiting_max, waiting_max)),
       worst_state = ${stateOfRank(`MAX(${rankOf("worst_state")}, ${rankOf("excluded.worst_state")})`)},
       n = n + excluded.n`,
  );
  const markFolded = client.prepare(`UPDATE samples SET folded = 1 WHERE folded = 0 AND at < @cutoff ${scope.where}`);
  const delRaw = client.prepare(`DELETE FROM samples WHERE at < @cutoff ${scope.where}`);
  const delRollups = client.prepare(`DELETE FROM sample_minutes WHERE minute < @cutoff ${scope.where}`);
  // Per width, so the (width_ms, start) index finds them (start + width_ms <= cutoff would scan the table).
  const delWindows = ROLLUP_WIDTHS_MS.map((w) => client.prepare(`DELETE FROM sample_rollups WHERE width_ms = ${w} AND start <= @cutoff - ${w} ${scope.where}`));
  return client.transaction(() => {
    const rolled = roll.run(params({ cutoff: foldCutoff })).changes;
    // The windows of the minutes just folded into, before their samples are marked folded.
    refreshRollups(
      client,
      `SELECT backend_id, MIN(at) AS since FROM samples WHERE folded = 0 AND at < @cutoff ${scope.where} GROUP BY backend_id`,
      params({ cutoff: foldCutoff }),
    );
    markFolded.run(params({ cutoff: foldCutoff }));
    const deletedSamples = delRaw.run(params({ cutoff: rawCutoff })).changes;
    const deletedRollups = delRollups.run(params({ cutoff: rollupCutoff })).changes;
    for (const del of delWindows) del.run(params({ cutoff: rollupCutoff }));
    return { rolledMinutes: rolled, deletedSamples, deletedRollups };
  })();
}

// ---- sessions and the audit log (lib/auth) ----

export type NewSession = typeof sessions.$inferInsert;

/** Store a new session; ends expired ones, and the operator's oldest past `maxPerOperator`. */
export function insertSession(db: Db, row: NewSession, maxPerOperator: number): void {
  db.$client.transaction(() => {
    db.delete(sessions).where(lte(sessions.expiresAt, row.createdAt)).run();
    db.insert(sessions).values(row).run();
    const extra = db
      .select({ id: sessions.id })
      .from(sessions)
      .where(eq(sessions.operator, row.operator))
      .orderBy(desc(sessions.createdAt), desc(sessions.id))
      .offset(maxPerOperator)
      .limit(1000)
      .all();
    for (const e of extra) db.delete(sessions).where(eq(sessions.id, e.id)).run();
  })();
}

export function sessionById(db: Db, id: string): SessionRow | undefined {
  return db.select().from(sessions).where(eq(sessions.id, id)).get();
}

export function touchSession(db: Db, id: string, at: number): void {
  db.update(sessions).set({ lastSeenAt: at }).where(eq(sessions.id, id)).run();
}

/** Ends one session; with `operator`, only if it is that operator's. Returns whether one ended. */
export function deleteSession(db: Db, id: string, operator?: string): boolean {
  const where = operator === undefined ? eq(sessions.id, id) : and(eq(sessions.id, id), eq(sessions.operator, operator));
  return db.delete(sessions).where(where).run().changes > 0;
}

/** Ends every session of an operator (e.g. "sign out everywhere"); returns how many. */
export function deleteSessionsOf(db: Db, operator: string): number {
  return db.delete(sessions).where(eq(sessions.operator, operator)).run().changes;
}

/** The operator's live sessions, newest first. */
export function sessionsOf(db: Db, operator: string, now: number): SessionRow[] {
  return db
    .select()
    .from(sessions)
    .where(and(eq(sessions.operator, operator), gt(sessions.expiresAt, now)))
    .orderBy(desc(sessions.createdAt))
    .all();
}

export type AuditActorKind = AuditRow["actorKind"];

export interface AuditEntry {
  at: number;
  actor: string | null;
  actorKind: AuditActorKind;
  /** "signin.ok", "signin.failed", "signout", "session.ended", "restart", "config.reload", "acknowledge", "maintenance", ... */
  action: string;
  target?: string | null;
  address?: string | null;
  detail?: string | null;
}

/** Longest actor/target/detail kept: the audit log is bounded whatever a client sends. */
const AUDIT_FIELD_MAX = 200;
const AUDIT_DETAIL_MAX = 1000;
const clip = (s: string | null | undefined, n: number) => (s == null ? null : s.length > n ? `${s.slice(0, n)}… (${s.length - n} more characters)` : s);

/**
 * Append one line to the audit log. For every engineer's verbs (acknowledgements, maintenance...):
 * call it in the same transaction as the change it records where one exists.
 */
export function recordAudit(db: Db, e: AuditEntry): void {
  db.insert(auditLog)
    .values({
      at: e.at,
      actor: clip(e.actor, AUDIT_FIELD_MAX),
      actorKind: e.actorKind,
      action: clip(e.action, 64)!,
      target: clip(e.target, AUDIT_FIELD_MAX),
      address: clip(e.address, 64),
      detail: clip(e.detail, AUDIT_DETAIL_MAX),
    })
    .run();
}

/** The audit log, newest first; `before` (an id) pages back. */
export function listAudit(db: Db, opts: { limit: number; before?: number }): AuditRow[] {
  return db
    .select()
    .from(auditLog)
    .where(opts.before !== undefined ? lt(auditLog.id, opts.before) : undefined)
    .orderBy(desc(auditLog.id))
    .limit(opts.limit)
    .all();
}
