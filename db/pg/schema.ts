/**
 * The PostgreSQL side of the schema (drizzle's pg-core), for replicas sharing one database
 * (docs/decisions.md "Replicas"). Today it holds what replicas coordinate through: the leader lease
 * and the replicas' heartbeats. Times are the database's (`timestamptz`, set by `now()` in the
 * queries of db/pg/lease.ts), never a replica's: two hosts' clocks are never compared.
 */
import { bigint, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * One row per lease (`name` = "leader"). `epoch` grows by one each time the lease changes hands or
 * lapses; an action row is written only in a transaction that finds the row with the writer's
 * holder and epoch still unexpired, so a deposed leader's late write fails.
 */
export const clusterLease = pgTable("cluster_lease", {
  name: text("name").primaryKey(),
  holder: text("holder").notNull(),
  epoch: bigint("epoch", { mode: "number" }).notNull(),
  acquiredAt: timestamp("acquired_at", { withTimezone: true, mode: "date" }).notNull(),
  renewedAt: timestamp("renewed_at", { withTimezone: true, mode: "date" }).notNull(),
  expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
});

/** Every replica's heartbeat, written at each lease poll whether it leads or not. */
export const clusterReplicas = pgTable("cluster_replicas", {
  id: text("id").primaryKey(),
  startedAt: timestamp("started_at", { withTimezone: true, mode: "date" }).notNull(),
  lastSeenAt: timestamp("last_seen_at", { withTimezone: true, mode: "date" }).notNull(),
});
