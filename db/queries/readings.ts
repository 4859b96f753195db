/**
 * The watcher's rows per poll: samples (one per reading, with its verdict) and state transitions.
 * Transitions are kept forever; samples until the retention in ./history.ts folds them.
 */
import type Database from "better-sqlite3";
import { and, asc, desc, eq, getTableColumns, gte, lt, lte, SQL, sql } from "drizzle-orm";
import type { Figures, Reading, Verdict } from "../../lib/core/types";
import { decodeReading, encodeRecord } from "../../lib/core/replay";
import type { LatencySample } from "../../lib/core/latency";
import type { Db } from "../types";
import { perConnection } from "../per-connection";
import { restartEvents, samples, transitions, type RestartEventRow, type TransitionRow } from "../schema";

export type NewSample = typeof samples.$inferInsert;
export type NewTransition = typeof transitions.$inferInsert;
export type TargetKind = "backend" | "proxy";

/**
 * The sample row of one reading and the verdict drawn from it, with the latency figures computed
 * for it (none: the columns stay null). One literal with every column, built once per read: the
 * watcher's spread of this row and the latency sample was ~5% of its CPU per read at 1000 backends.
 * `text` is the reading's stored text (encodeRecord), which the watcher encodes once for this row
 * and the replay row (db/queries/replay.ts replayRow).
 */
export function sampleRow(backendId: string, reading: Reading, verdict: Verdict, latency?: LatencySample, text: string = encodeRecord(reading)): NewSample {
  const m = reading.metrics;
  const rates = verdict.rates;
  return {
    backendId,
    at: reading.at,
    state: verdict.state,
    outcome: reading.outcome,
    error: reading.error ?? null,
    latencyMs: Math.round(reading.latencyMs),
    // figuresOf's columns (lib/core/types.ts), written out for the reason above.
    running: m?.running ?? null,
    waiting: m?.waiting ?? null,
    stepsPerSecond: rates.stepsPerSecond ?? null,
    generationTokensPerSecond: rates.generationTokensPerSecond ?? null,
    promptTokensPerSecond: rates.promptTokensPerSecond ?? null,
    kvCacheUsage: m?.kvCacheUsage ?? null,
    steps: m?.steps ?? null,
    promptTokens: m?.promptTokens ?? null,
    generationTokens: m?.generationTokens ?? null,
    finishedRequests: m?.finishedRequests ?? null,
    processStartTime: m?.processStartTime ?? null,
    probeOk: reading.probe ? reading.probe.ok : null,
    probeLatencyMs: reading.probe ? Math.round(reading.probe.latencyMs) : null,
    ttftP50: latency?.ttftP50 ?? null,
    ttftP95: latency?.ttftP95 ?? null,
    itlP50: latency?.itlP50 ?? null,
    itlP95: latency?.itlP95 ?? null,
    e2eP50: latency?.e2eP50 ?? null,
    e2eP95: latency?.e2eP95 ?? null,
    queueP50: latency?.queueP50 ?? null,
    queueP95: latency?.queueP95 ?? null,
    preemptionsPerSecond: latency?.preemptionsPerSecond ?? null,
    successStopPerSecond: latency?.successStopPerSecond ?? null,
    successLengthPerSecond: latency?.successLengthPerSecond ?? null,
    successAbortPerSecond: latency?.successAbortPerSecond ?? null,
    successErrorPerSecond: latency?.successErrorPerSecond ?? null,
    successOtherPerSecond: latency?.successOtherPerSecond ?? null,
    // Without the cumulative histograms: they stay in memory for the next read's deltas; a row keeps the figures.
    reading: text,
    // Every Figures and LatencySample field is required here: a new one fails to compile until written.
  } satisfies NewSample & Figures & LatencySample;
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
  recentReadings: { all(values: { backendId: string; since: number; limit: number }): Array<{ at: number; reading: unknown }> };
  lastTransition: { get(values: { kind: TargetKind; targetId: string }): TransitionRow | undefined };
  // Read with every history (GET /api/backends/{id}/history): built anew it was ~8% of one.
  transitionsInRange: { all(values: { kind: TargetKind; targetId: string; from: number; to: number }): TransitionRow[] };
}

export const statementsOf = perConnection((db: Db): PollStatements => {
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
      .select({ at: samples.at, reading: samples.reading })
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

/** A statement that writes many rows of its one-row INSERT at once (db/pg/sync-client.ts; better-sqlite3 has none). */
export interface ManyRows {
  runMany(rows: readonly unknown[][]): { changes: number };
}

/** One transaction for the whole batch: one fsync per poll round instead of one per row. */
export function insertSamples(db: Db, rows: NewSample[]): void {
  if (rows.length === 0) return;
  const { insertSample, sampleColumns } = statementsOf(db);
  const encode = (row: NewSample, values: unknown[]) => {
    for (let i = 0; i < sampleColumns.length; i++) {
      const c = sampleColumns[i];
      const v = row[c.key];
      values[i] = v === undefined ? c.absent : v === null ? null : c.encode(v);
    }
    return values;
  };
  // better-sqlite3's transaction nests as a savepoint, so a caller may wrap this in a larger one.
  db.$client.transaction(() => {
    // PostgreSQL (db/pg/sync-client.ts): the rows as multi-row INSERTs, not a round trip each.
    const many = (insertSample as Partial<ManyRows>).runMany;
    if (many) {
      many.call(insertSample, rows.map((row) => encode(row, new Array(sampleColumns.length))));
      return;
    }
    const values: unknown[] = new Array(sampleColumns.length);
    for (const row of rows) insertSample.run(encode(row, values));
  })();
}

/** The stored readings of a backend taken at or after `since`, oldest first, at most `limit` (the newest). */
export function recentReadings(db: Db, backendId: string, since: number, limit: number): Reading[] {
  const rows = statementsOf(db).recentReadings.all({ backendId, since, limit });
  return rows.map((r) => decodeReading(r.reading as string, r.at)).reverse();
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
