/**
 * Per-target state of the watcher: one poll is `read -> classify -> persist`. Judging is
 * observe() (lib/check/observe.ts), the same code the CLI runs; this file only feeds it the
 * backend's history and pending restart, and records what it decided.
 */
import { sampleRow, type TargetKind } from "../../db/queries/readings";
import { replayRow } from "../../db/queries/replay";
import { encodeRecord } from "../core/replay";
import type { RestartEventRow } from "../../db/schema";
import type { observe as observeFn, Reader } from "../check/observe";
import type { BackendTarget, ReadOptions } from "../check/read";
import type { readProxy as readProxyFn } from "../check/read";
import type { BackendState, ProxyState } from "../core/states";
import { seenLate } from "../check/late";
import { type PendingRestart, type ProxyReading, type Reading, type Thresholds, type Verdict, reason, type Reason } from "../core/types";
import type { BackendConfig, ProxyConfig } from "../config";
import type { OnCallBook } from "../oncall/book";
import { decide, NO_PROBLEM, seedProblemState, type ProblemState } from "../notify/policy";
import type { NotificationDraft } from "../core/events";
import type { EvidenceMetricsBody } from "../core/evidence";
import { KeptBodies } from "./kept-bodies";
import { RecentPoints } from "./recent";
import { historyWindowMs, MAX_HISTORY_READINGS, trimHistory } from "./history";
import { dropOlderLatency, latencyOf } from "./latency";
import { judgeProxy } from "../check/proxy";
import { outcomeUnknown, resolve } from "../restart/resolve";
import { crashLoopDraft, restartFinishedDraft } from "../notify/drafts";
import { sameProcess } from "../check/classify";
import type { EngineMetrics } from "../core/engine";
import { crashLoopAt, type CrashLoop, type CrashLoopRule } from "../core/crash-loop";
import { crashLoopRuleOf } from "../config";
import { linkFor, type BackendLink } from "./backend-link";
import type { ReadPool } from "./read-pool";
import type { WatchStore } from "./store";
import type { WatcherTelemetry } from "./telemetry";

/** The on-call loop's part of a poll (lib/notify, lib/oncall); absent in unit tests of the scheduling. */
export interface OnCallDeps {
  book: OnCallBook;
  renotifyMinutes: number;
  recoveredAfterSeconds: number;
  /** Writes a notification now, inside the caller's transaction, unless the backend is in maintenance. */
  notify(draft: NotificationDraft): void;
  /** The unattended restart is due: ask the one restart verb (lib/restart/request.ts). */
  onUnattendedDue?(backendId: string): void;
}

/** requestedBy of the restarts stepwatch asks for itself (restart.unattended). */
export const UNATTENDED_BY = "stepwatch:unattended";
const DAY_MS = 86_400_000;
/** New processes by others read back at start: enough for any crash loop still going on. */
const SEED_STARTS_MS = DAY_MS;
const SEED_STARTS_MAX = 1000;
/** An unattended restart refused (cooldown) is asked for again at most this often. */
const UNATTENDED_RETRY_MS = 60_000;

export interface MonitorDeps {
  store: WatchStore;
  oncall?: OnCallDeps;
  thresholds: Thresholds;
  /** The fleet's crash-loop rule (config `crashLoop`; a backend's own fields override it). */
  crashLoop: CrashLoopRule;
  read: ReadOptions;
  now: () => number;
  observe: typeof observeFn;
  readProxy: typeof readProxyFn;
  telemetry: WatcherTelemetry;
  /** The read threads (lib/watcher/read-pool.ts), when the watcher runs any; else reads are made here. */
  pool?: ReadPool;
  /** Told of every verdict: an incident's evidence is captured when it starts (lib/watcher/evidence.ts). */
  evidence?: { onVerdict(backendId: string, verdict: Verdict): void };
}

/** What a monitor remembers of the state it stored last. */
interface StoredState<S extends string> {
  readonly config: { id: string };
  storedState: S | null;
  since: number | null;
}

/** A state other than the one stored last is queued as a transition (backends and proxies alike). */
function recordState<S extends string>(m: StoredState<S>, store: WatchStore, kind: TargetKind, at: number, state: S, reasons: Reason[]): void {
  if (state === m.storedState) return;
  store.enqueueTransition({ kind, targetId: m.config.id, at, fromState: m.storedState, toState: state, reasons });
  m.storedState = state;
  m.since = at;
}

export class BackendMonitor {
  history: Reading[] = [];
  last: { reading: Reading; verdict: Verdict } | null = null;
  /** The state last stored as a transition (seeded from the DB so a restart adds no duplicate). */
  storedState: BackendState | null = null;
  since: number | null = null;
  readonly recent = new RecentPoints();
  /**
   * The newest restart event of this backend (pending when outcome is null). Kept fresh by the
   * watcher: one query a second for every backend (refreshRestarts in ./index.ts), and at once when
   * the restart verb of this process inserts or resolves one (notifyRestart*). It only feeds the
   * verdict's `restarting` and the fleet view; the verb's own SQL check decides what may be asked.
   */
  lastRestart: RestartEventRow | null = null;
  /** The state before the current one (a notification's previousState). */
  previousState: BackendState | null = null;
  /** The on-call loop's view of the current problem (lib/notify/policy.ts). */
  problem: ProblemState = NO_PROBLEM;
  /**
   * The raw /metrics bodies an incident's verdict rests on, with the state judged from each, for its
   * evidence bundle: the newest read's and those since the last healthy one (lib/watcher/kept-bodies.ts).
   */
  private readonly kept = new KeptBodies();
  private unattendedAskedAt = Number.NEGATIVE_INFINITY;
  /**
   * The metrics of the newest reading that had any: the process last seen. Unlike the history it
   * is never trimmed, so a server that was down for an hour and came back is still a new process.
   */
  private lastProcess: EngineMetrics | null = null;
  /** When new processes stepwatch did not cause were seen (ms, oldest first): the crash-loop rule's input. */
  othersStarts: number[] = [];
  /** Its line cache and connection when it is read on this thread (with read threads they live on its thread). */
  private link: BackendLink | null = null;
  /** A restart a gone leader started and never gave a result (`adoptOrphan`): settled by this leader's next reading. */
  private orphan: number | null = null;

  /** `config` is replaced in place by a config reload (same id): history and state stay. */
  constructor(
    public config: BackendConfig,
    private readonly deps: MonitorDeps,
  ) {}

  /**
   * A reload changed this backend's settings (same id). Its readings stay unless the URL changed:
   * those came from another server, and counters of two servers are never compared (the stored
   * history, transitions and the sparkline stay either way).
   */
  reconfigure(config: BackendConfig): void {
    // The link follows the URL by itself (inThread).
    if (config.url !== this.config.url) {
      this.history = [];
      this.lastProcess = null;
      this.othersStarts = [];
    }
    this.config = config;
  }

  get target(): BackendTarget {
    return { url: this.config.url, apiKey: this.config.apiKey, model: this.config.model, engine: this.config.engine, probe: this.config.probe };
  }

  /** Reload the readings of the window and what was decided: "two waits" survive a restart of stepwatch. */
  seed(): void {
    const { store, thresholds, now } = this.deps;
    this.history = store.seedReadings(this.config.id, now() - historyWindowMs(thresholds), MAX_HISTORY_READINGS);
    for (const r of this.history) this.pushRecent(r, null);
    this.lastProcess = this.history.findLast((r) => r.metrics)?.metrics ?? null;
    this.seedDecisions();
  }

  /**
   * What the stored record says was decided: the last transition, the newest restart, the problem
   * and its notifications, the crash-loop starts. At start, and again when this replica becomes the
   * leader (lib/watcher/index.ts): what it judged as a standby was never written, so its next poll
   * writes a transition and a notification only where the record differs (no lost page, no double
   * page). The readings stay: a standby polled them itself.
   */
  seedDecisions(): void {
    const { store, now } = this.deps;
    this.othersStarts = store.othersStarts(this.config.id, now() - SEED_STARTS_MS, SEED_STARTS_MAX);
    const t = store.lastTransition("backend", this.config.id);
    this.storedState = (t?.toState as BackendState | undefined) ?? null;
    this.previousState = (t?.fromState as BackendState | null | undefined) ?? null;
    this.since = t?.at ?? null;
    this.refreshRestart();
    if (this.deps.oncall) this.problem = seedProblemState(store.problemSeed(this.config.id), this.storedState, this.since);
  }

  pending(): PendingRestart | null {
    const r = this.lastRestart;
    return r && r.outcome === null ? { requestedAt: r.requestedAt, processStartTime: r.processStartTimeAtRequest } : null;
  }

  /** Re-read the newest restart event (one indexed row); keeps the old one if the read failed. */
  refreshRestart(): void {
    const r = this.deps.store.lastRestart(this.config.id);
    if (r !== undefined) this.lastRestart = r;
  }

  async poll(signal: AbortSignal): Promise<void> {
    const { store, thresholds, now } = this.deps;
    const pendingRow = this.lastRestart?.outcome === null ? this.lastRestart : null;
    const pending = this.pending();
    const pool = this.deps.pool;
    const { reading, verdict } = await this.deps.observe(this.target, this.history, {
      thresholds,
      now,
      // With read threads, this backend's connection and line cache live on its thread.
      read: pool ? { ...this.deps.read, signal } : this.inThread(signal),
      pendingRestart: pending,
      reader: pool ? this.readOnPool(pool, signal) : undefined,
    });
    // The body goes to the evidence ring, never with the reading into a sample or a restart event
    // (undefined, not `delete`: JSON leaves it out, and the reading keeps its shape on the hot path).
    const rawBody = reading.rawBody;
    if (rawBody !== undefined) reading.rawBody = undefined;
    // A read cut short by shutdown is not evidence about the backend.
    if (signal.aborted) return;
    this.deps.telemetry.read("backend", reading.latencyMs, reading.outcome, seenLate(reading));

    // Only the leader writes and acts; a standby judges the same readings in memory.
    const leads = store.leader.isLeader();
    if (pendingRow && pending && leads) this.resolvePending(pendingRow, verdict, reading);
    if (this.orphan !== null && leads) this.settleOrphan(verdict, reading);
    if (reading.metrics) {
      if (this.lastProcess && !sameProcess(this.lastProcess, reading.metrics)) this.newProcess(reading, verdict, pendingRow);
      this.lastProcess = reading.metrics;
    }

    const previous = this.history;
    const latency = latencyOf(previous, reading); // before dropOlderLatency: it compares with the previous histograms
    this.history = trimHistory([...this.history, reading], now(), thresholds);
    dropOlderLatency(this.history);
    this.last = { reading, verdict };
    this.pushRecent(reading, verdict.rates.generationTokensPerSecond);
    const before = this.storedState;
    recordState(this, store, "backend", reading.at, verdict.state, verdict.reasons);
    if (this.storedState !== before) this.previousState = before;
    if (rawBody !== undefined) this.kept.keep(reading.at, verdict.state, rawBody);
    if (leads) this.deps.evidence?.onVerdict(this.config.id, verdict);
    this.onCall(reading, verdict, leads);
    // One text of the reading for both rows (lib/core/replay.ts encodeRecord).
    const text = encodeRecord(reading);
    store.enqueueSample(sampleRow(this.config.id, reading, verdict, latency, text), replayRow(this.config.id, reading, verdict, text));
  }

  private pooled: Reader | null = null;
  /** This backend's Reader on the pool; its thread forgets it when this loop ends. */
  private readOnPool(pool: ReadPool, signal: AbortSignal): Reader {
    if (!this.pooled) {
      const id = this.config.id;
      this.pooled = pool.readerOf(id);
      signal.addEventListener("abort", () => pool.forget(id), { once: true });
    }
    return this.pooled;
  }

  /**
   * The read options of a read made here: this backend's line cache and connection, made on the
   * first read and again when a reload changed the URL; closed when the monitor's loop ends (the
   * backend removed by a reload, or the watcher stopped).
   */
  private inThread(signal: AbortSignal): ReadOptions {
    const link = linkFor(this.link, this.config.url);
    if (link !== this.link) {
      this.link = link;
      signal.addEventListener("abort", () => link.close(), { once: true });
    }
    // Made again only when one of its parts changed (a reload replaces deps.read): observe copies it.
    const base = this.deps.read;
    const made = this.readMade;
    if (made && made.base === base && made.link === link && made.signal === signal) return made.opts;
    const opts = { ...base, signal, lineCache: link.cache, filterMemory: link.filter, dispatcher: base.dispatcher ?? link.client() ?? undefined };
    this.readMade = { base, link, signal, opts };
    return opts;
  }

  private readMade: { base: ReadOptions; link: BackendLink; signal: AbortSignal; opts: ReadOptions } | null = null;

  /** Notifications, acknowledgement clearing and the unattended restart for this verdict (lib/notify/policy.ts decides). */
  private onCall(reading: Reading, verdict: Verdict, leads: boolean): void {
    const oc = this.deps.oncall;
    if (!oc) return;
    const { store } = this.deps;
    const id = this.config.id;
    const at = reading.at;
    const ack = oc.book.acknowledgement(id);
    const unattended = this.config.unattended;
    const d = decide(this.problem, {
      backendId: id,
      verdict,
      at,
      previousState: this.previousState,
      acknowledged: ack !== null,
      inMaintenance: oc.book.silenced(id, at) !== null,
      restartPending: this.lastRestart?.outcome === null,
      renotifyMinutes: oc.renotifyMinutes,
      recoveredAfterSeconds: oc.recoveredAfterSeconds,
      unattended,
      // Read only while it matters (a recommended restart with unattended configured): one indexed count.
      unattendedAllowed: unattended && verdict.restartRecommended ? store.restartsBy(id, UNATTENDED_BY, at - DAY_MS) < unattended.maxPerDay : false,
    });
    this.problem = d.state;
    // The policy already left out what maintenance silences; these land with the transition.
    for (const draft of d.drafts) store.enqueueAfter(() => oc.notify(draft));
    if (d.clearAcknowledgement && ack) store.enqueueAfter(oc.book.clearAcknowledgement(id, at, `healthy again (${verdict.state})`));
    if (d.restartNow && leads && oc.onUnattendedDue && at - this.unattendedAskedAt >= UNATTENDED_RETRY_MS) {
      this.unattendedAskedAt = at;
      oc.onUnattendedDue(id);
    }
  }

  /** This backend's crash-loop rule: its own fields over the fleet's. */
  get crashLoopRule(): CrashLoopRule {
    return crashLoopRuleOf({ crashLoop: this.deps.crashLoop }, this.config);
  }

  /** The crash loop going on at `now`, or null (the fleet's flag, the export's gauge). */
  crashLoop(now: number): CrashLoop | null {
    return crashLoopAt(this.othersStarts, now, this.crashLoopRule);
  }

  /**
   * A process other than the one last seen answered (the same test that starts a new segment in the
   * classifier). Caused by stepwatch when a restart it asked for was pending (at the start of this
   * poll, or asked for while it read); otherwise it counts towards a crash loop, and the start that
   * makes one is notified, once per loop, unless acknowledged (maintenance: the watcher's notify).
   */
  private newProcess(reading: Reading, verdict: Verdict, pendingRow: RestartEventRow | null): void {
    const { store } = this.deps;
    const cause = pendingRow ?? (this.lastRestart?.outcome === null ? this.lastRestart : null);
    const at = reading.at;
    store.enqueueProcessStart({
      backendId: this.config.id,
      at,
      processStartTime: reading.metrics?.processStartTime ?? null,
      restartId: cause?.id ?? null,
      byStepwatch: cause !== null,
    });
    if (cause) return;
    const rule = this.crashLoopRule;
    this.othersStarts.push(at);
    const loop = crashLoopAt(this.othersStarts, at, rule);
    // Keep what can still matter: the window before the open loop's first start (so its identity,
    // `since`, comes out the same next time), or else the last window.
    const keepFrom = (loop ? loop.since : at) - rule.windowMinutes * 60_000;
    const drop = this.othersStarts.findIndex((s) => s >= keepFrom);
    if (drop > 0) this.othersStarts.splice(0, drop);
    const oc = this.deps.oncall;
    if (!loop || loop.since !== at || !oc || oc.book.acknowledgement(this.config.id) !== null) return;
    const base = { backendId: this.config.id, state: verdict.state, at, reasons: [reason("crash-loop", crashLoopText(loop, rule)), ...verdict.reasons] };
    store.enqueueAfter(() => oc.notify(crashLoopDraft(base, loop, rule)));
  }

  /** Persists what resolve (lib/restart/resolve.ts) decided: the row, its notification, the count. */
  private resolvePending(row: RestartEventRow, verdict: Verdict, reading: Reading): void {
    const { store, thresholds, now } = this.deps;
    const r = resolve(row, verdict, reading.at, now(), thresholds);
    if (!r) return;
    const base = { backendId: this.config.id, state: verdict.state, reasons: verdict.reasons, at: reading.at };
    const won = store.resolveRestart(row.id, r, () => this.deps.oncall?.notify(restartFinishedDraft(base, row, r)));
    // Counted only when this call closed it: the restart verb may have recorded a failure first.
    if (won) this.deps.telemetry.restartResolved(this.config.id, r.outcome);
    this.refreshRestart();
  }

  /**
   * A restart started by a leader that is gone, its command's result never recorded (this replica
   * took over). Its next reading settles it: a new process seen serving is `recovered` (resolve,
   * as for any pending restart); otherwise `unknown` at once, with its restart-finished
   * notification. Never run again either way.
   */
  adoptOrphan(restartId: number): void {
    this.orphan = restartId;
  }

  private settleOrphan(verdict: Verdict, reading: Reading): void {
    const id = this.orphan;
    this.orphan = null;
    const row = this.lastRestart;
    if (!row || row.id !== id || row.outcome !== null) return;
    const end = outcomeUnknown(row, this.deps.now());
    const base = { backendId: this.config.id, state: verdict.state, reasons: [reason("restart-outcome-unknown", end.resolution), ...verdict.reasons], at: reading.at };
    if (this.deps.store.resolveRestart(row.id, end, () => this.deps.oncall?.notify(restartFinishedDraft(base, row, end)))) {
      this.deps.telemetry.restartResolved(this.config.id, end.outcome);
    }
    this.refreshRestart();
  }

  /** The bodies kept, oldest first (decoded only when a capture asks). */
  get bodies(): EvidenceMetricsBody[] {
    return this.kept.list();
  }

  private pushRecent(r: Reading, genTps: number | null): void {
    this.recent.push(r.at, r.metrics?.running ?? null, genTps);
  }
}

export class ProxyMonitor {
  last: ProxyReading | null = null;
  state: ProxyState = "unknown";
  reasons: Reason[] = [reason("not-read-yet", "not read yet")];
  storedState: ProxyState | null = null;
  since: number | null = null;

  constructor(
    public config: ProxyConfig,
    private readonly deps: MonitorDeps,
  ) {}

  /** A reload changed this proxy (same id); a new URL is another proxy: its last read does not count towards "down". */
  reconfigure(config: ProxyConfig): void {
    if (config.url !== this.config.url) this.last = null;
    this.config = config;
  }

  /** The last stored transition: at start, and when this replica becomes the leader. */
  seed(): void {
    const t = this.deps.store.lastTransition("proxy", this.config.id);
    this.storedState = (t?.toState as ProxyState | undefined) ?? null;
    this.since = t?.at ?? null;
  }

  async poll(signal: AbortSignal): Promise<void> {
    const reading = await this.deps.readProxy({ url: this.config.url, apiKey: this.config.apiKey }, { ...this.deps.read, signal });
    if (signal.aborted) return;
    this.deps.telemetry.read("proxy", reading.latencyMs, reading.outcome, seenLate(reading));
    const j = judgeProxy(this.last, reading);
    if (!seenLate(reading)) this.last = reading; // a late read does not stand between two that count
    this.state = j.state;
    this.reasons = j.reasons;
    recordState(this, this.deps.store, "proxy", reading.at, j.state, j.reasons);
  }
}

/** The crash-loop reason's words. */
export function crashLoopText(loop: CrashLoop, rule: CrashLoopRule): string {
  return `crash loop: ${loop.restarts} new processes within ${rule.windowMinutes} min not caused by stepwatch (the rule: ${rule.restarts} in ${rule.windowMinutes} min); over after ${rule.windowMinutes} min without one`;
}
