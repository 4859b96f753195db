/**
 * The replay record's SQL (table `replay_readings`, db/schema.ts): written by the watcher with each
 * sample, read by a replay, trimmed to history.replayDays by the retention job. Plain SQL on a
 * better-sqlite3 handle, not drizzle: the CLI (`stepwatch replay`, lib/cli/replay.ts) reads the
 * same rows from the server's file without bundling the ORM.
 */
import type { BackendState } from "../../lib/core/states";
import { decodeRecord, encodeRecord, type ReplayRow } from "../../lib/core/replay";
import type { Reading, Verdict } from "../../lib/core/types";

/** What these queries need of a connection: better-sqlite3's `Database` (and drizzle's `$client`). */
export interface SqlHandle {
  prepare(sql: string): { all(...params: unknown[]): unknown[]; get(...params: unknown[]): unknown; run(...params: unknown[]): { changes: number } };
  transaction<T>(fn: () => T): () => T;
}

export interface NewReplayRow {
  backendId: string;
  at: number;
  state: BackendState;
  recommended: boolean;
  /** encodeRecord(reading): the classifier's part of it, names shortened. */
  reading: string;
}

/** The record of one reading and the verdict the watcher drew from it. */
export function replayRow(backendId: string, reading: Reading, verdict: Pick<Verdict, "state" | "restartRecommended">): NewReplayRow {
  return { backendId, at: reading.at, state: verdict.state, recommended: verdict.restartRecommended, reading: encodeRecord(reading) };
}

const INSERT = "INSERT INTO replay_readings (backend_id, at, state, recommended, reading) VALUES (?, ?, ?, ?, ?)";
const statements = new WeakMap<object, ReturnType<SqlHandle["prepare"]>>();

/** In the caller's transaction (the watcher's flush: one per poll round). */
export function insertReplayRows(client: SqlHandle, rows: readonly NewReplayRow[]): void {
  if (rows.length === 0) return;
  let insert = statements.get(client);
  if (!insert) statements.set(client, (insert = client.prepare(INSERT)));
  for (const r of rows) insert.run(r.backendId, r.at, r.state, r.recommended ? 1 : 0, r.reading);
}

/** How many records a backend has in [from, to] (a replay refuses a period past its cap before reading it). */
export function countReplayRows(client: SqlHandle, backendId: string, from: number, to: number): number {
  const row = client.prepare("SELECT COUNT(*) AS n FROM replay_readings WHERE backend_id = ? AND at >= ? AND at <= ?").get(backendId, from, to) as { n: number };
  return row.n;
}

/** The records of a backend in [from, to], oldest first; a row whose JSON does not parse is skipped, never thrown on. */
export function replayRows(client: SqlHandle, backendId: string, from: number, to: number): ReplayRow[] {
  const rows = client
    .prepare("SELECT at, state, recommended, reading FROM replay_readings WHERE backend_id = ? AND at >= ? AND at <= ? ORDER BY at, id")
    .all(backendId, from, to) as Array<{ at: number; state: BackendState; recommended: number; reading: string }>;
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

/** The oldest and newest record of a backend (null when it has none): what a replay can cover. */
export function replaySpan(client: SqlHandle, backendId: string): { from: number; to: number; n: number } | null {
  const row = client.prepare("SELECT MIN(at) AS a, MAX(at) AS b, COUNT(*) AS n FROM replay_readings WHERE backend_id = ?").get(backendId) as { a: number | null; b: number | null; n: number };
  return row.a === null || row.b === null ? null : { from: row.a, to: row.b, n: row.n };
}
