/**
 * Benchmark 3c: the replay record (issue 34). Input: the database the real watcher wrote during the
 * incident replay (bench/incident.ts): one backend polled every 5 s for a simulated day, whose record
 * is the real watcher's, folded into chunks by its own retention job (db/queries/replay.ts). Sizes
 * come from SQLite's dbstat (the tables and their indexes), per record and scaled to a week of 1000
 * backends; beside them the same records as unfolded rows, and what keeping the `samples` rows a
 * week instead would cost (the alternatives docs/decisions.md weighs). Time: that day tiled over 7
 * days of one backend, written as rows and folded as the retention job folds them, then the real
 * read (replayRows), the real replay (lib/check/replay.ts: every reading classified again, with the
 * window the watcher would have kept) with 60 s, and the advice, each timed end to end in-process.
 */
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { openDb } from "../db/client";
import { countReplayRows, FOLD_AFTER_MS, foldReplayRows, insertReplayRows, replayRows, replaySpan, type NewReplayRow } from "../db/queries/replay";
import { decodeRecord, encodeRecord } from "../lib/core/replay";
import { advise, replay } from "../lib/check/replay";
import { DEFAULTS, thresholdsOf } from "../lib/config";
import { percentile, round } from "./stats";

const DAY = 86_400_000;

export interface ReplayBenchResult {
  sourceRecords: number;
  pollIntervalSeconds: number;
  /** The record as kept (chunks, and the rows not folded yet), tables and indexes, per record. */
  bytesPerRecord: number;
  /** The rows as the watcher writes them, before folding (what every record cost before the chunks). */
  bytesPerRow: number;
  /** Chunks the day was folded into, and the records they hold (the rest are rows left unfolded). */
  chunks: number;
  chunkedRecords: number;
  /** samples and its indexes, per sample, from the same run (what keeping samples a week would cost). */
  bytesPerSample: number;
  weekBytesPerBackend: number;
  weekBytes1000Backends: number;
  weekSampleBytes1000Backends: number;
  sevenDays: { records: number; readMs: { p50: number; max: number }; replayMs: { p50: number; max: number }; adviseMs: { p50: number; max: number }; totalMs: { p50: number; max: number }; cpuMs: { p50: number; max: number }; runs: number };
}

function bytesOf(sqlite: Database.Database, names: string[]): number {
  const rows = sqlite.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name").all() as Array<{ name: string; bytes: number }>;
  return rows.filter((r) => names.includes(r.name)).reduce((s, r) => s + r.bytes, 0);
}

export function runReplayBench(opts: { dayDbPath: string; workDir: string; quick?: boolean }): ReplayBenchResult {
  // 1. Bytes per record, from the watcher's own record as it left it (rows folded into chunks by its
  // own retention job, the last minutes' rows not yet), in a VACUUMed copy (pages as full as they
  // get); beside it the same records as unfolded rows, what every record cost before the chunks.
  const copy = path.join(opts.workDir, "replay-size.db");
  fs.copyFileSync(opts.dayDbPath, copy);
  const sized = new Database(copy);
  sized.exec("VACUUM");
  const ids = sized.prepare("SELECT backend_id AS id FROM replay_readings UNION SELECT backend_id FROM replay_chunks").all() as Array<{ id: string }>;
  if (ids.length !== 1) throw new Error(`the incident database holds the record of ${ids.length} backends, not one (was it written by a watcher from before the record?)`);
  const span = replaySpan(sized, ids[0].id)!;
  const samples = (sized.prepare("SELECT COUNT(*) AS n FROM samples").get() as { n: number }).n;
  const rowTables = ["replay_readings", "replay_readings_backend_at", "replay_readings_at"];
  const chunkTables = ["replay_chunks", "replay_chunks_backend_last", "replay_chunks_last"];
  const perRecord = bytesOf(sized, [...rowTables, ...chunkTables]) / span.n;
  const perSample = bytesOf(sized, ["samples", "samples_backend_at", "samples_at", "samples_unfolded"]) / samples;
  const chunks = sized.prepare("SELECT COUNT(*) AS c, COALESCE(SUM(n), 0) AS n FROM replay_chunks").get() as { c: number; n: number };
  const dayRecords = replayRows(sized, ids[0].id, span.from, span.to);
  sized.exec("DELETE FROM replay_chunks; DELETE FROM replay_readings;");
  sized.transaction(() => insertReplayRows(sized, dayRecords.map((r) => ({ backendId: ids[0].id, at: r.reading.at, state: r.state, recommended: r.recommended, reading: encodeRecord(r.reading) }))))();
  sized.exec("VACUUM");
  const perRow = bytesOf(sized, rowTables) / span.n;
  sized.close();
  const rows = dayRecords.map((r) => ({ at: r.reading.at, state: r.state, recommended: r.recommended ? 1 : 0, reading: encodeRecord(r.reading) }));
  const interval = (span.to - span.from) / (span.n - 1) / 1000;
  const perWeek = (7 * DAY) / (interval * 1000);

  // 2. Seven days of one backend: the day tiled, each copy's times (and its probes') shifted.
  const h = openDb(path.join(opts.workDir, "replay-week.db"));
  const end = Date.now();
  const blockMs = span.to - span.from + interval * 1000;
  const blocks = Math.ceil((7 * DAY) / blockMs);
  const start = end - blocks * blockMs;
  for (let b = 0; b < blocks; b++) {
    const shift = start + b * blockMs - span.from;
    const batch: NewReplayRow[] = [];
    for (const r of rows) {
      const at = r.at + shift;
      if (at > end) continue;
      const reading = decodeRecord(r.reading, at);
      if (reading.probe) reading.probe.at += shift;
      batch.push({ backendId: "b000", at, state: r.state, recommended: r.recommended === 1, reading: encodeRecord(reading) });
    }
    h.sqlite.transaction(() => insertReplayRows(h.sqlite, batch))();
  }
  // Folded as the retention job leaves them: all but the last minute's rows.
  while (h.sqlite.transaction(() => foldReplayRows(h.sqlite, { before: end - FOLD_AFTER_MS, backends: ["b000"] }))() > 0);
  const from = end - 7 * DAY;
  const configured = thresholdsOf(DEFAULTS);
  const runs = opts.quick ? 2 : 5;
  const t = { read: [] as number[], replay: [] as number[], advise: [] as number[], total: [] as number[], cpu: [] as number[] };
  let records = 0;
  for (let i = 0; i < runs; i++) {
    // This process's CPU beside the wall time: on a shared machine the wall time is also the others' load.
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    records = countReplayRows(h.sqlite, "b000", from, end);
    const got = replayRows(h.sqlite, "b000", from, end);
    const t1 = performance.now();
    replay({
      backendId: "b000",
      from,
      to: end,
      rows: got,
      candidate: { stuckAfterSeconds: 60, startupGraceSeconds: configured.startupGraceSeconds ?? 600, pollIntervalSeconds: null, minStuckWindowSeconds: null },
      configured,
    });
    const t2 = performance.now();
    advise({ backendId: "b000", from, to: end, rows: got, url: "http://127.0.0.1:8000", current: { ...configured, startupGraceSeconds: configured.startupGraceSeconds ?? 600, probeTimeoutSeconds: DEFAULTS.probeTimeoutSeconds, pollIntervalSeconds: DEFAULTS.pollIntervalSeconds } });
    const t3 = performance.now();
    t.read.push(t1 - t0);
    t.replay.push(t2 - t1);
    t.advise.push(t3 - t2);
    t.total.push(t3 - t0);
    const c = process.cpuUsage(c0);
    t.cpu.push((c.user + c.system) / 1000);
  }
  h.close();
  const stat = (xs: number[]) => ({ p50: round(percentile(xs, 50), 1), max: round(Math.max(...xs), 1) });
  return {
    sourceRecords: span.n,
    pollIntervalSeconds: round(interval, 2),
    bytesPerRecord: round(perRecord, 1),
    bytesPerRow: round(perRow, 1),
    chunks: chunks.c,
    chunkedRecords: chunks.n,
    bytesPerSample: round(perSample, 1),
    weekBytesPerBackend: Math.round(perRecord * perWeek),
    weekBytes1000Backends: Math.round(perRecord * perWeek * 1000),
    weekSampleBytes1000Backends: Math.round(perSample * perWeek * 1000),
    sevenDays: { records, readMs: stat(t.read), replayMs: stat(t.replay), adviseMs: stat(t.advise), totalMs: stat(t.total), cpuMs: stat(t.cpu), runs },
  };
}
