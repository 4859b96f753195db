/**
 * A replica on PostgreSQL as the server runs one (lib/runtime.ts) and the benchmark measures one
 * (bench/scale-worker.ts): the shared store (db/pg/store.ts) and the lease on an asynchronous pool
 * of its own, so renewing it never waits behind the store; the first grant (or the answer that
 * another replica leads) is had before anything may act. `stop()` releases the lease and its pool.
 */
import { openPg } from "../../db/pg/client";
import { openPgStore, type OpenPgStoreOptions } from "../../db/pg/store";
import type { DbHandle } from "../../db/types";
import { keepLease, type Leadership, type LeaseOptions } from "./leadership";

export interface PgReplica {
  db: DbHandle;
  leadership: Leadership;
}

export async function openPgReplica(
  url: string,
  replicaId: string,
  opts: { setting?: string; spawnWorker?: OpenPgStoreOptions["spawnWorker"] } & Pick<LeaseOptions, "leaseMs" | "onChange"> = {},
): Promise<PgReplica> {
  const db = await openPgStore(url, { setting: opts.setting, spawnWorker: opts.spawnWorker });
  try {
    const leaseDb = await openPg(url, { setting: opts.setting, max: 2, migrate: false });
    const lease = keepLease(leaseDb.db, replicaId, { leaseMs: opts.leaseMs, onChange: opts.onChange });
    await lease.tick();
    const stopLease = lease.stop;
    const leadership: Leadership = {
      ...lease,
      stop: async () => {
        await stopLease();
        await leaseDb.close().catch(() => {});
      },
    };
    return { db, leadership };
  } catch (e) {
    db.close();
    throw e;
  }
}
