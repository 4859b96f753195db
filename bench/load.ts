/**
 * Load (issue 6): many dashboards open at once while the watcher works. A real `next start`
 * (production build, its own config and SQLite file) watches 100 simulated backends (one simulator
 * child process) every 5 s; 200 clients poll GET /api/fleet the way the dashboard does (SWR's
 * refreshInterval: the next request 2 s after the previous answer), for 60 s (quick: 20 s).
 * First a quiet phase with no clients is measured as the comparison.
 *
 * Reported: requests, errors (non-200 or a network error; the goal is none), latency, the app's
 * CPU, and the watcher's poll lag, taken from outside through the API: each backend's reads are
 * due exactly one interval apart (lib/watcher/loop.ts runEvery), and `lastReadAt` is when a read
 * started (readBackend's `at`), so every distinct lastReadAt seen gives how late that read started
 * against its backend's grid (see scheduleLags). All traffic goes to 127.0.0.1, bounded in
 * count and time.
 */
import { setTimeout as delay } from "node:timers/promises";
import { cpuSecondsOfTree, startSimulatorFleet } from "./child";
import { ensureBuild, rssMbOf, startApp, type App } from "./dashboard";
import { percentile, round } from "./stats";

export const LOAD = {
  backends: 100,
  pollIntervalSeconds: 5,
  clients: 200,
  clientIntervalSeconds: 2,
  /** A request that has not answered by then counts as an error (the dashboard would show it stale). */
  requestTimeoutMs: 10_000,
} as const;

export interface Spread {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

function spread(xs: readonly number[]): Spread {
  return {
    n: xs.length,
    p50: round(percentile(xs, 50), 1),
    p95: round(percentile(xs, 95), 1),
    p99: round(percentile(xs, 99), 1),
    max: round(xs.reduce((m, x) => (x > m ? x : m), xs.length ? -Infinity : NaN), 1),
  };
}

/**
 * How late each read started against its backend's schedule, from the read start times seen
 * (any order, duplicates allowed). runEvery puts a backend's reads on a grid anchor + k * interval
 * (a read longer than the interval skips slots, it never shifts the grid), so a read's lag is its
 * distance past the grid. The anchor is not visible from outside: it is taken as the earliest
 * position on the grid any read of that backend reached, so the lags are relative to that
 * backend's most punctual read (an underestimate by that read's own lag, a few ms when idle).
 * Assumes lags under half an interval, else a read is counted against the next slot.
 */
export function scheduleLags(startTimes: readonly number[], intervalMs: number): Array<{ at: number; lagMs: number }> {
  const times = [...new Set(startTimes)].sort((a, b) => a - b);
  if (times.length === 0) return [];
  const ref = times[0];
  const phase = times.map((t) => t - ref - Math.round((t - ref) / intervalMs) * intervalMs);
  const earliest = Math.min(...phase);
  return times.map((at, i) => ({ at, lagMs: phase[i] - earliest }));
}

interface Sample {
  generatedAt: number;
  lastReadAt: Array<number | null>;
}

interface PhaseStats {
  seconds: number;
  /** Reads whose start fell in the phase, against what the schedule had due. */
  reads: number;
  readsDue: number;
  pollLagMs: Spread;
  /** generatedAt - lastReadAt over every backend of every sample: how old the fleet view's data was. */
  readingAgeMs: Spread;
  appCpuCores: number | null;
  simulatorCpuCores: number | null;
}

export interface LoadResult {
  build: string;
  backends: number;
  pollIntervalSeconds: number;
  clients: number;
  clientIntervalSeconds: number;
  quiet: PhaseStats;
  loaded: PhaseStats & {
    requests: number;
    /** Requests that were due by the clients' schedule (one per client per interval + latency). */
    requestsPerSecond: number;
    errors: number;
    errorKinds: Record<string, number>;
    latencyMs: Spread;
    responseBytes: number;
    /** CPU of the benchmark process itself (the 200 clients), for the share of the 2 cores. */
    clientsCpuCores: number;
  };
  appRssMb: number | null;
}

/** Reads the fleet every `everyMs` until `until` (performance.now()), noting lastReadAt of every backend. */
async function sampleFleet(app: App, until: number, everyMs: number, out: Sample[]): Promise<void> {
  while (performance.now() < until) {
    const next = performance.now() + everyMs;
    try {
      const res = await app.pool.request({ path: "/api/fleet", method: "GET", headersTimeout: LOAD.requestTimeoutMs, bodyTimeout: LOAD.requestTimeoutMs });
      const json = (await res.body.json()) as { generatedAt: number; backends: Array<{ lastReadAt: number | null }> };
      if (res.statusCode === 200) out.push({ generatedAt: json.generatedAt, lastReadAt: json.backends.map((b) => b.lastReadAt) });
    } catch {
      // the clients count errors; a missed sample only thins the lag data
    }
    await delay(Math.max(0, next - performance.now()));
  }
}

interface ClientStats {
  latencies: number[];
  errors: number;
  errorKinds: Record<string, number>;
  bytes: number;
}

/** One dashboard: GET /api/fleet, then wait clientIntervalSeconds after the answer (as SWR does), until `until`. */
async function client(app: App, firstDelayMs: number, until: number, stats: ClientStats): Promise<void> {
  await delay(firstDelayMs);
  while (performance.now() < until) {
    const s = performance.now();
    try {
      const res = await app.pool.request({ path: "/api/fleet", method: "GET", headersTimeout: LOAD.requestTimeoutMs, bodyTimeout: LOAD.requestTimeoutMs });
      const body = await res.body.arrayBuffer();
      if (res.statusCode === 200) {
        stats.latencies.push(performance.now() - s);
        stats.bytes = body.byteLength;
      } else {
        stats.errors++;
        stats.errorKinds[`HTTP ${res.statusCode}`] = (stats.errorKinds[`HTTP ${res.statusCode}`] ?? 0) + 1;
      }
    } catch (e) {
      stats.errors++;
      const kind = (e as { code?: string }).code ?? (e as Error).name ?? "error";
      stats.errorKinds[kind] = (stats.errorKinds[kind] ?? 0) + 1;
    }
    // Not past the end: the loaded phase ends when the clients stop, not one interval later.
    await delay(Math.min(LOAD.clientIntervalSeconds * 1000, Math.max(0, until - performance.now())));
  }
}

/**
 * Poll lag of the reads that started within [from, to - READ_WINDOW_MARGIN_MS) (a read that starts
 * at the very end is seen only once it has answered, maybe after the last sample), and the age of
 * the readings in the samples generated within [from, to) (epoch ms).
 */
const READ_WINDOW_MARGIN_MS = 1000;
function lagsIn(samples: readonly Sample[], intervalMs: number, from: number, to: number): { lags: number[]; ages: number[] } {
  const perBackend: number[][] = Array.from({ length: samples[0]?.lastReadAt.length ?? 0 }, () => []);
  for (const s of samples) s.lastReadAt.forEach((t, i) => t !== null && perBackend[i]?.push(t));
  const lags: number[] = [];
  for (const starts of perBackend) for (const r of scheduleLags(starts, intervalMs)) if (r.at >= from && r.at < to - READ_WINDOW_MARGIN_MS) lags.push(r.lagMs);
  const ages: number[] = [];
  for (const s of samples) if (s.generatedAt >= from && s.generatedAt < to) for (const t of s.lastReadAt) if (t !== null) ages.push(s.generatedAt - t);
  return { lags, ages };
}

export async function runLoadBench(opts: { quick?: boolean; workDir: string; log?: (m: string) => void }): Promise<LoadResult> {
  const log = opts.log ?? (() => {});
  const build = ensureBuild(log);
  const intervalMs = LOAD.pollIntervalSeconds * 1000;
  const quietSeconds = opts.quick ? 6 : 20; // quick mode stays under two minutes
  const loadSeconds = opts.quick ? 20 : 60;
  const { child: sim, urls } = await startSimulatorFleet(LOAD.backends, 60_000);
  let app: App | null = null;
  try {
    // One connection per client, as 200 browsers would have, plus the sampler's.
    app = await startApp({ urls, workDir: opts.workDir, name: "load", pollIntervalSeconds: LOAD.pollIntervalSeconds, connections: LOAD.clients + 1 });
    const samples: Sample[] = [];
    // The sampler reads the fleet 4 times a second (the fleet JSON is rebuilt at most that often),
    // so every read of every backend is seen (they are 5 s apart).
    const samplerEveryMs = 250;

    log(`load: ${quietSeconds} s quiet (no clients)`);
    const quiet0 = { wall: Date.now(), perf: performance.now(), app: cpuSecondsOfTree(app.child.proc.pid), sim: cpuSecondsOfTree(sim.proc.pid) };
    await sampleFleet(app, quiet0.perf + quietSeconds * 1000, samplerEveryMs, samples);

    log(`load: ${LOAD.clients} clients polling /api/fleet every ${LOAD.clientIntervalSeconds} s for ${loadSeconds} s`);
    const load0 = { wall: Date.now(), perf: performance.now(), app: cpuSecondsOfTree(app.child.proc.pid), sim: cpuSecondsOfTree(sim.proc.pid), self: process.cpuUsage() };
    const until = load0.perf + loadSeconds * 1000;
    const stats: ClientStats = { latencies: [], errors: 0, errorKinds: {}, bytes: 0 };
    // Clients open their dashboards spread over one refresh interval, not in the same millisecond.
    const stagger = (LOAD.clientIntervalSeconds * 1000) / LOAD.clients;
    await Promise.all([
      sampleFleet(app, until, samplerEveryMs, samples),
      ...Array.from({ length: LOAD.clients }, (_, c) => client(app!, c * stagger, until, stats)),
    ]);
    const end = { wall: Date.now(), perf: performance.now(), app: cpuSecondsOfTree(app.child.proc.pid), sim: cpuSecondsOfTree(sim.proc.pid), self: process.cpuUsage(load0.self) };
    const appRssMb = rssMbOf(app.child.proc.pid);

    const cores = (a: number | null, b: number | null, seconds: number) => (a === null || b === null ? null : round((b - a) / seconds, 3));
    const phase = (from: { wall: number; perf: number; app: number | null; sim: number | null }, to: typeof from): PhaseStats => {
      const seconds = (to.perf - from.perf) / 1000;
      const { lags, ages } = lagsIn(samples, intervalMs, from.wall, to.wall);
      return {
        seconds: round(seconds, 1),
        reads: lags.length,
        readsDue: Math.round((LOAD.backends * (to.wall - from.wall - READ_WINDOW_MARGIN_MS)) / intervalMs),
        pollLagMs: spread(lags),
        readingAgeMs: spread(ages),
        appCpuCores: cores(from.app, to.app, seconds),
        simulatorCpuCores: cores(from.sim, to.sim, seconds),
      };
    };
    const loadedSeconds = (end.perf - load0.perf) / 1000;
    return {
      build,
      backends: LOAD.backends,
      pollIntervalSeconds: LOAD.pollIntervalSeconds,
      clients: LOAD.clients,
      clientIntervalSeconds: LOAD.clientIntervalSeconds,
      quiet: phase(quiet0, load0),
      loaded: {
        ...phase(load0, end),
        requests: stats.latencies.length + stats.errors,
        requestsPerSecond: round((stats.latencies.length + stats.errors) / loadedSeconds, 1),
        errors: stats.errors,
        errorKinds: stats.errorKinds,
        latencyMs: spread(stats.latencies),
        responseBytes: stats.bytes,
        clientsCpuCores: round((end.self.user + end.self.system) / 1e6 / loadedSeconds, 3),
      },
      appRssMb,
    };
  } finally {
    await app?.stop();
    await sim.stop();
  }
}
