/**
 * A backend's history over a range (raw samples, or the minute/10-minute/hourly rollups) and the
 * retention that folds raw samples into those rollups.
 */
import type Database from "better-sqlite3";
import { and, count, SQL } from "drizzle-orm";
import type { BackendState } from "../../lib/core/states";
import { LATENCY_FIELDS } from "../../lib/core/latency";
import { DEFAULT_REPLAY_DAYS } from "../../lib/core/replay";
import { FOLD_AFTER_MS as REPLAY_FOLD_AFTER_MS, foldReplayRows } from "./replay";
import { columnsFrom, figureColumn, HISTORY_FIGURES } from "../../lib/core/history";
import type { HistoryColumns } from "../../lib/core/history";
import type { Db } from "../types";
import { perConnection } from "../per-connection";
import { samples } from "../schema";

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

const LATENCY = new Set<string>(LATENCY_FIELDS);
/** A mean weighted by the readings that have the figure (a NULL is "not exposed", not zero). */
const weightedMean = (c: string) => `SUM(${c} * n) / SUM(CASE WHEN ${c} IS NULL THEN 0 ELSE n END)`;

/**
 * The mean of a figure's readings (NULLs left out), as SQLite's AVG gives it to the bit (both sum
 * the same way, then divide). Not AVG: PostgreSQL's AVG of a double also sums squares (for
 * stddev), which overflows from 1e154 up and fails the whole statement. The columns are REAL.
 */
const mean = (c: string) => `SUM(${c}) / COUNT(${c})`;

/** Each history figure's column in `samples`, and in the rollups (where running is running_avg). */
const SAMPLE_COLUMNS = HISTORY_FIGURES.map(figureColumn);
const ROLLUP_COLUMNS = HISTORY_FIGURES.map((f) => (f === "running" || f === "waiting" ? `${f}_avg` : figureColumn(f)));

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
  // The window's lower edge computed here: a parameter in arithmetic is typed int4 on PostgreSQL.
  const params = { b: bucket, id: backendId, from, to, since: from - widthMs };
  const fromRaw = pointRows(
    db,
    ["(at / CAST(@b AS INTEGER)) * @b", "COUNT(*)", stateOfRank(`MAX(${rankOf("state")})`), ...SAMPLE_COLUMNS.map(mean)],
    "FROM samples WHERE backend_id = @id AND folded = 0 AND at >= @from AND at <= @to GROUP BY 1 ORDER BY 1",
    params,
  );
  const inRange = `FROM ${src.table} WHERE backend_id = @id ${src.where} AND ${src.at} > @since AND ${src.at} <= @to`;
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
 * (the rule that keeps group_concat's order); PostgreSQL aggregates the sorted subquery in its order
 * too (json_agg has no parallel form that could interleave it).
 */
function pointRows(db: Db, select: readonly string[], rest: string, params: Record<string, number | string>): PointRow[] {
  const text = `SELECT json_group_array(json_array(${select.map((_, i) => `c${i}`).join(", ")})) FROM (SELECT ${select.map((e, i) => `${e} AS c${i}`).join(", ")} ${rest}) AS points`;
  const json = historyStatement(db, text).get(params) as string;
  // PostgreSQL's JSON writes a non-finite double as a string ("Infinity"), SQLite's as 9e999.
  return (NON_FINITE.test(json) ? JSON.parse(json, (_k, v) => (typeof v === "string" && NON_FINITE_VALUES.has(v) ? Number(v) : v)) : JSON.parse(json)) as PointRow[];
}
const NON_FINITE = /"(-?Infinity|NaN)"/;
const NON_FINITE_VALUES = new Set(["Infinity", "-Infinity", "NaN"]);

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

/** What a recomputed window replaces (a window is replaced whole). */
const REFRESHED = ["n", ...ROLLUP_COLUMNS, "running_max", "waiting_max", "worst_state"];

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
         INSERT INTO sample_rollups (backend_id, width_ms, start, n, ${ROLLUP_COLUMNS.join(", ")}, running_max, waiting_max, worst_state)
         SELECT m.backend_id, ${w}, (m.minute / ${w}) * ${w}, SUM(n), ${mergedMeans.join(", ")},
                MAX(running_max), MAX(waiting_max), ${stateOfRank(worstRank)}
           FROM sample_minutes m JOIN touched t ON m.backend_id = t.backend_id AND m.minute >= (t.since / ${w}) * ${w}
          GROUP BY m.backend_id, 3
         ON CONFLICT (backend_id, width_ms, start) DO UPDATE SET ${REFRESHED.map((c) => `${c} = excluded.${c}`).join(", ")}`,
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

export function applyRetention(db: Db, opts: { now: number; rawHours: number; rollupDays: number; replayDays?: number; scope?: RetentionScope }): RetentionResult {
  const rawCutoff = Math.floor((opts.now - opts.rawHours * 3600_000) / 60_000) * 60_000;
  const foldCutoff = Math.max(rawCutoff, Math.floor((opts.now - FOLD_AFTER_MS) / 60_000) * 60_000);
  const rollupCutoff = opts.now - opts.rollupDays * 86_400_000;
  // The replay record (db/queries/replay.ts) is kept whole days, apart from the raw samples.
  const replayCutoff = opts.now - (opts.replayDays ?? DEFAULT_REPLAY_DAYS) * 86_400_000;
  const client = db.$client;
  const scope = scopeSql(opts.scope);
  const params = (p: Record<string, number>) => (scope.ids === null ? p : { ...p, ids: scope.ids });
  // The stored row's columns named with their table: bare, PostgreSQL finds them ambiguous with excluded's.
  const wavg = (c: string) => {
    const col = `sample_minutes.${c}`;
    return `CASE WHEN ${col} IS NULL THEN excluded.${c} WHEN excluded.${c} IS NULL THEN ${col}
          ELSE (${col} * sample_minutes.n + excluded.${c} * excluded.n) / (sample_minutes.n + excluded.n) END`;
  };
  // A minute holds each history figure's mean (ROLLUP_COLUMNS, from HISTORY_FIGURES: a new figure
  // is folded without a line here), and running's and waiting's maximum besides.
  const roll = client.prepare(
    `INSERT INTO sample_minutes (backend_id, minute, n, ${ROLLUP_COLUMNS.join(", ")}, running_max, waiting_max, worst_state)
     SELECT backend_id, (at / 60000) * 60000, COUNT(*), ${SAMPLE_COLUMNS.map(mean).join(", ")},
            MAX(running), MAX(waiting), ${stateOfRank(`MAX(${rankOf("state")})`)}
       FROM samples WHERE folded = 0 AND at < @cutoff ${scope.where} GROUP BY 1, 2
     ON CONFLICT (backend_id, minute) DO UPDATE SET
       ${ROLLUP_COLUMNS.map((c) => `${c} = ${wavg(c)},`).join("\n       ")}
       running_max = MAX(COALESCE(sample_minutes.running_max, excluded.running_max), COALESCE(excluded.running_max, sample_minutes.running_max)),
       waiting_max = MAX(COALESCE(sample_minutes.waiting_max, excluded.waiting_max), COALESCE(excluded.waiting_max, sample_minutes.waiting_max)),
       worst_state = ${stateOfRank(`MAX(${rankOf("sample_minutes.worst_state")}, ${rankOf("excluded.worst_state")})`)},
       n = sample_minutes.n + excluded.n`,
  );
  const markFolded = client.prepare(`UPDATE samples SET folded = 1 WHERE folded = 0 AND at < @cutoff ${scope.where}`);
  const delRaw = client.prepare(`DELETE FROM samples WHERE at < @cutoff ${scope.where}`);
  const delReplay = client.prepare(`DELETE FROM replay_readings WHERE at < @cutoff ${scope.where}`);
  // A chunk goes once its newest record is past the cutoff (its older ones are filtered out when read).
  const delReplayChunks = client.prepare(`DELETE FROM replay_chunks WHERE last_at < @cutoff ${scope.where}`);
  const delRollups = client.prepare(`DELETE FROM sample_minutes WHERE minute < @cutoff ${scope.where}`);
  // Per width, so the (width_ms, start) index finds them (start + width_ms <= cutoff would scan the
  // table); the cutoff less the width computed here (a parameter in arithmetic is int4 on PostgreSQL).
  const delWindows = ROLLUP_WIDTHS_MS.map((w) => ({ w, st: client.prepare(`DELETE FROM sample_rollups WHERE width_ms = ${w} AND start <= @cutoff ${scope.where}`) }));
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
    for (const del of delWindows) del.st.run(params({ cutoff: rollupCutoff - del.w }));
    delReplay.run(params({ cutoff: replayCutoff }));
    delReplayChunks.run(params({ cutoff: replayCutoff }));
    // The record's rows folded into chunks: for the backends in scope (none for the pass over
    // removed ones, whose rows only age out), every backend when unscoped.
    const folding = !opts.scope ? null : "only" in opts.scope ? opts.scope.only : [];
    if (folding === null || folding.length > 0) foldReplayRows(client, { before: opts.now - REPLAY_FOLD_AFTER_MS, backends: folding });
    return { rolledMinutes: rolled, deletedSamples, deletedRollups };
  })();
}
