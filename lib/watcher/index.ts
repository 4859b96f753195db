/**
 * The watcher: one poll loop per backend and per proxy, a flush loop that writes the readings in
 * batches, and the retention job. Loops are independent promises, so one slow or dead backend
 * never delays another; each loop sleeps only after its own read ended, so reads never overlap.
 * One AbortController stops everything (lib/runtime wires it to SIGTERM). `apply` swaps in a
 * reloaded config: added targets start their loop, removed ones are aborted (a read in flight
 * records nothing) and dropped from memory, changed ones keep their monitor (history, state).
 *
 * Replicas (docs/decisions.md "Replicas"): every replica polls and judges in memory; only the leader
 * (`leader`, lib/cluster/leadership.ts) writes (the flush, fenced), resolves and carries out
 * restarts, runs the retention job, captures evidence and delivers notifications. When this replica
 * becomes the leader (a new epoch), it re-seeds every monitor's decisions from the database
 * (`takeOver`) and hands restarts a gone leader started and never finished to their monitors
 * (`recovered` if the next reading shows a new process serving, else `unknown`).
 */
import { setMaxListeners } from "node:events";
import type { Db } from "../../db/types";
import { applyRetention, type RetentionResult } from "../../db/queries/history";
import { pruneAudit } from "../../db/queries/auth";
import { observe as realObserve } from "../check/observe";
import { readProxy as realReadProxy, type ReadOptions } from "../check/read";
import type { PendingRestart, Reading, Verdict } from "../core/types";
import { thresholdsOf, type BackendConfig, type Config, type ProxyConfig } from "../config";
import { realClock, runEvery, type LoopClock } from "./loop";
import { OnCallBook } from "../oncall/book";
import { Outbox, type OutboxOptions } from "../notify/outbox";
import { type NotificationDraft } from "../core/events";
import { BackendMonitor, ProxyMonitor, type MonitorDeps } from "./monitors";
import { startReadPool, type ReadPool, type SpawnReadThread } from "./read-pool";
import { readThreadsFor } from "./read-threads";
import { WatchStore, STORE_LIMITS, type StoreLimits } from "./store";
import { NO_TELEMETRY, type WatcherTelemetry } from "./telemetry";
import type { RestartEventRow, RestartOutcome } from "../../db/schema";
import { lastEngine } from "../check/read";
import { restartCommandEnv, type Env } from "../restart/execute";
import { EvidenceRecorder } from "./evidence";
import { soleGate, type LeaderGate } from "../core/cluster";
import { RestartRuns } from "../restart/runs";
import { outcomeUnknown } from "../restart/resolve";
import { restartFinishedDraft } from "../notify/drafts";
import { reason } from "../core/types";
import { fencedTransaction, LeaseLostError } from "../../db/fence";

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
  /** Outbox options (an undici dispatcher, a sender, retry tuning) for tests. */
  outbox?: Pick<OutboxOptions, "dispatcher" | "send" | "tuning">;
  /** Called when an unattended restart is due (lib/runtime asks the restart verb). */
  onUnattendedDue?: (backendId: string) => void;
  /**
   * Read threads (lib/watcher/read-pool.ts); by default as the config's readThreads says
   * (lib/watcher/read-threads.ts), and none with an injected clock (a thread stamps its readings
   * with the real time).
   */
  readThreads?: number;
  /** How a read thread is started (bench/scale-worker.ts starts its own bundle's); lib/watcher/read-worker.ts by default. */
  spawnReadThread?: SpawnReadThread;
  /**
   * The environment evidence commands run with (lib/runtime passes the restart commands': every
   * secret any config of this process read removed); by default this config's secrets removed.
   */
  commandEnv?: () => Env;
  /** Who may write and act (lib/cluster/leadership.ts keepLease, soleLeader); by default this process alone, always leading. */
  leader?: LeaderGate;
  /**
   * Told, while leading, of a pending restart nobody started (asked on another replica, or by this
   * one before it restarted), once a second until it is taken: lib/runtime.ts carries it out
   * (lib/restart/request.ts carryOutWaiting). None: such rows wait.
   */
  onWaitingRestart?: (row: RestartEventRow) => void;
  /** How much sooner than a whole interval a target is read again (by default readLeadMs); the scheduling tests give 0 for round slots. */
  readLeadMs?: (intervalMs: number) => number;
}

export interface Watcher {
  readonly backends: ReadonlyMap<string, BackendMonitor>;
  readonly proxies: ReadonlyMap<string, ProxyMonitor>;
  readonly store: WatchStore;
  /** The notification outbox (its delivery loop runs with the watcher). */
  readonly outbox: Outbox;
  /** Acknowledgements and maintenance, in memory (lib/oncall/book.ts). */
  readonly book: OnCallBook;
  /** Evidence bundles, one per incident (lib/watcher/evidence.ts); the restart verb asks it first. */
  readonly evidence: EvidenceRecorder;
  /** The read threads, when this watcher runs any (see WatcherOptions.readThreads). */
  readonly readPool: ReadPool | null;
  /** Who may run restarts and those this process carries out (the restart verb's `runs`). */
  readonly restarts: RestartRuns;
  /** Writes a notification now (inside the caller's transaction), unless the backend is in maintenance. */
  notify(draft: NotificationDraft): void;
  readonly startedAt: number;
  /** What the watcher believes now about a backend (the restart verb records it as evidence). */
  current(backendId: string): { verdict: Verdict | null; reading: Reading | null } | null;
  /** Called by the restart verb once its event is stored: show `restarting` without waiting for a poll. */
  notifyRestartRequested(backendId: string, pending?: PendingRestart & { eventId: number }): void;
  /** Called by the restart verb when it resolved an event itself (a failed action). */
  notifyRestartResolved(backendId: string, outcome: RestartOutcome): void;
  /**
   * Moves whenever an operator's verb changed what the fleet shows between polls (acknowledge,
   * maintenance, a restart asked for or resolved by the verb): cached fleet answers are re-made.
   */
  revision(): number;
  /**
   * Runs the retention job now (also runs every retentionIntervalMs): RETENTION_CHUNK backends per
   * transaction, the event loop free between them, then the rows of backends no longer watched.
   * null when it failed (logged), or when a run is still going.
   */
  runRetention(): Promise<RetentionResult | null>;
  /** Aborts every loop, waits for in-flight reads to end, writes what is queued. */
  stop(): Promise<void>;
  /** Synchronous stop for a signal handler: aborts the loops and writes what is queued now. */
  stopNow(): void;
  /**
   * Watch what `config` lists from now on (a validated reload). Synchronous, so no poll sees half
   * of it: a poll in flight finishes against the monitor it started with.
   */
  apply(config: Config): ConfigChange;
  readonly signal: AbortSignal;
}

/** What a reload changed, by kind and id. */
export interface ConfigChange {
  added: string[];
  removed: string[];
  changed: string[];
}

/**
 * What `apply(next)` will change, computed before it runs (a reload records it first): by id, a
 * target whose settings differ is "changed", exactly as the applier decides (JSON of its config).
 */
export function targetChange(prev: Pick<Config, "backends" | "proxies">, next: Pick<Config, "backends" | "proxies">): ConfigChange {
  const change: ConfigChange = { added: [], removed: [], changed: [] };
  const diff = <C extends { id: string }>(kind: string, a: C[], b: C[]) => {
    const before = new Map(a.map((c) => [c.id, c]));
    const wanted = new Set(b.map((c) => c.id));
    for (const c of a) if (!wanted.has(c.id)) change.removed.push(`${kind} ${c.id}`);
    for (const c of b) {
      const old = before.get(c.id);
      if (!old) change.added.push(`${kind} ${c.id}`);
      else if (JSON.stringify(old) !== JSON.stringify(c)) change.changed.push(`${kind} ${c.id}`);
    }
  };
  diff("backend", prev.backends, next.backends);
  diff("proxy", prev.proxies, next.proxies);
  return change;
}

export const WATCHER_DEFAULTS = { flushIntervalMs: 1000, retentionIntervalMs: 10 * 60_000 };
/** Backends per retention transaction (lib/watcher runRetention). */
export const RETENTION_CHUNK = 50;
/** How often every backend's newest restart event is read (one query for all). */
export const RESTART_REFRESH_MS = 1000;
/** Loops besides one per backend and proxy: flush, retention, restart events (a virtual clock counts them). */
export const HOUSEKEEPING_LOOPS = 3;

/**
 * Reads fall due in steps of this many ms. Spread evenly to the millisecond, 1000 backends at 5 s
 * are 200 timers a second, each waking the event loop for one read: 2.2 ms of CPU per read, against
 * 1.5 ms when the reads due in the same 100 ms start together (bench/RESULTS.md, peer section; the
 * wake, the timers' and microtasks' turn, the socket writes and the answers are shared by the
 * batch). A batch stays small: 20 reads at 1000 backends, ~30 ms of work for the last one to wait.
 * A fleet whose targets are further apart than a tick keeps its own spacing.
 */
export const SLOT_TICK_MS = 100;

/** Where the i-th of n targets reads within the interval: an even share, rounded down to a tick. */
export function slotOffset(i: number, n: number, intervalMs: number): number {
  if (n <= 1) return 0;
  const even = Math.floor((i * intervalMs) / n);
  return even - (even % SLOT_TICK_MS);
}

/**
 * How much sooner than a whole interval after its last read a target is read again: 1% of the
 * interval, at most 50 ms. uvicorn (vLLM, SGLang) closes a connection 5 s after its last answer and
 * sends no Keep-Alive hint, stepwatch reads every 5 s by default, and the two timers met: with reads
 * exactly an interval apart, 763 of 6,001 reads in the bench's peer run (1000 simulated servers
 * that close idle connections after 5 s) wrote their request on a connection the server was
 * closing, failed, and were asked again on a new one (lib/check/read.ts `get`), and 1,091 connections
 * were opened. The server's idle timer starts at its answer; a read that comes LEAD sooner than a
 * whole interval after the last one comes before that timer runs out unless it was held up LEAD
 * longer than the last one was: the connection is reused, by us and by the server. 1% more reads.
 */
export function readLeadMs(intervalMs: number): number {
  return Math.min(50, intervalMs / 100);
}

/** The deadline of one GET: at most the poll interval (never more than 10 s, never under 2 s). */
export function readTimeoutMs(pollIntervalSeconds: number): number {
  return Math.min(10_000, Math.max(2000, pollIntervalSeconds * 1000));
}

/**
 * The watcher in five stages, each a function below: build the collaborators every monitor shares
 * (`buildParts`), the targets' loops (`targetLoops`: build a monitor, seed it from the db, start its
 * loop), the retention job (`retentionJob`), the start of the fleet and the housekeeping loops
 * (`startFleet`), and stopping (`stopper`); `applier` swaps in a reloaded config.
 */
export function startWatcher(opts: WatcherOptions): Watcher {
  const p = buildParts(opts);
  const targets = targetLoops(p);
  const runRetention = retentionJob(p, targets.backends);
  const { runOutbox } = startFleet(p, targets, runRetention);
  const { stop, stopNow } = stopper(p, targets.loops);
  const { book, store, telemetry } = p;
  const { backends, proxies } = targets;
  let restartChanges = 0;
  return {
    backends,
    proxies,
    store,
    outbox: p.outbox,
    book,
    evidence: p.evidence,
    readPool: p.pool,
    restarts: p.runs,
    notify: p.notify,
    startedAt: p.clock.now(),
    signal: p.signal,
    current(id) {
      const m = backends.get(id);
      if (!m) return null;
      return { verdict: m.last?.verdict ?? null, reading: m.last?.reading ?? null };
    },
    notifyRestartRequested(id) {
      restartChanges++;
      backends.get(id)?.refreshRestart();
    },
    notifyRestartResolved(id, outcome) {
      restartChanges++;
      telemetry.restartResolved(id, outcome);
      backends.get(id)?.refreshRestart();
    },
    revision: () => book.revision + restartChanges,
    runRetention,
    apply: applier(p, targets, runOutbox),
    stopNow,
    stop,
  };
}

/** What every stage shares. `config` is replaced by `apply`; the stages read it there, never keep a copy. */
interface Parts {
  opts: WatcherOptions;
  config: Config;
  clock: LoopClock;
  log: (msg: string) => void;
  telemetry: WatcherTelemetry;
  store: WatchStore;
  controller: AbortController;
  signal: AbortSignal;
  book: OnCallBook;
  outbox: Outbox;
  notify: (draft: NotificationDraft) => void;
  /** The read threads started (once: a reload does not change their number). */
  threads: number;
  pool: ReadPool | null;
  /** Shared by every monitor and changed in place by apply(): the next poll reads the new values. */
  deps: MonitorDeps;
  evidence: EvidenceRecorder;
  /** Every backend's monitor (targetLoops adds and removes them). */
  backends: Map<string, BackendMonitor>;
  leader: LeaderGate;
  runs: RestartRuns;
}

const threadsFor = (opts: WatcherOptions, clock: LoopClock, c: Config) => opts.readThreads ?? (clock === realClock ? readThreadsFor(c) : 0);

const readOf = (opts: WatcherOptions, c: Config): ReadOptions => ({
  timeoutMs: readTimeoutMs(c.pollIntervalSeconds),
  probeTimeoutMs: c.probeTimeoutSeconds * 1000,
  histogramsEveryMs: c.latencyEverySeconds * 1000,
  // The raw bodies an incident's evidence bundle holds (lib/watcher/evidence.ts).
  keepBody: true,
  ...opts.read,
});

/** Stage 1: the store, the on-call book, the outbox, the read threads and the monitors' dependencies. */
function buildParts(opts: WatcherOptions): Parts {
  const config = opts.config;
  const clock = opts.clock ?? realClock;
  const log = opts.log ?? ((m: string) => console.log(m));
  const telemetry = opts.telemetry ?? NO_TELEMETRY;
  const leader = opts.leader ?? soleGate();
  const store = new WatchStore(opts.db, opts.storeLimits ?? STORE_LIMITS, (m) => log(m), () => telemetry.storageError(), leader);
  const controller = new AbortController();
  const signal = controller.signal;
  // One listener per poll loop (runEvery, and each target's own stop in startLoop), by design: a
  // fleet of 1000 is not a leak to warn about.
  setMaxListeners(0, signal);
  const book = new OnCallBook(
    opts.db,
    config.maintenance,
    config.backends.map((b) => b.id),
    () => clock.now(),
    (what, e) => store.fail(what, e),
  );
  // The parts, once built: a reload replaces parts.config, which the outbox and the evidence read.
  let parts: Parts | null = null;
  const current = () => parts?.config ?? config;
  const outbox = new Outbox(opts.db, config.notifications, {
    ...opts.outbox,
    leader,
    now: () => clock.now(),
    log,
    onAttemptFailed: (channelId) => telemetry.notificationFailed(channelId),
    // Read from the config in force when written (a reload replaces p.config); stored with the notification.
    labelsOf: (backendId) => current().backends.find((b) => b.id === backendId)?.labels ?? {},
  });
  // Every configured channel's failure series exists at 0 before its first failure.
  for (const c of config.notifications.channels) telemetry.notificationChannel(c.id);
  // While silenced nothing is sent at all; the policy already holds back its own events.
  const notify = (draft: NotificationDraft) => {
    if (book.silenced(draft.backendId, draft.at) === null) outbox.write(draft);
  };
  const threads = threadsFor(opts, clock, config);
  const pool: ReadPool | null = threads > 0 ? startReadPool(threads, log, opts.spawnReadThread) : null;
  if (pool) log(`stepwatch: ${threads} read thread${threads === 1 ? "" : "s"} (readThreads ${JSON.stringify(config.readThreads)}, ${config.backends.length} backends every ${config.pollIntervalSeconds} s)`);
  // `backends` is filled by targetLoops: the recorder reads a monitor's memory only when a capture starts.
  const backends = new Map<string, BackendMonitor>();
  const evidence = new EvidenceRecorder({
    db: opts.db,
    memory: (id) => {
      const m = backends.get(id);
      if (!m) return null;
      return {
        config: m.config,
        bodies: m.bodies,
        verdict: m.last?.verdict ?? null,
        engine: m.last?.reading.engine ?? lastEngine(m.history),
        storedState: m.storedState,
        previousState: m.previousState,
        since: m.since,
      };
    },
    commandEnv: opts.commandEnv ?? (() => restartCommandEnv(process.env, current().secretEnvNames)),
    maxTotalBytes: () => current().evidenceMaxTotalBytes,
    now: () => clock.now(),
    log,
  });
  const deps: MonitorDeps = {
    evidence,
    store,
    oncall: {
      book,
      renotifyMinutes: config.notifications.renotifyMinutes,
      recoveredAfterSeconds: config.notifications.recoveredAfterSeconds,
      notify,
      onUnattendedDue: opts.onUnattendedDue,
    },
    thresholds: thresholdsOf(config),
    crashLoop: config.crashLoop,
    now: () => clock.now(),
    read: readOf(opts, config),
    observe: opts.observe ?? realObserve,
    readProxy: opts.readProxy ?? realReadProxy,
    telemetry,
    pool: pool ?? undefined,
  };
  parts = { opts, config, clock, log, telemetry, store, controller, signal, book, outbox, notify, threads, pool, deps, evidence, backends, leader, runs: new RestartRuns(leader) };
  return parts;
}

/** The monitors and their loops: what the fleet start and a reload add or stop. */
interface TargetLoops {
  backends: Map<string, BackendMonitor>;
  proxies: Map<string, ProxyMonitor>;
  /** Every loop still running; one leaves the set when it ends, so reloads do not pile up ended ones. */
  loops: Set<Promise<void>>;
  track(loop: Promise<void>): void;
  addBackend(b: BackendConfig, startAt: number): void;
  addProxy(p: ProxyConfig, startAt: number): void;
  stopTarget(key: string): void;
  intervalMs(): number;
}

/** Stage 2: per target, build its monitor, seed it from the db, start its loop (each stopped on its own by a reload). */
function targetLoops(p: Parts): TargetLoops {
  const { clock, log, signal } = p;
  const backends = p.backends;
  const proxies = new Map<string, ProxyMonitor>();
  const own = new Map<string, AbortController>();
  const loops = new Set<Promise<void>>();
  const track = (loop: Promise<void>) => {
    loops.add(loop);
    // runEvery reports a failing step and goes on; a rejection here would be a bug, still not an unhandled one.
    loop.then(
      () => loops.delete(loop),
      (e) => {
        loops.delete(loop);
        log(`stepwatch: a watcher loop ended with an error: ${(e as Error)?.stack ?? String(e)}`);
      },
    );
  };
  const intervalMs = () => p.config.pollIntervalSeconds * 1000;
  // Targets are read a little sooner than every interval (readLeadMs: a server's idle keep-alive timer).
  const lead = p.opts.readLeadMs ?? readLeadMs;
  const readPeriodMs = () => intervalMs() - lead(intervalMs());
  const onLag = (ms: number) => p.telemetry.pollLag(ms);
  const onError = (what: string) => (e: unknown) => log(`stepwatch: ${what}: ${(e as Error)?.stack ?? String(e)}`);

  const startLoop = (key: string, what: string, poll: (s: AbortSignal) => Promise<void>, startAt: number) => {
    const mine = new AbortController();
    const stopMine = () => mine.abort();
    signal.addEventListener("abort", stopMine, { once: true });
    own.set(key, mine);
    const loop = runEvery(poll, { intervalMs: readPeriodMs, signal: mine.signal, clock, startAt, onLag, onError: onError(`poll of ${what} failed`) }).finally(() =>
      signal.removeEventListener("abort", stopMine),
    );
    track(loop);
  };
  return {
    backends,
    proxies,
    loops,
    track,
    intervalMs,
    addBackend(b, startAt) {
      const m = new BackendMonitor(b, p.deps);
      m.seed();
      backends.set(b.id, m);
      startLoop(`backend:${b.id}`, `backend ${b.id}`, (s) => m.poll(s), startAt);
    },
    addProxy(c, startAt) {
      const m = new ProxyMonitor(c, p.deps);
      m.seed();
      proxies.set(c.id, m);
      startLoop(`proxy:${c.id}`, `proxy ${c.id}`, (s) => m.poll(s), startAt);
    },
    stopTarget(key) {
      own.get(key)?.abort();
      own.delete(key);
    },
  };
}

/**
 * Stage 3: the retention job. At 1000 backends one transaction over the whole fleet held the event
 * loop for ~2 s (folding ~120k readings), every reading due meanwhile late by as much. In chunks, a
 * poll waits for one chunk at most.
 */
function retentionJob(p: Parts, backends: ReadonlyMap<string, BackendMonitor>): () => Promise<RetentionResult | null> {
  let running = false;
  let lastAuditPrune = -Infinity;
  return async () => {
    // The retention job writes: only the leader runs it, each chunk fenced.
    if (running || !p.leader.isLeader()) return null;
    running = true;
    const total: RetentionResult = { rolledMinutes: 0, deletedSamples: 0, deletedRollups: 0 };
    const add = (r: RetentionResult) => {
      total.rolledMinutes += r.rolledMinutes;
      total.deletedSamples += r.deletedSamples;
      total.deletedRollups += r.deletedRollups;
    };
    try {
      const ids = [...backends.keys()];
      const now = p.clock.now();
      const fenced = <T>(write: () => T) => fencedTransaction(p.opts.db, p.leader, write);
      const retain = (scope: { only: string[] } | { except: string[] }) =>
        fenced(() => applyRetention(p.opts.db, { now, ...p.config.retention, replayDays: p.config.history.replayDays, scope }));
      for (let i = 0; i < ids.length; i += RETENTION_CHUNK) {
        add(retain({ only: ids.slice(i, i + RETENTION_CHUNK) }));
        await p.clock.sleep(0, p.signal);
      }
      add(retain({ except: ids }));
      p.evidence.pruneDue();
      // The audit log's retention is in days: once an hour is plenty (and at start, lib/runtime.ts).
      if (now - lastAuditPrune >= 3600_000) {
        fenced(() => pruneAudit(p.opts.db, now - p.config.audit.retentionDays * 86_400_000));
        lastAuditPrune = now;
      }
      return total;
    } catch (e) {
      if (e instanceof LeaseLostError) return null; // deposed mid-job: the next leader runs it
      if (!p.signal.aborted) p.store.fail("retention job failed", e);
      return null;
    } finally {
      running = false;
    }
  };
}

/**
 * Stage 4: every target of the config, spread over one interval, then the housekeeping loops
 * (restart events, flush, retention) and the outbox's delivery loop.
 */
function startFleet(p: Parts, t: TargetLoops, runRetention: () => Promise<RetentionResult | null>): { runOutbox(): void } {
  const { clock, signal, store, opts, config } = p;
  // Targets start spread over one interval from one start time, taken before any monitor is
  // seeded (seeding 1000 takes ~0.5 s), in SLOT_TICK_MS steps (slotOffset).
  const count = config.backends.length + config.proxies.length;
  const start = clock.now();
  const slotOf = (i: number) => start + slotOffset(i, count, t.intervalMs());
  config.backends.forEach((b, i) => t.addBackend(b, slotOf(i)));
  config.proxies.forEach((c, i) => t.addProxy(c, slotOf(config.backends.length + i)));
  // The restart events of every backend, once a second (a restart asked by another process that
  // shares the database is seen within a second; this process's own verb notifies at once), and
  // the on-call book's changes by other processes. The leader carries out restarts asked elsewhere
  // and not started yet.
  const refreshRestarts = () => {
    p.book.follow();
    const latest = store.latestRestarts();
    if (!latest) return; // read failed: keep what each monitor had
    for (const m of t.backends.values()) m.lastRestart = latest.get(m.config.id) ?? null;
    if (!opts.onWaitingRestart || !p.leader.isLeader()) return;
    for (const row of latest.values()) {
      if (row.outcome === null && row.startedAt === null && !p.runs.isOurs(row.id)) opts.onWaitingRestart(row);
    }
  };
  // Seeded just now (targetLoops): a leader at start resolves what a gone leader left running; a
  // later epoch (this replica leads anew) re-seeds first. Checked before every flush.
  let seededEpoch: number | null = p.leader.epoch();
  if (seededEpoch !== null) takeOver(p, t, false);
  const flush = () => {
    const epoch = p.leader.epoch();
    if (epoch !== null && epoch !== seededEpoch) {
      takeOver(p, t, true);
      seededEpoch = epoch;
    }
    store.flush();
  };
  t.track(runEvery(refreshRestarts, { intervalMs: RESTART_REFRESH_MS, signal, clock }));
  t.track(runEvery(flush, { intervalMs: opts.flushIntervalMs ?? WATCHER_DEFAULTS.flushIntervalMs, signal, clock }));
  t.track(runEvery(() => void runRetention(), { intervalMs: opts.retentionIntervalMs ?? WATCHER_DEFAULTS.retentionIntervalMs, signal, clock }));
  // Delivery is its own loop: a slow receiver never delays a poll (polls only write rows).
  // Started once a channel exists: at start, or by the first reload that adds one.
  let outboxRunning = false;
  const runOutbox = () => {
    if (outboxRunning || p.config.notifications.channels.length === 0) return;
    outboxRunning = true;
    t.track(p.outbox.run(signal));
  };
  runOutbox();
  return { runOutbox };
}

/**
 * This replica leads (at start, or anew: a new epoch). `reseed`: what it queued and kept in memory
 * as a standby was never written, so it is dropped and every monitor's decisions are read back from
 * what the previous leader stored (acknowledgements and maintenance asked on any replica too); the
 * next poll then writes a transition and a notification only where the record differs. Then every
 * restart started by a leader that is gone (not running here) and never given a result goes to its
 * backend's monitor, whose next reading settles it (`recovered` if a new process serves, else
 * `unknown`); a backend no longer watched has none: `unknown` now. None is run again.
 */
function takeOver(p: Parts, t: TargetLoops, reseed: boolean): void {
  const { store, leader, log } = p;
  if (reseed) {
    log(`stepwatch: ${leader.replicaId} leads (epoch ${leader.epoch()}): reading back what the previous leader stored`);
    store.dropQueue();
    for (const id of t.backends.keys()) p.book.refresh(id);
    for (const m of t.backends.values()) m.seedDecisions();
    for (const m of t.proxies.values()) m.seed();
  }
  for (const row of store.startedWithoutResult()) {
    if (p.runs.isOurs(row.id)) continue;
    const m = t.backends.get(row.backendId);
    if (m) {
      m.adoptOrphan(row.id);
      continue;
    }
    const end = outcomeUnknown(row, p.clock.now());
    const base = { backendId: row.backendId, state: row.stateAtRequest, reasons: [reason("restart-outcome-unknown", end.resolution)], at: end.resolvedAt };
    if (store.resolveRestart(row.id, end, () => p.notify(restartFinishedDraft(base, row, end)))) p.telemetry.restartResolved(row.backendId, "unknown");
  }
}

/** Stage 5: stopping, awaited (every loop ended, the threads closed, the queue written) or at once from a signal handler. */
function stopper(p: Parts, loops: Set<Promise<void>>): { stop(): Promise<void>; stopNow(): void } {
  let stopping: Promise<void> | null = null;
  return {
    stopNow() {
      p.controller.abort();
      void p.pool?.close();
      p.store.flush();
    },
    stop() {
      stopping ??= (async () => {
        p.controller.abort();
        // Loops added by a reload are in `loops` too; wait until none is left running.
        while (loops.size > 0) await Promise.allSettled([...loops]);
        await p.pool?.close();
        // A capture under way ends within its commands' timeouts (each is killed at its own); its
        // bundle is written before the database closes. A signal's stopNow does not wait for it.
        await p.evidence.settle();
        p.store.flush();
      })();
      return stopping;
    },
  };
}

/** A validated reload: new settings in place, targets added, removed or reconfigured. */
function applier(p: Parts, t: TargetLoops, runOutbox: () => void): (next: Config) => ConfigChange {
  const { clock, deps, outbox, book, telemetry, log } = p;
  /** Same id, new settings: the monitor (and its history) stays, its config is swapped. */
  function sync<C extends { id: string }, M extends { config: C; reconfigure(c: C): void }>(kind: "backend" | "proxy", list: C[], map: Map<string, M>, add: (c: C, startAt: number) => void, change: ConfigChange): void {
    const start = clock.now();
    const wanted = new Map(list.map((c) => [c.id, c]));
    for (const id of [...map.keys()]) {
      if (wanted.has(id)) continue;
      t.stopTarget(`${kind}:${id}`);
      map.delete(id);
      if (kind === "backend") p.evidence.forget(id);
      change.removed.push(`${kind} ${id}`);
    }
    list.forEach((c, i) => {
      const m = map.get(c.id);
      if (!m) {
        // New targets are spread over one interval too, so a reload adding many does not burst.
        add(c, start + slotOffset(i, list.length, t.intervalMs()));
        change.added.push(`${kind} ${c.id}`);
      } else if (JSON.stringify(m.config) !== JSON.stringify(c)) {
        m.reconfigure(c);
        change.changed.push(`${kind} ${c.id}`);
      }
    });
  }
  return (next) => {
    const change: ConfigChange = { added: [], removed: [], changed: [] };
    if (p.signal.aborted) return change;
    p.config = next;
    // Read threads are started once: a reload that asks for another number says so and keeps them.
    const wanted = threadsFor(p.opts, clock, next);
    if (wanted !== p.threads) log(`stepwatch: this config asks for ${wanted} read thread${wanted === 1 ? "" : "s"}; ${p.threads} run until stepwatch restarts`);
    deps.thresholds = thresholdsOf(next);
    deps.crashLoop = next.crashLoop;
    deps.read = readOf(p.opts, next);
    // On-call settings: channels, maintenance windows, reminder and recovery times.
    outbox.reconfigure(next.notifications);
    for (const c of next.notifications.channels) telemetry.notificationChannel(c.id);
    book.setWindows(next.maintenance);
    if (deps.oncall) {
      deps.oncall.renotifyMinutes = next.notifications.renotifyMinutes;
      deps.oncall.recoveredAfterSeconds = next.notifications.recoveredAfterSeconds;
    }
    runOutbox();
    sync("backend", next.backends, t.backends, (c, at) => t.addBackend(c, at), change);
    sync("proxy", next.proxies, t.proxies, (c, at) => t.addProxy(c, at), change);
    return change;
  };
}
