/** The replicas' words: who leads and who is alive (GET /api/cluster, lib/cluster/leadership.ts). */
export interface ClusterView {
  /** The replica holding the lease now (its epoch, since when, until when by the database's clock; null expiry with SQLite), or null when none does. */
  leader: { id: string; epoch: number; since: string; expiresAt: string | null } | null;
  /** Replicas seen recently, and whether each leads. */
  replicas: Array<{ id: string; lastSeenAt: string; leader: boolean }>;
}

/** GET /api/cluster: the view plus which replica answered. */
export interface ClusterResponse extends ClusterView {
  answeredBy: string;
}

/** The top bar's line on replicas: which replica answered and who leads; null with SQLite (one replica). */
export interface ReplicaLine {
  answeredBy: string;
  /** The leader's id, null when none leads, undefined when the database did not say in time. */
  leader: string | null | undefined;
}

/**
 * Who may act, as a feature asks it: the watcher's flush, the outbox, the restart executor
 * (lib/cluster/leadership.ts `Leadership` is one; db/fence.ts `Fence` is its write half). Asked
 * just before acting, never kept: leadership can end between two questions, and a fenced write
 * (db/fence.ts fencedTransaction) is what finally refuses a deposed leader.
 */
export interface LeaderGate {
  readonly replicaId: string;
  isLeader(): boolean;
  /** The epoch this replica leads with now; null when it does not lead. */
  epoch(): number | null;
  /** True when no lease exists (one process alone): its writes are not fenced (db/fence.ts). */
  readonly sole?: boolean;
}

/** One process alone on its database, no lease (the features' default; their tests on either engine): it always leads, epoch 1. */
export function soleGate(replicaId = "local"): LeaderGate {
  return { replicaId, isLeader: () => true, epoch: () => 1, sole: true };
}
