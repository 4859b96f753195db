/**
 * The replay record's SQL: a row per reading in `replay_readings`, written by the watcher with each
 * sample, and folded by the retention job into `replay_chunks` (a row per backend and stretch of
 * records, encodeChunk in lib/core/replay.ts, deflated), which a replay reads with the rows not
 * folded yet; both trimmed to history.replayDays. Plain SQL on a better-sqlite3 handle, not
 * drizzle: the CLI (`stepwatch replay`, lib/cli/replay.ts) reads the same rows from the server's
 * file without bundling the ORM.
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { BackendState } from "../../lib/core/states";
import { decodeChunk, decodeRecord, encodeChunk, encodeRecord, type ReplayRow } from "../../lib/core/replay";
import type { Reading, Verdict } from "../../lib/core/types";

/** What these queries need of a connection: better-sqlite3's `Database` (and drizzle's `$client`). */
export interface SqlHandle {
  prepare(sql: string): {
    all(...params: unknown[]): unknown[];
    get(...params: unknown[]): unknown;
    run(...params: unknown[]): { changes: number };
    /** Many rows of a one-row INSERT in few statements: PostgreSQL's client only (db/pg/sync-client.ts). */
    runMany?(rows: readonly unknown[][]): { changes: number };
  };
  transaction<T>(fn: () => T): () => T;
}

export interface NewReplayRow {
  backendId: string;
  at: number;
  state: BackendState;
  recommended: boolean;
  /** encodeRecord(reading): the reading's stored text, the same string as its sample's; read back as its replayRecord. */
  reading: string;
}

/** The record of one reading and the verdict the watcher drew from it (`text`: the reading's encodeRecord, shared with its sample row). */
export function replayRow(backendId: string, reading: Reading, verdict: Pick<Verdict, "state" | "restartRecommended">, text: string = encodeRecord(reading)): NewReplayRow {
  return { backendId, at: reading.at, state: verdict.state, recommended: verdict.restartRecommended, reading: text };
}

const INSERT = "INSERT INTO replay_readings (backend_id, at, state, recommended, reading) VALUES (?, ?, ?, ?, ?)";
const statements = new WeakMap<object, ReturnType<SqlHandle["prepare"]>>();

/** In the caller's transaction (the watcher's flush: one per poll round). */
export function insertReplayRows(client: SqlHandle, rows: readonly NewReplayRow[]): void {
  if (rows.length === 0) return;
  let insert = statements.get(client);
  if (!insert) statements.set(client, (insert = client.prepare(INSERT)));
  if (insert.runMany) insert.runMany(rows.map((r) => [r.backendId, r.at, r.state, r.recommended ? 1 : 0, r.reading]));
  else for (const r of rows) insert.run(r.backendId, r.at, r.state, r.recommended ? 1 : 0, r.reading);
}

/** At most this many records a chunk, and folded per backend in one retention pass (bounds the pass: ~10 µs a record). */
export const MAX_CHUNK_RECORDS = 720;
/** Rows younger than this are left to the next pass (the watcher may still be writing that second). */
export const FOLD_AFTER_MS = 60_000;

function packChunk(rows: readonly ReplayRow[]): string {
  return deflateRawSync(Buffer.from(encodeChunk(rows))).toString("base64");
}

function unpackChunk(data: string, firstAt: number): ReplayRow[] {
  return decodeChunk(inflateRawSync(Buffer.from(data, "base64")).toString(), firstAt);
}

/**
 * Folds each backend's rows older than `before` into chunks (at most MAX_CHUNK_RECORDS rows per
 * backend per call, oldest first: a backlog, such as a database from before the chunks, goes over
 * several passes and stays readable meanwhile). `backends`: those ids, or every backend (null).
 * In the caller's transaction (applyRetention's). Returns the rows folded.
 */
export function foldReplayRows(client: SqlHandle, opts: { before: number; backends: readonly string[] | null }): number {
  const ids =
    opts.backends ??
    (client.prepare("SELECT DISTINCT backend_id AS id FROM replay_readings WHERE at < ?").all(opts.before) as Array<{ id: string }>).map((r) => r.id);
  const select = client.prepare("SELECT id, at, state, recommended, reading FROM replay_readings WHERE backend_id = ? AND at < ? ORDER BY at, id LIMIT ?");
  const insert = client.prepare("INSERT INTO replay_chunks (backend_id, first_at, last_at, n, data) VALUES (?, ?, ?, ?, ?)");
  const remove = client.prepare("DELETE FROM replay_readings WHERE id IN (SELECT CAST(value AS INTEGER) FROM json_each(?))");
  let folded = 0;
  for (const id of ids) {
    const rows = select.all(id, opts.before, MAX_CHUNK_RECORDS) as Array<{ id: number; at: number; state: BackendState; recommended: number; reading: string }>;
    if (rows.length === 0) continue;
    const records = decodeRows(rows);
    if (records.length > 0) insert.run(id, records[0].reading.at, records.at(-1)!.reading.at, records.length, packChunk(records));
    // A row that does not parse is unreadable either way: it goes with the others.
    remove.run(JSON.stringify(rows.map((r) => r.id)));
    folded += rows.length;
  }
  return folded;
}

function decodeRows(rows: Array<{ at: number; state: BackendState; recommended: number; reading: string }>): ReplayRow[] {
  const out: ReplayRow[] = [];
  for (const r of rows) {
    try {
      out.push({ reading: decodeRecord(r.reading, r.at), state: r.state, recommended: r.recommended === 1 });
    } catch {
      // A hand-edited or cut row: one reading less, never a crash.
    }
  }
  return out;
}

type ChunkRow = { first_at: number; last_at: number; n: number; data: string };

function chunksOf(client: SqlHandle, backendId: string, from: number, to: number): ChunkRow[] {
  return client
    .prepare("SELECT first_at, last_at, n, data FROM replay_chunks WHERE backend_id = ? AND last_at >= ? AND first_at <= ? ORDER BY first_at, id")
    .all(backendId, from, to) as ChunkRow[];
}

/** A chunk's records in [from, to]; a chunk that does not decode is skipped, never thrown on. */
function recordsIn(c: ChunkRow, from: number, to: number): ReplayRow[] {
  let rows: ReplayRow[];
  try {
    rows = unpackChunk(c.data, c.first_at);
  } catch {
    return [];
  }
  return c.first_at >= from && c.last_at <= to ? rows : rows.filter((r) => r.reading.at >= from && r.reading.at <= to);
}

/** How many records a backend has in [from, to] (a replay refuses a period past its cap before reading it). */
export function countReplayRows(client: SqlHandle, backendId: string, from: number, to: number): number {
  const row = client.prepare("SELECT COUNT(*) AS n FROM replay_readings WHERE backend_id = ? AND at >= ? AND at <= ?").get(backendId, from, to) as { n: number };
  const whole = client.prepare("SELECT COALESCE(SUM(n), 0) AS n FROM replay_chunks WHERE backend_id = ? AND first_at >= ? AND last_at <= ?").get(backendId, from, to) as { n: number };
  let n = row.n + whole.n;
  // A chunk cut by an end of the period is opened (two at most).
  const cut = client
    .prepare("SELECT first_at, last_at, n, data FROM replay_chunks WHERE backend_id = ? AND last_at >= ? AND first_at <= ? AND (first_at < ? OR last_at > ?)")
    .all(backendId, from, to, from, to) as ChunkRow[];
  for (const c of cut) n += recordsIn(c, from, to).length;
  return n;
}

/** The records of a backend in [from, to], oldest first: the folded chunks, then the rows not folded yet. */
export function replayRows(client: SqlHandle, backendId: string, from: number, to: number): ReplayRow[] {
  const out: ReplayRow[] = [];
  for (const c of chunksOf(client, backendId, from, to)) for (const r of recordsIn(c, from, to)) out.push(r);
  const rows = client
    .prepare("SELECT at, state, recommended, reading FROM replay_readings WHERE backend_id = ? AND at >= ? AND at <= ? ORDER BY at, id")
    .all(backendId, from, to) as Array<{ at: number; state: BackendState; recommended: number; reading: string }>;
  for (const r of decodeRows(rows)) out.push(r);
  // Folded records are older than the rows left, unless the clock went back: then in time order (a stable sort).
  for (let i = 1; i < out.length; i++) {
    if (out[i].reading.at < out[i - 1].reading.at) return out.sort((a, b) => a.reading.at - b.reading.at);
  }
  return out;
}

/** The oldest and newest record of a backend (null when it has none): what a replay can cover. */
export function replaySpan(client: SqlHandle, backendId: string): { from: number; to: number; n: number } | null {
  const a = client.prepare("SELECT MIN(at) AS a, MAX(at) AS b, COUNT(*) AS n FROM replay_readings WHERE backend_id = ?").get(backendId) as { a: number | null; b: number | null; n: number };
  const c = client.prepare("SELECT MIN(first_at) AS a, MAX(last_at) AS b, COALESCE(SUM(n), 0) AS n FROM replay_chunks WHERE backend_id = ?").get(backendId) as { a: number | null; b: number | null; n: number };
  const lo = Math.min(a.a ?? Infinity, c.a ?? Infinity);
  const hi = Math.max(a.b ?? -Infinity, c.b ?? -Infinity);
  return Number.isFinite(lo) && Number.isFinite(hi) ? { from: lo, to: hi, n: a.n + c.n } : null;
}
