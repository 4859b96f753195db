/**
 * The watcher: one poll loop per backend and per proxy, a flush loop that writes the readings in
 * batches, and the retention job. Loops are independent promises, so one slow or dead backend
 * never delays another; each loop sleeps only after its own read ended, so reads never overlap.
 * One AbortController stops everything (lib/runtime wires it to SIGTERM).
 */
import { setMaxListeners } from "node:events";
import type { Db } from "../../db/client";
import { applyRetention, type RetentionResult } from "../../db/queries";
import { observe as realObserve } from "../check/observe";
import { readProxy as realReadProxy, type ReadOptions } from "../check/read";
import type { PendingRestart, Reading, Verdict } from "../check/types";
import { thresholdsOf, type Config } from "../config";
import { realClock, runEvery, type LoopClock } from "./loop";
import { BackendMonitor, ProxyMonitor, type MonitorDeps } from "./monitors";
import { WatchStore, STORE_LIMITS, type StoreLimits } from "./store";
import { NO_TELEMETRY, type WatcherTelemetry } from "./telemetry";
import type { RestartOutcome } from "../../db/schema";

export interface WatcherOptions {
  config: Config;
  db: Db;
  clock?: LoopClock;
  /** Extra read options (an undici dispatcher in tests). Timeouts come from the config. */
  read?: ReadOptions;
  /** How often queued samples and transitions are written (one transaction each time). */
  flushIntervalMs?: number;
  retentionIntervalMs?: number;
  storeLimits?: StoreLimits;
  log?: (msg: string) => void;
  /** Injected for unit tests of the scheduling; production always judges with observe(). */
  observe?: MonitorDeps["observe"];
  readProxy?: MonitorDeps["readProxy"];
  /** Where the watcher's own health goes (lib/runtime passes the Prometheus export's); none by default. */
  telemetry?: WatcherTelemetry;
}

export interface Watcher {
  readonly backends: ReadonlyMap<string, BackendMonitor>;
  readonly proxies: ReadonlyMap<string, ProxyMonitor>;
  readonly store: WatchStore;
  readonly startedAt: number;
  /** What the watcher believes now about a backend (the restart verb records it as evidence). */
  current(backendId: string): { verdict: Verdict | null; reading: Reading | null } | null;
  /** Called by the restart verb once its event is stored: show `restarting` without waiting for a poll. */
  notifyRestartRequested(backendId: string, pending?: PendingRestart & { eventId: number }): void;
  /** Called by the restart verb when it resolved an event itself (a failed action). */
  notifyRestartResolved(backendId: string, outcome: RestartOutcome): void;
  /** Runs the retention job now (also runs every retentionIntervalMs). */
  runRetention(): RetentionResult | null;
  /** Aborts every loop, waits for in-flight reads to end, writes what is queued. */
  stop(): Promise<void>;
  /** Synchronous stop for a signal handler: aborts the loops and writes what is queued now. */
  stopNow(): void;
  readonly signal: AbortSignal;
}

export const WATCHER_DEFAULTS = { flushIntervalMs: 1000, retentionIntervalMs: 10 * 60_000 };
/** How often every backend's newest restart event is read (one query for all). */
export const RESTART_REFRESH_MS = 1000;
/** Loops besides one per backend and proxy: flush, retention, restart events (a virtual clock counts them). */
export const HOUSEKEEPING_LOOPS = 3;

/** The deadline of one GET: at most the poll interval (never more than 10 s, never under 2 s). */
export function readTimeoutMs(pollIntervalSeconds: number): number {
  return Math.min(10_000, Math.max(2000, pollIntervalSeconds * 1000));
}

export function startWatcher(opts: WatcherOptions): Watcher {
  const { config } = opts;
  const clock = opts.clock ?? realClock;
  const log = opts.log ?? ((m: string) => console.log(m));
  const telemetry = opts.telemetry ?? NO_TELEMETRY;
  const store = new WatchStore(opts.db, opts.storeLimits ?? STORE_LIMITS, (m) => log(m), () => telemetry.storageError());
  const controller = new AbortController();
  const signal = controller.signal;
  // One listener per poll loop (runEvery), by design: a fleet of 1000 is not a leak to warn about.
  setMaxListeners(0, signal);
  const deps: MonitorDeps = {
    store,
    thresholds: thresholdsOf(config),
    now: () => clock.now(),
    read: { timeoutMs: readTimeoutMs(config.pollIntervalSeconds), probeTimeoutMs: config.probeTimeoutSeconds * 1000, ...opts.read },
    observe: opts.observe ?? realObserve,
    readProxy: opts.readProxy ?? realReadProxy,
    telemetry,
  };

  const backends = new Map(config.backends.map((b) => [b.id, new BackendMonitor(b, deps)]));
  const proxies = new Map(config.proxies.map((p) => [p.id, new ProxyMonitor(p, deps)]));
  for (const m of backends.values()) m.seed();
  for (const m of proxies.values()) m.seed();

  // The restart events of every backend, once a second (a restart asked by another process that
  // shares the database is seen within a second; this process's own verb notifies at once).
  const refreshRestarts = () => {
    const latest = store.latestRestarts();
    if (!latest) return; // read failed: keep what each monitor had
    for (const m of backends.values()) m.lastRestart = latest.get(m.config.id) ?? null;
  };

  const intervalMs = config.pollIntervalSeconds * 1000;
  const onLag = (ms: number) => telemetry.pollLag(ms);
  const onError = (what: string) => (e: unknown) => log(`stepwatch: ${what}: ${(e as Error)?.stack ?? String(e)}`);
  const runRetention = (): RetentionResult | null => {
    try {
      return applyRetention(opts.db, { now: clock.now(), ...config.retention });
    } catch (e) {
      store.fail("retention job failed", e);
      return null;
    }
  };

  // Targets start spread evenly over one interval: 1000 reads falling due in the same
  // millisecond every round is what makes poll lag (bench/RESULTS.md).
  const targets = config.backends.length + config.proxies.length;
  const offset = (i: number) => (targets > 1 ? Math.floor((i * intervalMs) / targets) : 0);
  const loops: Promise<void>[] = [
    ...[...backends.values()].map((m, i) =>
      runEvery((s) => m.poll(s), { intervalMs, signal, clock, offsetMs: offset(i), onLag, onError: onError(`poll of backend ${m.config.id} failed`) }),
    ),
    ...[...proxies.values()].map((m, i) =>
      runEvery((s) => m.poll(s), {
        intervalMs,
        signal,
        clock,
        offsetMs: offset(backends.size + i),
        onLag,
        onError: onError(`poll of proxy ${m.config.id} failed`),
      }),
    ),
    runEvery(refreshRestarts, { intervalMs: RESTART_REFRESH_MS, signal, clock }),
    runEvery(() => void store.flush(), { intervalMs: opts.flushIntervalMs ?? WATCHER_DEFAULTS.flushIntervalMs, signal, clock }),
    runEvery(() => void runRetention(), { intervalMs: opts.retentionIntervalMs ?? WATCHER_DEFAULTS.retentionIntervalMs, signal, clock }),
  ];

  let stopping: Promise<void> | null = null;
  return {
    backends,
    proxies,
    store,
    startedAt: clock.now(),
    signal,
    current(id) {
      const m = backends.get(id);
      if (!m) return null;
      return { verdict: m.last?.verdict ?? null, reading: m.last?.reading ?? null };
    },
    notifyRestartRequested(id) {
      backends.get(id)?.refreshRestart();
    },
    notifyRestartResolved(id, outcome) {
      telemetry.restartResolved(id, outcome);
      backends.get(id)?.refreshRestart();
    },
    runRetention,
    stopNow() {
      controller.abort();
      store.flush();
    },
    stop() {
      stopping ??= (async () => {
        controller.abort();
        await Promise.allSettled(loops);
        store.flush();
      })();
      return stopping;
    },
  };
}
