/**
 * The durable outbox. `write` is synchronous and meant to run INSIDE the transaction of whatever
 * caused the notification (a transition, a restart event): either both are on disk or neither.
 * `run` is the background delivery loop: it never blocks a poll (polls only write rows), groups
 * the pending deliveries of each channel into messages (lib/notify/grouping.ts: problems,
 * reminders and recoveries that start within a window go out as one), sends each message, records
 * every attempt on every delivery it carries, and retries failures (network errors, 5xx, any
 * non-2xx) with exponential backoff for OUTBOX_DEFAULTS.giveUpAfterMs (two days). Rows stay in
 * SQLite, so a restart of stepwatch picks up where it left off: delivery is at-least-once and
 * receivers dedupe on the message's `id` (in the body and the X-Stepwatch-Notification-Id
 * header), which is the same on every retry: a message's members and id are written before its
 * first send. One exception bounds the copies a slow receiver gets: an attempt whose request was
 * written in full and then timed out waiting for the answer ("unconfirmed") is retried once; a
 * second such attempt counts as delivered, unconfirmed.
 *
 * Only the leader delivers (docs/decisions.md "Replicas"): a standby's loop sends nothing, and a
 * message's claim and each attempt's record are fenced writes (db/fence.ts). The work is read from
 * the database every round, so the pending rows of a leader that died are sent by the next one, as
 * the same message with the same id (its claim was written before its first send).
 */
import { randomUUID } from "node:crypto";
import type { Dispatcher } from "undici";
import type { Db } from "../../db/types";
import {
  attemptsWithErrorPrefix,
  claimMessage,
  deliverable,
  insertNotification,
  lastAttemptsOfChannel,
  nextDueAt,
  recordAttempt,
} from "../../db/queries/oncall";
import type { NotificationRow } from "../../db/schema";
import type { BackendState } from "../core/states";
import { type Reason } from "../core/types";
import type { ChannelConfig, NotificationsConfig } from "../config";
import { sendToChannel, UNCONFIRMED, type AttemptResult, type Sender } from "./channels";
import type { ChannelStatus, ChannelType, NotificationDraft, NotificationEvent } from "../core/events";
import { headline, linkOf, messageOf } from "./message";
import { dueMessages, groupOf, messageKey, windowMsOf, type DueMessage } from "./grouping";
import type { Labels } from "../core/labels";
import type { LeaderGate } from "../core/cluster";
import { fencedTransaction, LeaseLostError } from "../../db/fence";

export const OUTBOX_DEFAULTS = {
  /** The loop looks for due deliveries at least this often (and at once after a write). */
  tickMs: 1000,
  /** Messages sent concurrently per round. */
  batch: 20,
  /** One attempt's deadline. */
  attemptTimeoutMs: 10_000,
  /** Backoff: first retry after firstRetryMs, doubling, at most maxRetryMs apart. */
  firstRetryMs: 5_000,
  maxRetryMs: 30 * 60_000,
  /** Retried for two days ("at least a day"), then marked failed and shown. */
  giveUpAfterMs: 48 * 3600_000,
  /** A channel whose last attempts all failed, this many in a row, is shown on the dashboard. */
  failingAfter: 3,
};
export type OutboxTuning = typeof OUTBOX_DEFAULTS;

export interface OutboxOptions {
  now?: () => number;
  send?: Sender;
  dispatcher?: Dispatcher;
  log?: (msg: string) => void;
  tuning?: Partial<OutboxTuning>;
  /**
   * Told of every failed delivery attempt, by channel id, after it is recorded (the watcher passes
   * it on to its telemetry: stepwatch_notification_failures_total{channel} in lib/api/export/metrics.ts).
   */
  onAttemptFailed?: (channelId: string) => void;
  /** A backend's labels in the config in force (stored with its notification; the message carries them). */
  labelsOf?: (backendId: string) => Labels;
  /** Who may deliver (lib/cluster/leadership.ts); none: this process alone, always leading. */
  leader?: LeaderGate;
}

/** In-memory totals since this process started (for a metrics export; the DB has the full record). */
export interface OutboxCounters {
  attempts: number;
  delivered: number;
  failedAttempts: number;
  givenUp: number;
}

/** The delay before attempt n+1 after n failed attempts (n >= 1). */
export function retryDelayMs(failedAttempts: number, t: Pick<OutboxTuning, "firstRetryMs" | "maxRetryMs"> = OUTBOX_DEFAULTS): number {
  return Math.min(t.maxRetryMs, t.firstRetryMs * 2 ** Math.min(30, Math.max(0, failedAttempts - 1)));
}

export function channelTakes(c: ChannelConfig, event: NotificationEvent, backendId: string): boolean {
  return (c.events === null || c.events.includes(event)) && (c.backends === null || c.backends.includes(backendId));
}

export class Outbox {
  readonly counters: OutboxCounters = { attempts: 0, delivered: 0, failedAttempts: 0, givenUp: 0 };
  private readonly tuning: OutboxTuning;
  private readonly now: () => number;
  private readonly send: Sender;
  private readonly log: (msg: string) => void;
  /** Messages in flight (messageKey) and the deliveries they carry. */
  private readonly inFlight = new Set<string>();
  private readonly inFlightDeliveries = new Set<number>();
  private readonly health = new Map<string, Omit<ChannelStatus, "id" | "type" | "failing">>();
  private wake: (() => void) | null = null;
  private kicked = false;
  /** Whether the last round found this replica leading (a change is logged once). */
  private delivering = true;

  constructor(
    private readonly db: Db,
    private current: NotificationsConfig,
    private readonly opts: OutboxOptions = {},
  ) {
    this.tuning = { ...OUTBOX_DEFAULTS, ...opts.tuning };
    this.now = opts.now ?? Date.now;
    this.send = opts.send ?? sendToChannel;
    this.log = opts.log ?? ((m) => console.error(m));
    for (const c of current.channels) this.health.set(c.id, this.seedHealth(c.id));
  }

  /** The channels and publicUrl in force (replaced by a config reload). */
  get config(): NotificationsConfig {
    return this.current;
  }

  /**
   * A config reload: the new channels take the next notifications and the pending deliveries of a
   * kept channel. A removed channel's pending deliveries stay queued (they fail, saying so, until
   * the channel comes back); a kept channel keeps its health, a new one is seeded from the DB.
   */
  reconfigure(next: NotificationsConfig): void {
    const ids = new Set(next.channels.map((c) => c.id));
    for (const id of [...this.health.keys()]) if (!ids.has(id)) this.health.delete(id);
    for (const c of next.channels) if (!this.health.has(c.id)) this.health.set(c.id, this.seedHealth(c.id));
    this.current = next;
    this.kick();
  }

  /**
   * Stores a notification and one pending delivery per channel that takes it. Synchronous: call
   * it inside the transaction of its cause. The row is written even when no channel takes it
   * (the page shows it, and the problem state is rebuilt from these rows after a restart). Its
   * first attempt is due at the end of its group's window (groupWaitSeconds, groupIntervalSeconds
   * for a reminder; at once for an event never grouped): it goes out then, with whatever of its
   * group was written meanwhile.
   */
  write(draft: NotificationDraft): NotificationRow {
    const channels = this.config.channels.filter((c) => channelTakes(c, draft.event, draft.backendId));
    const now = this.now();
    const row = insertNotification(
      this.db,
      {
        uid: randomUUID(),
        event: draft.event,
        backendId: draft.backendId,
        state: draft.state,
        previousState: draft.previousState,
        reasons: draft.reasons,
        at: draft.at,
        link: linkOf(this.config.publicUrl, draft.backendId),
        details: draft.details ?? {},
        labels: this.opts.labelsOf?.(draft.backendId) ?? {},
      },
      channels,
      now,
      now + windowMsOf(groupOf({ event: draft.event, details: draft.details ?? {} }), this.config),
    );
    this.kick();
    return row;
  }

  /** Wake the loop (after the current transaction committed: the wake runs on a later tick). */
  kick(): void {
    this.kicked = true;
    const w = this.wake;
    if (w) setImmediate(w);
  }

  /**
   * The delivery loop; ends when `signal` aborts (an attempt cut short is not recorded). Attempts
   * are not awaited round by round: a receiver that hangs until its deadline holds only its own
   * delivery, never another channel's (at most `batch` attempts are in flight).
   */
  async run(signal: AbortSignal): Promise<void> {
    const running = new Set<Promise<void>>();
    while (!signal.aborted) {
      try {
        for (const p of this.launch(signal)) {
          running.add(p);
          void p.finally(() => {
            running.delete(p);
            this.kick(); // room for the next due delivery
          });
        }
      } catch (e) {
        this.log(`stepwatch: notification delivery round failed (retried): ${(e as Error)?.message ?? String(e)}`);
      }
      if (signal.aborted) break;
      let waitMs = this.tuning.tickMs;
      try {
        const next = nextDueAt(this.db, [...this.inFlightDeliveries]);
        if (next !== null) waitMs = Math.max(0, Math.min(waitMs, next - this.now()));
      } catch {
        /* the DB may be briefly unavailable; try again next tick */
      }
      if (this.kicked) {
        this.kicked = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          this.wake = null;
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        signal.addEventListener("abort", done, { once: true });
        this.wake = done;
      });
      this.kicked = false;
    }
    await Promise.allSettled(running);
  }

  /** One round, awaited (tests): every due message not already in flight, concurrently. Returns how many were tried. */
  async deliverDue(signal?: AbortSignal): Promise<number> {
    const started = this.launch(signal);
    await Promise.all(started);
    return started.length;
  }

  /** Starts the due messages that are not in flight yet, up to `batch` in flight. */
  private launch(signal?: AbortSignal): Promise<void>[] {
    if (!this.leads()) return [];
    const room = this.tuning.batch - this.inFlight.size;
    if (room <= 0) return [];
    const now = this.now();
    const started: Promise<void>[] = [];
    for (const m of dueMessages(deliverable(this.db, now), now, this.inFlight).slice(0, room)) {
      // Its members and id are on disk before the first send: a retry, after a crash too, sends the same message.
      if (m.fresh && !this.fenced(() => claimMessage(this.db, m.members.map((x) => x.delivery.id), m.id, now), false)) continue;
      started.push(this.attempt(m, signal));
    }
    return started;
  }

  /** Whether this replica may deliver now; a change is logged once. */
  private leads(): boolean {
    const leads = this.opts.leader?.isLeader() ?? true;
    if (leads !== this.delivering) this.log(`stepwatch: ${this.opts.leader?.replicaId} ${leads ? "leads: delivering notifications" : "does not lead: delivers no notifications"}`);
    this.delivering = leads;
    return leads;
  }

  /** A write only the leader makes; `lost` when this replica does not lead (any more): nothing written. */
  private fenced<T>(write: () => T, lost: T): T {
    const leader = this.opts.leader;
    if (!leader) return write();
    try {
      return fencedTransaction(this.db, leader, write);
    } catch (e) {
      if (!(e instanceof LeaseLostError)) throw e;
      this.leads();
      return lost;
    }
  }

  private async attempt(m: DueMessage, signal?: AbortSignal): Promise<void> {
    const key = messageKey(m);
    const ids = m.members.map((x) => x.delivery.id);
    this.inFlight.add(key);
    for (const id of ids) this.inFlightDeliveries.add(id);
    try {
      const first = m.members[0].delivery;
      const channel = this.config.channels.find((c) => c.id === m.channelId);
      const message = messageOf(m.id, m.group, m.members.map((x) => x.notification), this.config.publicUrl);
      const started = this.now();
      const t0 = performance.now();
      let result: AttemptResult;
      if (!channel) {
        // The config changed since it was queued: keep it (the channel may come back), say why.
        result = { ok: false, statusCode: null, error: `channel "${m.channelId}" is not in the config any more`, retryAfterMs: null };
      } else {
        try {
          result = await this.send(channel, message, { timeoutMs: this.tuning.attemptTimeoutMs, dispatcher: this.opts.dispatcher, signal });
        } catch (e) {
          result = { ok: false, statusCode: null, error: `sender crashed: ${(e as Error)?.message ?? String(e)}`, retryAfterMs: null };
        }
      }
      if (signal?.aborted) return; // shutting down: not evidence about the channel; stays pending
      const durationMs = Math.round(performance.now() - t0);
      const at = this.now();
      // Every member has had every attempt of its message: the first one's count is the message's.
      const failedSoFar = first.attempts + 1;
      const createdAt = Math.min(...m.members.map((x) => x.delivery.createdAt));
      let update: Parameters<typeof recordAttempt>[3];
      if (result.ok) {
        update = { status: "delivered", nextAttemptAt: at, lastError: null, deliveredAt: at };
      } else if (result.unconfirmed && attemptsWithErrorPrefix(this.db, first.id, `${UNCONFIRMED}:`) >= 1) {
        // A second request written in full and not answered in time. The receiver most likely has
        // it (twice, with the same id header): a slow receiver would otherwise get a copy on every
        // retry for two days (docs/decisions.md "A slow receiver gets a message at most twice").
        update = { status: "delivered", nextAttemptAt: at, lastError: `${result.error}; twice: counted as delivered, unconfirmed`, deliveredAt: at };
      } else if (at - createdAt >= this.tuning.giveUpAfterMs) {
        update = {
          status: "failed",
          nextAttemptAt: at,
          lastError: `given up after ${failedSoFar} attempts over ${Math.round((at - createdAt) / 3600_000)} h: ${result.error}`,
          deliveredAt: null,
        };
      } else {
        const delay = Math.max(retryDelayMs(failedSoFar, this.tuning), Math.min(result.retryAfterMs ?? 0, this.tuning.maxRetryMs));
        update = { status: "pending", nextAttemptAt: at + delay, lastError: result.error, deliveredAt: null };
      }
      // Deposed while it was sent: not recorded here, so the next leader sends it again (at least once, same id).
      const recorded = this.fenced(() => {
        recordAttempt(this.db, ids, { at: started, ok: result.ok, statusCode: result.statusCode, error: result.error, durationMs }, update);
        return true;
      }, false);
      if (!recorded) return;
      this.count(m.channelId, result, at, update.status === "failed");
      if (!result.ok) {
        this.opts.onAttemptFailed?.(m.channelId);
        this.log(
          `stepwatch: notification "${headline(message)}" (${m.members.length === 1 ? "1 notification" : `${m.members.length} notifications`}) to channel ${m.channelId} failed (attempt ${failedSoFar}): ${result.error}` +
            (update.status === "pending" ? `; next attempt at ${new Date(update.nextAttemptAt).toISOString()}` : "; given up"),
        );
      }
    } finally {
      this.inFlight.delete(key);
      for (const id of ids) this.inFlightDeliveries.delete(id);
    }
  }

  private count(channelId: string, r: AttemptResult, at: number, gaveUp: boolean): void {
    this.counters.attempts++;
    if (r.ok) this.counters.delivered++;
    else this.counters.failedAttempts++;
    if (gaveUp) this.counters.givenUp++;
    const h = this.health.get(channelId);
    if (!h) return;
    h.lastAttemptAt = at;
    if (r.ok) {
      h.consecutiveFailures = 0;
      h.lastOkAt = at;
      h.lastError = null;
    } else {
      h.consecutiveFailures++;
      h.lastError = r.error;
    }
  }

  private seedHealth(channelId: string): Omit<ChannelStatus, "id" | "type" | "failing"> {
    const h = { consecutiveFailures: 0, lastAttemptAt: null as number | null, lastOkAt: null as number | null, lastError: null as string | null };
    try {
      const attempts = lastAttemptsOfChannel(this.db, channelId, 50);
      h.lastAttemptAt = attempts[0]?.at ?? null;
      for (const a of attempts) {
        if (a.ok) {
          h.lastOkAt = a.at;
          break;
        }
        h.consecutiveFailures++;
        h.lastError ??= a.error;
      }
    } catch {
      /* an unreadable DB shows up elsewhere (storageError) */
    }
    return h;
  }

  /** Per configured channel: how its recent attempts went (from memory; seeded from the DB at start). */
  channelStatus(): ChannelStatus[] {
    return this.config.channels.map((c) => {
      const h = this.health.get(c.id)!;
      return { id: c.id, type: c.type, ...h, failing: h.consecutiveFailures >= this.tuning.failingAfter };
    });
  }
}
