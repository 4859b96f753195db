/**
 * The PostgreSQL side of the schema (drizzle's pg-core), for replicas sharing one database
 * (docs/decisions.md "Replicas"): every table of db/schema.ts, mirrored (db/pg/mirror.ts), and what
 * only replicas need: the leader lease and the replicas' heartbeats, whose times are the database's
 * (`timestamptz`, set by `now()` in db/pg/lease.ts), never a replica's.
 * Migrations: `npx drizzle-kit generate --config drizzle.pg.config.ts` (db/pg/migrations).
 */
import { bigint, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import * as sqlite from "../schema";
import { mirrorTable } from "./mirror";

export const samples = mirrorTable(sqlite.samples);
export const replayReadings = mirrorTable(sqlite.replayReadings);
export const replayChunks = mirrorTable(sqlite.replayChunks);
export const sampleMinutes = mirrorTable(sqlite.sampleMinutes);
export const sampleRollups = mirrorTable(sqlite.sampleRollups);
export const transitions = mirrorTable(sqlite.transitions);
export const processStarts = mirrorTable(sqlite.processStarts);
export const restartEvents = mirrorTable(sqlite.restartEvents);
export const sessions = mirrorTable(sqlite.sessions);
export const auditLog = mirrorTable(sqlite.auditLog);
export const notifications = mirrorTable(sqlite.notifications);
export const notificationDeliveries = mirrorTable(sqlite.notificationDeliveries);
export const notificationAttempts = mirrorTable(sqlite.notificationAttempts);
export const acknowledgements = mirrorTable(sqlite.acknowledgements);
export const maintenancePeriods = mirrorTable(sqlite.maintenancePeriods);
export const evidenceBundles = mirrorTable(sqlite.evidenceBundles);
export const restartEvidence = mirrorTable(sqlite.restartEvidence);

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
