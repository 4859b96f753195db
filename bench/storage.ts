/**
 * Benchmark 3b and 4b: SQLite bytes per backend per day, and the 7-day history query.
 *
 * Input: the database the real watcher wrote during the incident replay (bench/incident.ts), i.e.
 * real sample rows (with the Reading JSON) of one backend polled every 5 s. Sizes come from
 * SQLite's own dbstat table (pages of each table and index), so they are what the file holds.
 * Rollup: the real retention job (db/queries/history.ts applyRetention) folds every raw sample into
 * per-minute rows, as it does once samples are older than retention.rawHours.
 * History: the same rows tiled over 7 days ending now, for one backend, inserted with the real
 * insertSamples; retention then leaves the last 48 h raw and the rest as rollups, and the real
 * history view (lib/api/snapshot.ts historyOf, which GET /api/backends/{id}/history serves)
 * is timed over 7 days, 24 h and 1 h.
 */
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { openDb } from "../db/client";
import { applyRetention } from "../db/queries/history";
import { insertSamples, type NewSample } from "../db/queries/readings";
import { historyOf } from "../lib/api/snapshot";
import type { HistoryResponse } from "../lib/api/types";
import { DEFAULTS } from "../lib/config";
import { percentile, round } from "./stats";

const HOUR = 3600_000;
const DAY = 24 * HOUR;

function tableBytes(sqlite: Database.Database): Record<string, number> {
  const rows = sqlite.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name").all() as Array<{ name: string; bytes: number }>;
  return Object.fromEntries(rows.map((r) => [r.name, r.bytes]));
}

const RAW = ["samples", "samples_backend_at", "samples_at"];
const ROLLUP = [
  "sample_minutes",
  "sqlite_autoindex_sample_minutes_1",
  "sample_minutes_minute",
  "sample_rollups",
  "sqlite_autoindex_sample_rollups_1",
  "sample_rollups_start",
];
const sum = (t: Record<string, number>, names: string[]) => names.reduce((s, n) => s + (t[n] ?? 0), 0);

export interface StorageResult {
  sourceHours: number;
  samples: number;
  pollIntervalSeconds: number;
  rawBytesPerSample: number;
  /** While samples are raw (the last retention.rawHours). */
  rawBytesPerBackendPerDay: number;
  /** After the rollup: what a day costs for retention.rollupDays. */
  rollupBytesPerBackendPerDay: number;
  transitionsBytesPerDay: number;
  /** Steady state per backend: rawHours of raw samples + rollupDays of rollups. */
  steadyStateBytesPerBackend: number;
  /** Same at a 1 s poll interval (raw scales with the poll rate; rollups do not). */
  rawBytesPerBackendPerDayAt1s: number;
  history: {
    rows: { raw: number; rollupMinutes: number; rollupWindows?: number };
    sevenDaysMs: HistoryTiming;
    oneDayMs: HistoryTiming;
    oneHourMs: HistoryTiming;
  };
  /** The 7-day database (backend "b000"), for the dashboard benchmark. */
  historyDbPath: string;
}

/** Runs of each history timing (here and over HTTP in bench/dashboard.ts): the p99 of 30 was their slowest, one GC pause; of 200 it is the 2nd slowest. */
export const HISTORY_RUNS = 200;

/** In-process times of historyOf, and (since the columnar form) the JSON's bytes and one JSON.stringify. */
type HistoryTiming = { p50: number; p99: number; points: number; jsonBytes?: number; stringifyMs?: number };

/** The query and its wire form (historyOf: rows -> columns), timed; then the JSON's size and the time to serialize it. */
function timeIt(f: () => HistoryResponse, runs: number): { p50: number; p99: number; points: number; jsonBytes: number; stringifyMs: number } {
  const ms: number[] = [];
  let last: HistoryResponse | null = null;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    last = f();
    ms.push(performance.now() - t0);
  }
  const t0 = performance.now();
  const json = JSON.stringify(last);
  const stringifyMs = performance.now() - t0;
  return { p50: round(percentile(ms, 50), 2), p99: round(percentile(ms, 99), 2), points: last?.count ?? 0, jsonBytes: Buffer.byteLength(json), stringifyMs: round(stringifyMs, 2) };
}

export function runStorageBench(opts: { dayDbPath: string; workDir: string; quick?: boolean }): StorageResult {
  // 1. Bytes per day, from the replay's own database.
  const copy = path.join(opts.workDir, "size.db");
  fs.copyFileSync(opts.dayDbPath, copy);
  const h = openDb(copy);
  const span = h.sqlite.prepare("SELECT COUNT(*) AS n, MIN(at) AS first, MAX(at) AS last FROM samples").get() as { n: number; first: number; last: number };
  const hours = (span.last - span.first) / HOUR;
  const perDay = DAY / (span.last - span.first);
  const before = tableBytes(h.sqlite);
  const rawBytes = sum(before, RAW);
  applyRetention(h.db, { now: span.last + DEFAULTS.retention.rawHours * HOUR + 60_000, rawHours: DEFAULTS.retention.rawHours, rollupDays: DEFAULTS.retention.rollupDays });
  h.sqlite.exec("VACUUM");
  const after = tableBytes(h.sqlite);
  const rollupBytes = sum(after, ROLLUP);
  const transitionsBytes = sum(after, ["transitions", "transitions_target_at"]);
  const rows = h.sqlite.prepare("SELECT * FROM samples").all();
  h.close();

  // 2. Seven days of one backend ending now: tile the replay's rows (read back from the copy
  // made before the rollup).
  const src = new Database(opts.dayDbPath, { readonly: true });
  const sampleRows = src.prepare("SELECT * FROM samples ORDER BY at, id").all() as Array<Record<string, unknown>>;
  src.close();
  void rows;
  const historyDbPath = path.join(opts.workDir, "history.db");
  const hist = openDb(historyDbPath);
  const end = Date.now();
  const blockMs = span.last - span.first + 5000;
  const blocks = Math.ceil((7 * DAY) / blockMs);
  const start = end - blocks * blockMs;
  const toNew = (r: Record<string, unknown>, shift: number): NewSample => ({
    backendId: "b000",
    at: (r.at as number) - span.first + shift,
    state: r.state as NewSample["state"],
    outcome: r.outcome as string,
    error: (r.error as string | null) ?? null,
    latencyMs: r.latency_ms as number,
    running: r.running as number | null,
    waiting: r.waiting as number | null,
    steps: r.steps as number | null,
    promptTokens: r.prompt_tokens as number | null,
    generationTokens: r.generation_tokens as number | null,
    finishedRequests: r.finished_requests as number | null,
    kvCacheUsage: r.kv_cache_usage as number | null,
    processStartTime: r.process_start_time as number | null,
    stepsPerSecond: r.steps_per_second as number | null,
    generationTokensPerSecond: r.generation_tokens_per_second as number | null,
    promptTokensPerSecond: r.prompt_tokens_per_second as number | null,
    probeOk: r.probe_ok === null ? null : r.probe_ok === 1,
    probeLatencyMs: r.probe_latency_ms as number | null,
    reading: JSON.parse(r.reading as string),
  });
  for (let b = 0; b < blocks; b++) {
    const shift = start + b * blockMs;
    insertSamples(hist.db, sampleRows.map((r) => toNew(r, shift)).filter((r) => r.at <= end));
  }
  applyRetention(hist.db, { now: end, rawHours: DEFAULTS.retention.rawHours, rollupDays: DEFAULTS.retention.rollupDays });
  const counts = {
    raw: (hist.sqlite.prepare("SELECT COUNT(*) AS n FROM samples").get() as { n: number }).n,
    rollupMinutes: (hist.sqlite.prepare("SELECT COUNT(*) AS n FROM sample_minutes").get() as { n: number }).n,
    rollupWindows: (hist.sqlite.prepare("SELECT COUNT(*) AS n FROM sample_rollups").get() as { n: number }).n,
  };
  const runs = opts.quick ? 10 : HISTORY_RUNS;
  const history = {
    rows: counts,
    sevenDaysMs: timeIt(() => historyOf(hist.db, "b000", end - 7 * DAY, end), runs),
    oneDayMs: timeIt(() => historyOf(hist.db, "b000", end - DAY, end), runs),
    oneHourMs: timeIt(() => historyOf(hist.db, "b000", end - HOUR, end), runs),
  };
  hist.sqlite.pragma("wal_checkpoint(TRUNCATE)");
  hist.close();

  const rawPerDay = rawBytes * perDay;
  const rollupPerDay = rollupBytes * perDay;
  const interval = span.n > 1 ? (span.last - span.first) / (span.n - 1) / 1000 : 5;
  return {
    sourceHours: round(hours, 2),
    samples: span.n,
    pollIntervalSeconds: round(interval, 2),
    rawBytesPerSample: round(rawBytes / span.n, 1),
    rawBytesPerBackendPerDay: Math.round(rawPerDay),
    rollupBytesPerBackendPerDay: Math.round(rollupPerDay),
    transitionsBytesPerDay: Math.round(transitionsBytes * perDay),
    steadyStateBytesPerBackend: Math.round((rawPerDay * DEFAULTS.retention.rawHours) / 24 + rollupPerDay * DEFAULTS.retention.rollupDays),
    rawBytesPerBackendPerDayAt1s: Math.round((rawPerDay * interval) / 1),
    history,
    historyDbPath,
  };
}
