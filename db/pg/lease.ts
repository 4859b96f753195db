/**
 * The leader lease, timed by the database's clock (docs/decisions.md "Replicas: a lease row, not
 * an advisory lock"). One statement takes or renews it: a replica gets the row when it already
 * holds it unexpired, or when it has lapsed; each change of hands (or lapse) adds one to the epoch.
 * Nothing here reads a replica's clock.
 */
import { LeaseLostError } from "./lease-error";
import { sql } from "drizzle-orm";
import type { PgDb } from "./client";

export const LEADER_LEASE = "leader";

export interface LeaseGrant {
  holder: string;
  epoch: number;
  acquiredAt: Date;
  expiresAt: Date;
  /** The database's clock when it answered: expiresAt - dbNow is how long the grant lasts. */
  dbNow: Date;
}

/** Times come back as epoch milliseconds (float8): drizzle's node-postgres driver returns timestamptz as text. */
interface LeaseRow extends Record<string, unknown> {
  holder: string;
  epoch: string | number;
  acquired_ms: number;
  expires_ms: number;
  db_now_ms: number;
}

const ms = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000)::float8`);

const grant = (r: LeaseRow): LeaseGrant => ({
  holder: r.holder,
  epoch: Number(r.epoch),
  acquiredAt: new Date(r.acquired_ms),
  expiresAt: new Date(r.expires_ms),
  dbNow: new Date(r.db_now_ms),
});

/**
 * Takes or renews the lease for `holder` for `leaseMs`. Returns the grant, or null when another
 * replica holds it unexpired. The epoch stays while the same holder renews in time; it grows when
 * the lease changes hands or lapsed (so a late write with the old epoch fails even when the same
 * replica took it back).
 */
export async function acquireLease(db: PgDb, holder: string, leaseMs: number): Promise<LeaseGrant | null> {
  const { rows } = await db.execute<LeaseRow>(sql`
    INSERT INTO cluster_lease AS l (name, holder, epoch, acquired_at, renewed_at, expires_at)
    VALUES (${LEADER_LEASE}, ${holder}, 1, now(), now(), now() + make_interval(secs => ${leaseMs / 1000}))
    ON CONFLICT (name) DO UPDATE SET
      holder = EXCLUDED.holder,
      epoch = CASE WHEN l.holder = EXCLUDED.holder AND l.expires_at > now() THEN l.epoch ELSE l.epoch + 1 END,
      acquired_at = CASE WHEN l.holder = EXCLUDED.holder AND l.expires_at > now() THEN l.acquired_at ELSE now() END,
      renewed_at = now(),
      expires_at = EXCLUDED.expires_at
    WHERE l.holder = EXCLUDED.holder OR l.expires_at <= now()
    RETURNING holder, epoch, ${ms("acquired_at")} AS acquired_ms, ${ms("expires_at")} AS expires_ms, ${ms("now()")} AS db_now_ms`);
  return rows[0] ? grant(rows[0]) : null;
}

/** Gives the lease up at once (a clean shutdown): the next replica need not wait for it to lapse. */
export async function releaseLease(db: PgDb, holder: string, epoch: number): Promise<boolean> {
  const { rows } = await db.execute(sql`
    UPDATE cluster_lease SET expires_at = now()
    WHERE name = ${LEADER_LEASE} AND holder = ${holder} AND epoch = ${epoch} AND expires_at > now()
    RETURNING epoch`);
  return rows.length > 0;
}

/** The lease as it stands (expired or not), with the database's clock. */
export async function currentLease(db: PgDb): Promise<(LeaseGrant & { renewedAt: Date }) | null> {
  const { rows } = await db.execute<LeaseRow & { renewed_ms: number }>(sql`
    SELECT holder, epoch, ${ms("acquired_at")} AS acquired_ms, ${ms("renewed_at")} AS renewed_ms, ${ms("expires_at")} AS expires_ms,
      ${ms("now()")} AS db_now_ms
    FROM cluster_lease WHERE name = ${LEADER_LEASE}`);
  return rows[0] ? { ...grant(rows[0]), renewedAt: new Date(rows[0].renewed_ms) } : null;
}

export { LeaseLostError };

/**
 * Runs `write` in a transaction that first finds the lease still held by `holder` with `epoch` and
 * unexpired, and keeps that row share-locked until commit: a takeover (an UPDATE of the row) waits
 * for this transaction, so no action commits after its writer was deposed.
 */
export async function fenced<T>(db: PgDb, holder: string, epoch: number, write: (tx: PgDb) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.execute(sql`
      SELECT epoch FROM cluster_lease
      WHERE name = ${LEADER_LEASE} AND holder = ${holder} AND epoch = ${epoch} AND expires_at > now()
      FOR SHARE`);
    if (rows.length === 0) throw new LeaseLostError(holder, epoch);
    return write(tx as unknown as PgDb);
  });
}

/** Records that `id` is alive (every replica, every poll). */
export async function heartbeat(db: PgDb, id: string): Promise<void> {
  await db.execute(sql`
    INSERT INTO cluster_replicas (id, started_at, last_seen_at) VALUES (${id}, now(), now())
    ON CONFLICT (id) DO UPDATE SET last_seen_at = now()`);
}

export interface ReplicaRow {
  id: string;
  startedAt: Date;
  lastSeenAt: Date;
}

/** Replicas seen within `withinMs` (by the database's clock), newest first. */
export async function replicasSeen(db: PgDb, withinMs: number): Promise<ReplicaRow[]> {
  const { rows } = await db.execute<{ id: string; started_ms: number; last_seen_ms: number }>(sql`
    SELECT id, ${ms("started_at")} AS started_ms, ${ms("last_seen_at")} AS last_seen_ms FROM cluster_replicas
    WHERE last_seen_at > now() - make_interval(secs => ${withinMs / 1000})
    ORDER BY last_seen_at DESC, id`);
  return rows.map((r) => ({ id: r.id, startedAt: new Date(r.started_ms), lastSeenAt: new Date(r.last_seen_ms) }));
}
