/**
 * The watcher's door to SQLite for what a poll writes and reads (the retention loop in ./index.ts
 * calls db/queries/history.ts applyRetention itself, in chunks of backends). Writes are queued and flushed in one transaction per tick;
 * when a write fails (disk full, read-only file) the batch stays queued (bounded: oldest samples
 * dropped first, transitions kept longest) and is retried on the next tick, while polling and the
 * live view go on. Reads that fail fall back to "nothing stored". Nothing here throws.
 *
 * Only the leader writes (docs/decisions.md "Replicas"): every replica polls and judges, a standby's
 * flush drops what is queued (its queue never fills), and the leader's is one fenced transaction
 * (db/fence.ts): a replica deposed meanwhile writes nothing and drops the batch, as a standby.
 */
import type { Db } from "../../db/types";
import { fencedTransaction, LeaseLostError } from "../../db/fence";
import { soleGate, type LeaderGate } from "../core/cluster";
import { lastRestartOf, latestRestartsOf, resolveRestart, startedWithoutResult } from "../../db/queries/restarts";
import { insertSamples, insertTransition, lastTransition, recentReadings, type NewSample, type NewTransition, type TargetKind } from "../../db/queries/readings";
import { countRestartsBy, lastNotificationOf } from "../../db/queries/oncall";
import { insertProcessStart, othersStartsSince, type NewProcessStart } from "../../db/queries/processes";
import { insertReplayRows, type NewReplayRow } from "../../db/queries/replay";
import type { NotificationRow, RestartEventRow, TransitionRow } from "../../db/schema";
import type { Reading } from "../core/types";

export interface StoreLimits {
  /** Samples kept in memory while the DB refuses writes (about an hour of a 10-backend fleet at 5 s). */
  maxQueuedSamples: number;
  maxQueuedTransitions: number;
}

export const STORE_LIMITS: StoreLimits = { maxQueuedSamples: 10_000, maxQueuedTransitions: 2_000 };

export class WatchStore {
  private samples: NewSample[] = [];
  /** The replay record of each queued sample (db/queries/replay.ts), dropped with it when over the limit. */
  private replays: NewReplayRow[] = [];
  private transitions: NewTransition[] = [];
  /** New processes seen (rare: one per restart), kept with the transitions when writes fail. */
  private starts: NewProcessStart[] = [];
  /** Writes that must land in the same transaction as the transitions queued before them (notifications). */
  private after: Array<() => void> = [];
  private error: string | null = null;
  dropped = 0;
  /** Whether the last flush found this replica leading: a change is logged once, not every second. */
  private writing = true;

  constructor(
    readonly db: Db,
    private readonly limits: StoreLimits = STORE_LIMITS,
    private readonly log: (msg: string) => void = (m) => console.error(m),
    /** Told of every failed read or write (the export's stepwatch_storage_errors_total). */
    private readonly onFailure: () => void = () => {},
    /** Who may write (lib/cluster/leadership.ts); this process alone by default. */
    readonly leader: LeaderGate = soleGate(),
  ) {}

  /** The storage problem an operator should see, or null when the last write went through. */
  get storageError(): string | null {
    return this.error;
  }

  get queued(): number {
    return this.samples.length + this.transitions.length + this.starts.length + this.after.length;
  }

  enqueueSample(row: NewSample, replay?: NewReplayRow): void {
    this.samples.push(row);
    if (replay) this.replays.push(replay);
    const over = this.samples.length - this.limits.maxQueuedSamples;
    if (over > 0) {
      this.samples.splice(0, over);
      this.dropped += over;
    }
    const overReplays = this.replays.length - this.limits.maxQueuedSamples;
    if (overReplays > 0) this.replays.splice(0, overReplays);
  }

  enqueueTransition(row: NewTransition): void {
    this.transitions.push(row);
    const over = this.transitions.length - this.limits.maxQueuedTransitions;
    if (over > 0) this.transitions.splice(0, over);
  }

  /** A new process seen; written in the next flush, before the notifications queued after it. */
  enqueueProcessStart(row: NewProcessStart): void {
    this.starts.push(row);
    const over = this.starts.length - this.limits.maxQueuedTransitions;
    if (over > 0) this.starts.splice(0, over);
  }

  /**
   * Queue a write for the next flush, after the transitions queued so far, in the same
   * transaction: a notification is on disk exactly when the transition that caused it is.
   */
  enqueueAfter(write: () => void): void {
    this.after.push(write);
    const over = this.after.length - this.limits.maxQueuedTransitions;
    if (over > 0) this.after.splice(0, over);
  }

  /**
   * Writes everything queued in one fenced transaction. Returns false (and keeps the queue) on a
   * storage failure. Not leading (or deposed before the commit): the queue is dropped, true.
   */
  flush(): boolean {
    if (!this.leader.isLeader()) {
      this.notLeading(`${this.leader.replicaId} does not lead`);
      return true;
    }
    if (this.queued === 0) return true;
    const samples = this.samples;
    const replays = this.replays;
    const transitions = this.transitions;
    const starts = this.starts;
    const after = this.after;
    try {
      fencedTransaction(this.db, this.leader, () => {
        insertSamples(this.db, samples);
        insertReplayRows(this.db.$client, replays);
        for (const t of transitions) insertTransition(this.db, t);
        for (const p of starts) insertProcessStart(this.db, p);
        for (const w of after) w();
      });
      this.samples = this.samples.slice(samples.length);
      this.replays = this.replays.slice(replays.length);
      this.transitions = this.transitions.slice(transitions.length);
      this.starts = this.starts.slice(starts.length);
      this.after = this.after.slice(after.length);
      if (this.error) this.log(`stepwatch: storage writable again; ${samples.length} queued samples written`);
      this.error = null;
      if (!this.writing) this.log(`stepwatch: ${this.leader.replicaId} leads: writing what it judges`);
      this.writing = true;
      return true;
    } catch (e) {
      if (e instanceof LeaseLostError) {
        this.notLeading(e.message);
        return true;
      }
      this.fail("cannot write to the database", e);
      return false;
    }
  }

  /** A standby (or a deposed leader) writes nothing: what is queued goes, logged once per change. */
  private notLeading(why: string): void {
    if (this.writing) this.log(`stepwatch: ${why}: polling and judging go on, nothing is written or notified here`);
    this.writing = false;
    this.dropQueue();
  }

  /** Forgets what is queued: a standby's judgements, and at a takeover those made before the re-seed. */
  dropQueue(): void {
    this.samples = [];
    this.replays = [];
    this.transitions = [];
    this.starts = [];
    this.after = [];
  }

  /** Record a failure from another writer (the retention job) so the operator sees it. */
  fail(what: string, e: unknown): void {
    this.onFailure();
    const msg = `${what}: ${(e as Error)?.message ?? String(e)}`;
    if (msg !== this.error) this.log(`stepwatch: ${msg} (polling goes on; writes are retried)`);
    this.error = msg;
  }

  seedReadings(backendId: string, since: number, limit: number): Reading[] {
    return this.read(() => recentReadings(this.db, backendId, since, limit), []);
  }

  /** When the new processes stepwatch did not cause were seen since `since` (the crash-loop rule's seed). */
  othersStarts(backendId: string, since: number, limit: number): number[] {
    return this.read(() => othersStartsSince(this.db, backendId, since, limit), []);
  }

  lastTransition(kind: TargetKind, targetId: string): TransitionRow | undefined {
    return this.read(() => lastTransition(this.db, kind, targetId), undefined);
  }

  /** undefined when the read failed (keep what was known), null when there is none. */
  lastRestart(backendId: string): RestartEventRow | null | undefined {
    return this.read<RestartEventRow | null | undefined>(() => lastRestartOf(this.db, backendId) ?? null, undefined);
  }

  /** The newest restart event of every backend that has one; undefined when the read failed. */
  latestRestarts(): Map<string, RestartEventRow> | undefined {
    return this.read<Map<string, RestartEventRow> | undefined>(() => latestRestartsOf(this.db), undefined);
  }

  /** Resolves a pending restart; `then` (the restart-finished notification) runs in the same transaction, only if this call won. */
  resolveRestart(id: number, r: Parameters<typeof resolveRestart>[2], then?: () => void): boolean {
    if (!this.leader.isLeader()) return false;
    return this.read(() => {
      try {
        return fencedTransaction(this.db, this.leader, () => {
          const won = resolveRestart(this.db, id, r);
          if (won) then?.();
          return won;
        });
      } catch (e) {
        if (e instanceof LeaseLostError) return false; // the next leader resolves it
        throw e;
      }
    }, false);
  }

  /** Pending restarts started and never given a result (a takeover settles those not running here: recovered or `unknown`). */
  startedWithoutResult(): RestartEventRow[] {
    return this.read(() => startedWithoutResult(this.db), []);
  }

  /** Unattended restarts of a backend since `since` (maxPerDay); a failed read counts as "limit reached". */
  restartsBy(backendId: string, requestedBy: string, since: number): number {
    return this.read(() => countRestartsBy(this.db, backendId, requestedBy, since), Number.POSITIVE_INFINITY);
  }

  /** The newest problem/recovered and restart-scheduled notifications (seed the problem state). */
  problemSeed(backendId: string): { lastProblem: NotificationRow | null; lastScheduled: NotificationRow | null } {
    return this.read(
      () => ({
        lastProblem: lastNotificationOf(this.db, backendId, ["stuck", "down", "recovered"]) ?? null,
        lastScheduled: lastNotificationOf(this.db, backendId, ["restart-scheduled"]) ?? null,
      }),
      { lastProblem: null, lastScheduled: null },
    );
  }

  private read<T>(f: () => T, fallback: T): T {
    try {
      return f();
    } catch (e) {
      this.fail("cannot read the database", e);
      return fallback;
    }
  }
}
