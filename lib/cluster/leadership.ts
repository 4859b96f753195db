/**
 * Who may act: the one replica that holds the leader lease (db/pg/lease.ts) with its epoch. Every
 * replica reads the fleet and serves the dashboard; only the leader writes transitions, delivers
 * notifications and runs restarts, and each of those asks `isLeader()` just before it acts and
 * writes through `fenced` with `epoch()`.
 *
 * A replica judges its lease by its own monotonic clock, started before the request that got the
 * grant, for the grant's length as the database measured it: a replica whose database went away
 * stops acting when that time runs out, without asking anyone, and before any other replica can
 * have taken the lease (the other one needs the database's clock to pass expiresAt first).
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { acquireLease, currentLease, heartbeat, releaseLease, replicasSeen, type LeaseGrant } from "../../db/pg/lease";
import type { PgDb } from "../../db/pg/client";
import { pgErrorText } from "../../db/pg/client";

import type { ClusterView } from "../core/cluster";

export type { ClusterView };

export interface Leadership {
  readonly replicaId: string;
  /** True while this replica may act (it holds the lease and its own clock says the grant lasts). */
  isLeader(): boolean;
  /** The epoch an action is fenced with while leading; null otherwise. */
  epoch(): number | null;
  view(): Promise<ClusterView>;
  stop(): Promise<void>;
}

/** STEPWATCH_REPLICA_ID, else host and pid. */
export function replicaIdFrom(env: Record<string, string | undefined> = process.env): string {
  const given = env.STEPWATCH_REPLICA_ID?.trim();
  return given ? given : `${os.hostname()}:${process.pid}`;
}

/** With SQLite there is one replica and it always leads (epoch 1). */
export function soleLeader(replicaId: string, startedAt = new Date()): Leadership {
  return {
    replicaId,
    isLeader: () => true,
    epoch: () => 1,
    view: async () => ({
      leader: { id: replicaId, epoch: 1, since: startedAt.toISOString(), expiresAt: null },
      replicas: [{ id: replicaId, lastSeenAt: new Date().toISOString(), leader: true }],
    }),
    stop: async () => {},
  };
}

export interface LeaseOptions {
  /** How long a grant lasts (default 15 s). */
  leaseMs?: number;
  /** How often the lease is renewed or tried (default a third of the lease). */
  pollMs?: number;
  /** Taken off the grant as the replica's own clock sees it: room for clock rate and scheduling. */
  marginMs?: number;
  /** Told when this replica starts or stops leading, and why. */
  onChange?(leading: boolean, why: string): void;
}

export const DEFAULT_LEASE_MS = 15_000;

/** Keeps trying for the lease and renewing it; `stop()` releases it so another replica leads at once. */
export function keepLease(db: PgDb, replicaId: string, opts: LeaseOptions = {}): Leadership & { tick(): Promise<void> } {
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const pollMs = opts.pollMs ?? Math.max(100, Math.floor(leaseMs / 3));
  const marginMs = opts.marginMs ?? Math.min(1000, Math.floor(leaseMs / 10));
  let held: { grant: LeaseGrant; deadline: number } | null = null;
  let leading = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;

  const valid = () => held !== null && performance.now() < held.deadline;
  const tell = (now: boolean, why: string) => {
    if (now !== leading) {
      leading = now;
      opts.onChange?.(now, why);
    }
  };

  async function once(): Promise<void> {
    const sentAt = performance.now();
    try {
      await heartbeat(db, replicaId);
      const grant = await acquireLease(db, replicaId, leaseMs);
      if (stopped) return;
      if (grant) {
        const lasts = grant.expiresAt.getTime() - grant.dbNow.getTime();
        held = { grant, deadline: sentAt + lasts - marginMs };
        tell(true, `holds the lease, epoch ${grant.epoch}`);
      } else {
        held = null;
        tell(false, "another replica holds the lease");
      }
    } catch (e) {
      // The database did not answer: keep the grant only as long as our own clock says it lasts.
      if (!valid()) {
        held = null;
        tell(false, `cannot reach the database: ${pgErrorText(e)}`);
      }
    }
  }

  const tick = async () => {
    running ??= once().finally(() => (running = null));
    await running;
  };

  const loop = () => {
    if (stopped) return;
    void tick().finally(() => {
      if (!stopped) timer = setTimeout(loop, pollMs);
    });
  };
  loop();

  // A lapse is noticed even when no tick is due: the deadline is checked on every question.
  const isLeader = () => {
    const ok = valid();
    if (!ok && leading) tell(false, "the lease ran out before it was renewed");
    return ok;
  };

  return {
    replicaId,
    isLeader,
    epoch: () => (isLeader() ? held!.grant.epoch : null),
    tick,
    async view() {
      const [lease, replicas] = await Promise.all([currentLease(db), replicasSeen(db, Math.max(3 * pollMs, leaseMs * 2))]);
      const live = lease && lease.expiresAt > lease.dbNow ? lease : null;
      return {
        leader: live ? { id: live.holder, epoch: live.epoch, since: live.acquiredAt.toISOString(), expiresAt: live.expiresAt.toISOString() } : null,
        replicas: replicas.map((r) => ({ id: r.id, lastSeenAt: r.lastSeenAt.toISOString(), leader: live?.holder === r.id })),
      };
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
      const had = held;
      held = null;
      tell(false, "stopped");
      if (had) await releaseLease(db, replicaId, had.grant.epoch).catch(() => {});
    },
  };
}
