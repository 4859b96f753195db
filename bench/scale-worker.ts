/**
 * One watcher under load, in a process of its own so its CPU and memory are its own (bench/scale.ts
 * starts it). The real watcher loop (lib/watcher startWatcher, real observe, a temp SQLite file)
 * polls the given simulator URLs. Two thin wrappers measure poll lag, how late a read starts
 * against its slot: the LoopClock's sleep notes the time it was asked to wake at (runEvery sleeps
 * exactly until the next slot), and observe notes when the read starts. A timer's callback and
 * the microtasks it starts (runEvery's continuation, poll, observe) run before the next timer's,
 * so the wake time noted last belongs to the read that starts.
 *
 *   node --import tsx bench/scale-worker.ts <spec.json>   -> prints one JSON line (ScaleRun)
 *
 * Where the watcher's CPU and memory go, for a one-off (not in a bench run: the profiler costs CPU):
 * STEPWATCH_BENCH_CPU_PROFILE=<file.cpuprofile> profiles the measured window (open it in Chrome's
 * DevTools or speedscope), STEPWATCH_BENCH_HEAP_SNAPSHOT=<file.heapsnapshot> writes the heap at its end.
 */
import diagnostics from "node:diagnostics_channel";
import fs from "node:fs";
import { Session } from "node:inspector";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import v8 from "node:v8";
import { Worker } from "node:worker_threads";
import { openDb } from "../db/client";
import type { SyncPgClient } from "../db/pg/sync-client";
import type { DbHandle } from "../db/types";
import type { Leadership } from "../lib/cluster/leadership";
import { openPgReplica } from "../lib/cluster/replica";
import { seenLate } from "../lib/check/late";
import { observe } from "../lib/check/observe";
import { parseConfig } from "../lib/config";
import { startWatcher } from "../lib/watcher";
import { tuneHeapForWatcher } from "../lib/watcher/heap";
import { readThreadsFor } from "../lib/watcher/read-threads";
import { realClock, type LoopClock } from "../lib/watcher/loop";
import { percentile, round } from "./stats";

export interface ScaleSpec {
  urls: string[];
  intervalSeconds: number;
  warmupSeconds: number;
  measureSeconds: number;
  /**
   * Print `{"window":"start"}` when the measured window opens, so a parent can read other
   * processes' CPU over the same window (bench/peer.ts, side by side with Prometheus).
   */
  announceWindow?: boolean;
  /** The config's readThreads ("auto", what ships, by default: lib/watcher/read-threads.ts). */
  readThreads?: "auto" | number;
  /** lib/watcher/read-worker.ts bundled (bench/child.ts `bundled`): the read threads' script. */
  readWorkerEntry: string;
  /**
   * A replica on PostgreSQL instead of the SQLite file (bench/replicas.ts): the store of
   * db/pg/store.ts with its connection thread bundled (`syncWorkerEntry`), and the lease kept as
   * lib/runtime.ts keeps it, so the watcher writes only while it leads.
   */
  postgres?: { url: string; replicaId: string; syncWorkerEntry: string };
}

export interface ScaleRun {
  backends: number;
  intervalSeconds: number;
  measureSeconds: number;
  reads: number;
  expectedReads: number;
  /** CPU time of the watcher process / wall time, in cores (1 = one full core). */
  cpuCores: number;
  rssMb: { end: number; max: number };
  heapUsedMb: number;
  /**
   * Where the RSS goes, at the end of the window: the V8 heap (reserved / in use), memory outside
   * it (Buffers, undici's parser), and the RSS of this process before the watcher started (node,
   * tsx, the modules, SQLite open): what 0 backends cost.
   */
  memoryMb?: { baselineRss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
  pollLagMs: { p50: number; p99: number; max: number };
  readLatencyMs: { p50: number; p99: number };
  eventLoopDelayMs: { p50: number; p99: number; max: number };
  states: Record<string, number>;
  /** Backends with at least one read in the window that ended in a verdict other than "unknown". */
  backendsJudged: number;
  /** The config's readThreads, and the read threads the watcher ran (lib/watcher/read-pool.ts). */
  readThreadsAsked?: "auto" | number;
  readThreads?: number;
  /** Set by bench/scale.ts when the worker ran with node flags (a heap cap). */
  nodeFlags?: string[];
  /** The V8 settings lib/watcher/heap.ts made at start (none with STEPWATCH_V8_TUNING=off). */
  v8Flags?: readonly string[];
  failedReads: number;
  /** Reads with a timeout the watcher saw late (lib/check/late.ts): kept, not judged. */
  readsSeenLate?: number;
  /**
   * TCP connections the watcher opened in the window, and requests that failed on a connection
   * (undici's diagnostics channels): a read that reuses a keep-alive connection opens none; a
   * stale one the server closed under it fails once and is asked again (lib/check/read.ts get).
   */
  connectionsOpened?: number;
  requestErrors?: number;
  /** Failed reads by outcome, with the first error text seen for each. */
  failedOutcomes: Record<string, { count: number; example: string }>;
  dbBytes: number;
  /** Statements the store ran in the window (better-sqlite3's run/get/all; on PostgreSQL every statement sent, BEGIN and COMMIT included). */
  statements?: number;
  /** On PostgreSQL: whether this replica led at the end of the window. */
  leading?: boolean;
}

interface BenchStore {
  db: DbHandle;
  lease: Leadership | null;
  /** Statements run so far. */
  statements(): number;
  bytes(): number;
  close(): Promise<void>;
}

/** The SQLite file as the server opens it, or a replica on PostgreSQL with its lease. */
async function openStore(spec: ScaleSpec, dir: string): Promise<BenchStore> {
  if (!spec.postgres) {
    const db = openDb(path.join(dir, "scale.db"));
    // Counted on better-sqlite3's Statement (every query of db/queries runs through one).
    let n = 0;
    const proto = Object.getPrototypeOf(db.sqlite.prepare("SELECT 1")) as Record<string, (...a: unknown[]) => unknown>;
    for (const m of ["run", "get", "all", "iterate"]) {
      const original = proto[m];
      proto[m] = function (this: unknown, ...a: unknown[]) {
        n++;
        return original.apply(this, a);
      };
    }
    return {
      db,
      lease: null,
      statements: () => n,
      bytes: () => fs.statSync(db.path).size + (fs.existsSync(`${db.path}-wal`) ? fs.statSync(`${db.path}-wal`).size : 0),
      close: async () => db.close(),
    };
  }
  const { url, replicaId, syncWorkerEntry } = spec.postgres;
  const { db, leadership } = await openPgReplica(url, replicaId, { spawnWorker: (options) => new Worker(syncWorkerEntry, options) });
  const client = db.sqlite as unknown as SyncPgClient;
  return {
    db,
    lease: leadership,
    statements: () => client.sent,
    bytes: () => Number((client.query("SELECT pg_database_size(current_database()) AS n", [], "object").rows[0] as { n: number }).n),
    close: async () => {
      await leadership.stop();
      db.close();
    },
  };
}

/** Starts V8's sampling profiler; the function returned stops it and writes the profile to `file`. */
async function startProfile(file: string | undefined): Promise<(() => Promise<void>) | null> {
  if (!file) return null;
  const session = new Session();
  session.connect();
  const post = (method: string) =>
    new Promise<unknown>((resolve, reject) => session.post(method, (err, res) => (err ? reject(err) : resolve(res))));
  await post("Profiler.enable");
  await post("Profiler.start");
  return async () => {
    const { profile } = (await post("Profiler.stop")) as { profile: unknown };
    fs.writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

async function main(): Promise<void> {
  // As lib/runtime.ts does for the server: the benchmark measures the watcher as it ships.
  const v8Flags = tuneHeapForWatcher();
  const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8")) as ScaleSpec;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-scale-"));
  const store = await openStore(spec, dir);
  const db = store.db;
  const baselineRss = process.memoryUsage().rss;
  const config = parseConfig(
    { pollIntervalSeconds: spec.intervalSeconds, readThreads: spec.readThreads ?? "auto", backends: spec.urls.map((url, i) => ({ id: `b${String(i).padStart(4, "0")}`, url })) },
    "bench",
    { env: {} },
  );
  const intervalMs = spec.intervalSeconds * 1000;
  let measuring = false;
  const lags: number[] = [];
  const latencies: number[] = [];
  const states: Record<string, number> = {};
  let reads = 0;
  let failed = 0;
  let seenLateReads = 0;
  const failedOutcomes: ScaleRun["failedOutcomes"] = {};
  const judged = new Set<string>();
  let wokeFor: number | null = null;
  const clock: LoopClock = {
    now: realClock.now,
    sleep: (ms, signal) => {
      const due = Date.now() + ms;
      return realClock.sleep(ms, signal).then(() => {
        wokeFor = due;
      });
    },
  };
  const timed: typeof observe = async (target, history, ctx) => {
    const t = Date.now();
    const due = wokeFor;
    wokeFor = null;
    const out = await observe(target, history, ctx);
    // A loop's first read has no slot before it (it starts at once).
    if (measuring && due !== null) {
      lags.push(Math.max(0, t - due));
      latencies.push(out.reading.latencyMs);
      reads++;
      if (out.reading.outcome !== "ok") {
        failed++;
        const f = (failedOutcomes[out.reading.outcome] ??= { count: 0, example: out.reading.error ?? "" });
        f.count++;
      }
      if (seenLate(out.reading)) seenLateReads++;
      states[out.verdict.state] = (states[out.verdict.state] ?? 0) + 1;
      if (out.verdict.state !== "unknown") judged.add(target.url);
    }
    return out;
  };
  let connections = 0;
  let requestErrors = 0;
  diagnostics.subscribe("undici:client:connected", () => {
    if (measuring) connections++;
  });
  diagnostics.subscribe("undici:request:error", () => {
    if (measuring) requestErrors++;
  });
  const watcher = startWatcher({
    config,
    db: db.db,
    ...(store.lease && { leader: store.lease }),
    clock,
    observe: timed,
    log: (m) => process.stderr.write(`${m}\n`),
    // The clock is wrapped (poll lag), so the watcher would run no read thread of its own accord:
    // the count is the config's, as lib/runtime's watcher takes it (lib/watcher/read-threads.ts).
    readThreads: readThreadsFor(config),
    spawnReadThread: (name) => new Worker(spec.readWorkerEntry, { name }),
  });
  const threads = watcher.readPool?.threads ?? 0;

  await new Promise((r) => setTimeout(r, spec.warmupSeconds * 1000));
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let maxRss = process.memoryUsage().rss;
  const rssTimer = setInterval(() => (maxRss = Math.max(maxRss, process.memoryUsage().rss)), 250);
  const profile = await startProfile(process.env.STEPWATCH_BENCH_CPU_PROFILE);
  measuring = true;
  if (spec.announceWindow) process.stdout.write(`${JSON.stringify({ window: "start" })}\n`);
  const cpu0 = process.cpuUsage();
  const statements0 = store.statements();
  const wall0 = performance.now();
  await new Promise((r) => setTimeout(r, spec.measureSeconds * 1000));
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - wall0;
  const statements = store.statements() - statements0;
  const leading = store.lease?.isLeader();
  measuring = false;
  loop.disable();
  clearInterval(rssTimer);
  const mem = process.memoryUsage();
  await profile?.();
  if (process.env.STEPWATCH_BENCH_HEAP_SNAPSHOT) v8.writeHeapSnapshot(process.env.STEPWATCH_BENCH_HEAP_SNAPSHOT);
  await watcher.stop();
  const dbBytes = store.bytes();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });

  const ms = (ns: number) => round(ns / 1e6, 1);
  const run: ScaleRun = {
    backends: spec.urls.length,
    intervalSeconds: spec.intervalSeconds,
    measureSeconds: round(wall / 1000, 1),
    reads,
    expectedReads: Math.round((spec.urls.length * wall) / intervalMs),
    cpuCores: round((cpu.user + cpu.system) / 1000 / wall, 3),
    rssMb: { end: round(mem.rss / 2 ** 20, 1), max: round(Math.max(maxRss, mem.rss) / 2 ** 20, 1) },
    heapUsedMb: round(mem.heapUsed / 2 ** 20, 1),
    memoryMb: {
      baselineRss: round(baselineRss / 2 ** 20, 1),
      heapTotal: round(mem.heapTotal / 2 ** 20, 1),
      heapUsed: round(mem.heapUsed / 2 ** 20, 1),
      external: round(mem.external / 2 ** 20, 1),
      arrayBuffers: round(mem.arrayBuffers / 2 ** 20, 1),
    },
    pollLagMs: { p50: percentile(lags, 50), p99: percentile(lags, 99), max: lags.reduce((m, x) => (x > m ? x : m), 0) },
    readLatencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
    eventLoopDelayMs: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) },
    states,
    backendsJudged: judged.size,
    failedReads: failed,
    readsSeenLate: seenLateReads,
    // undici's channels are per thread: a read thread's connections are not seen from here.
    ...(threads === 0 && { connectionsOpened: connections, requestErrors }),
    readThreadsAsked: config.readThreads,
    readThreads: threads,
    failedOutcomes,
    dbBytes,
    statements,
    ...(leading !== undefined && { leading }),
    v8Flags,
  };
  process.stdout.write(`${JSON.stringify(run)}\n`);
  // Undici keeps idle keep-alive sockets for a while; the run is over.
  process.exit(0);
}

void main().catch((e: unknown) => {
  process.stderr.write(`scale-worker: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
