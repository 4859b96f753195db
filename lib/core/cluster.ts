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
