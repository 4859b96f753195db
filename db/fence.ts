/**
 * Action writes (a transition, an outbox row, a restart's start or outcome, a delivery's mark) go
 * through `fencedTransaction`: one transaction that, on PostgreSQL, first finds the leader lease
 * still held by this replica with its epoch and unexpired and share-locks that row until commit
 * (db/pg/lease.ts), so a deposed leader's late write fails with LeaseLostError and writes nothing.
 * On SQLite there is one replica and it always leads: the transaction alone. The features call it
 * with their LeaderGate (lib/core/cluster.ts) for every flush, delivery mark, restart start or
 * result and retention chunk.
 */
import type { Db } from "./types";
import { LeaseLostError } from "./pg/lease-error";

export { LeaseLostError };

/** What a fenced write needs to know of who may act (lib/cluster/leadership.ts Leadership has it). */
export interface Fence {
  readonly replicaId: string;
  /** The epoch this replica leads with now, null when it does not lead. */
  epoch(): number | null;
  /**
   * True when no lease exists (one process alone: the features' default, and their tests on either
   * engine): the write is one plain transaction, with no lease to prove.
   */
  readonly sole?: boolean;
}

/** The storage client's check, present on the PostgreSQL client only (db/pg/sync-client.ts). */
interface FencingClient {
  assertLease?(holder: string, epoch: number): void;
}

/** Runs `write` in one transaction that proves, first, that this replica still leads; throws LeaseLostError (nothing written) when it does not. */
export function fencedTransaction<T>(db: Db, fence: Fence, write: () => T): T {
  const epoch = fence.epoch();
  if (epoch === null) throw new LeaseLostError(fence.replicaId, null);
  const client = db.$client as unknown as FencingClient & Db["$client"];
  return client.transaction(() => {
    if (!fence.sole) client.assertLease?.(fence.replicaId, epoch);
    return write();
  })();
}
