/**
 * Named queries of the on-call loop: the notification outbox, its attempts, acknowledgements and
 * maintenance periods. Kept apart from ./readings.ts and ./restarts.ts (the watcher's readings and restarts) so each
 * file stays one subject; lib/ calls these verbs and never builds SQL.
 */
import { and, desc, eq, gt, gte, inArray, isNull, lte, notInArray, or, sql } from "drizzle-orm";
import type { Db } from "../types";
import { perConnection } from "../per-connection";
import {
  acknowledgements,
  maintenancePeriods,
  notificationAttempts,
  notificationDeliveries,
  notifications,
  restartEvents,
  type AcknowledgementRow,
  type MaintenancePeriodRow,
  type NotificationAttemptRow,
  type NotificationDeliveryRow,
  type NotificationRow,
} from "../schema";

export type NewNotification = typeof notifications.$inferInsert;
export type NewAcknowledgement = typeof acknowledgements.$inferInsert;
export type NewMaintenancePeriod = typeof maintenancePeriods.$inferInsert;

// ---- outbox ----

/**
 * The notification and one pending delivery per channel; call inside the cause's transaction.
 * `dueAt`: when its first attempt is due (the end of its group window; `now` for one sent alone).
 */
export function insertNotification(
  db: Db,
  row: NewNotification,
  channels: Array<{ id: string; type: NotificationDeliveryRow["channelType"] }>,
  now: number,
  dueAt: number = now,
): NotificationRow {
  return db.$client.transaction(() => {
    const n = db.insert(notifications).values(row).returning().get();
    if (channels.length > 0) {
      db.insert(notificationDeliveries)
        .values(channels.map((c) => ({ notificationId: n.id, channelId: c.id, channelType: c.type, status: "pending" as const, nextAttemptAt: dueAt, createdAt: now })))
        .run();
    }
    return n;
  })();
}

export interface DueDelivery {
  delivery: NotificationDeliveryRow;
  notification: NotificationRow;
}

/**
 * What the outbox may send now, oldest first: every pending delivery that is due, and every one
 * never sent yet (not due itself, it may join the message of an older one of its group that is).
 */
export function deliverable(db: Db, now: number): DueDelivery[] {
  return db
    .select({ delivery: notificationDeliveries, notification: notifications })
    .from(notificationDeliveries)
    .innerJoin(notifications, eq(notifications.id, notificationDeliveries.notificationId))
    .where(
      and(
        eq(notificationDeliveries.status, "pending"),
        or(lte(notificationDeliveries.nextAttemptAt, now), and(isNull(notificationDeliveries.messageUid), eq(notificationDeliveries.attempts, 0))),
      ),
    )
    .orderBy(notificationDeliveries.createdAt, notificationDeliveries.id)
    .all();
}

/**
 * Gives never-sent deliveries the id of the message that carries them, before it is sent, and one
 * due time (`now`): a crash after the send and before the attempt is recorded retries the same
 * message, whole, with the same id. All or none: false (and nothing changed) when any of them was
 * claimed already.
 */
export function claimMessage(db: Db, deliveryIds: number[], messageUid: string, now: number): boolean {
  if (deliveryIds.length === 0) return false;
  const partly = new Error("claimed already");
  try {
    db.$client.transaction(() => {
      const n = db
        .update(notificationDeliveries)
        .set({ messageUid, nextAttemptAt: now })
        .where(and(inArray(notificationDeliveries.id, deliveryIds), isNull(notificationDeliveries.messageUid)))
        .run().changes;
      if (n !== deliveryIds.length) throw partly; // rolls the claim back
    })();
    return true;
  } catch (e) {
    if (e === partly) return false;
    throw e;
  }
}

/** The earliest next attempt of any pending delivery (the loop sleeps until then), or null; deliveries in flight left out. */
export function nextDueAt(db: Db, inFlight: number[] = []): number | null {
  const r = db
    .select({ at: sql<number | null>`MIN(${notificationDeliveries.nextAttemptAt})` })
    .from(notificationDeliveries)
    .where(
      and(
        eq(notificationDeliveries.status, "pending"),
        inFlight.length > 0 ? notInArray(notificationDeliveries.id, inFlight) : undefined,
      ),
    )
    .get();
  return r?.at ?? null;
}

/** One attempt of a message: an attempt row on each of its deliveries and their new status, in one transaction. */
export function recordAttempt(
  db: Db,
  deliveryIds: number[],
  attempt: Omit<typeof notificationAttempts.$inferInsert, "deliveryId">,
  update: { status: NotificationDeliveryRow["status"]; nextAttemptAt: number; lastError: string | null; deliveredAt: number | null },
): void {
  db.$client.transaction(() => {
    db.insert(notificationAttempts)
      .values(deliveryIds.map((deliveryId) => ({ ...attempt, deliveryId })))
      .run();
    db.update(notificationDeliveries)
      .set({ ...update, attempts: sql`${notificationDeliveries.attempts} + 1` })
      .where(inArray(notificationDeliveries.id, deliveryIds))
      .run();
  })();
}

/** How many of a delivery's attempts ended with an error starting `prefix` (the outbox's "sent, unanswered" count). */
export function attemptsWithErrorPrefix(db: Db, deliveryId: number, prefix: string): number {
  const row = db
    .select({ n: sql<number>`count(*)` })
    .from(notificationAttempts)
    .where(and(eq(notificationAttempts.deliveryId, deliveryId), sql`substr(${notificationAttempts.error}, 1, ${prefix.length}) = ${prefix}`))
    .get();
  return row?.n ?? 0;
}

export interface NotificationWithDeliveries extends NotificationRow {
  deliveries: Array<NotificationDeliveryRow & { recentAttempts: NotificationAttemptRow[] }>;
}

/** Newest notifications first, each with its deliveries and their last attempts. */
export function recentNotifications(db: Db, filter: { backendId?: string; limit?: number; attemptsPerDelivery?: number } = {}): NotificationWithDeliveries[] {
  const ns = db
    .select()
    .from(notifications)
    .where(filter.backendId !== undefined ? eq(notifications.backendId, filter.backendId) : undefined)
    .orderBy(desc(notifications.at), desc(notifications.id))
    .limit(filter.limit ?? 50)
    .all();
  if (ns.length === 0) return [];
  const ds = db
    .select()
    .from(notificationDeliveries)
    .where(inArray(notificationDeliveries.notificationId, ns.map((n) => n.id)))
    .all();
  const perDelivery = filter.attemptsPerDelivery ?? 5;
  const as = ds.length
    ? db
        .select()
        .from(notificationAttempts)
        .where(inArray(notificationAttempts.deliveryId, ds.map((d) => d.id)))
        .orderBy(desc(notificationAttempts.at), desc(notificationAttempts.id))
        .all()
    : [];
  const attemptsOf = new Map<number, NotificationAttemptRow[]>();
  for (const a of as) {
    const list = attemptsOf.get(a.deliveryId) ?? [];
    if (list.length < perDelivery) list.push(a);
    attemptsOf.set(a.deliveryId, list);
  }
  return ns.map((n) => ({
    ...n,
    deliveries: ds.filter((d) => d.notificationId === n.id).map((d) => ({ ...d, recentAttempts: attemptsOf.get(d.id) ?? [] })),
  }));
}

/** The last `limit` attempts of a channel, newest first (seeds the "keeps failing" view at start). */
export function lastAttemptsOfChannel(db: Db, channelId: string, limit: number): NotificationAttemptRow[] {
  return db
    .select({ a: notificationAttempts })
    .from(notificationAttempts)
    .innerJoin(notificationDeliveries, eq(notificationDeliveries.id, notificationAttempts.deliveryId))
    .where(eq(notificationDeliveries.channelId, channelId))
    .orderBy(desc(notificationAttempts.at), desc(notificationAttempts.id))
    .limit(limit)
    .all()
    .map((r) => r.a);
}

export function pendingCountOfChannel(db: Db, channelId: string): number {
  const r = db
    .select({ n: sql<number>`COUNT(*)` })
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.channelId, channelId), eq(notificationDeliveries.status, "pending")))
    .get();
  return r?.n ?? 0;
}

/** The newest notification of a backend among `events` (seeds the problem state after a restart of stepwatch). */
export function lastNotificationOf(db: Db, backendId: string, events: NotificationRow["event"][]): NotificationRow | undefined {
  const st = seedStatementsOf(db);
  const key = events.join(",");
  let q = st.lastNotification.get(key);
  if (!q) {
    q = db
      .select()
      .from(notifications)
      .where(and(eq(notifications.backendId, sql.placeholder("backendId")), inArray(notifications.event, events)))
      .orderBy(desc(notifications.at), desc(notifications.id))
      .limit(1)
      .prepare();
    st.lastNotification.set(key, q);
  }
  return q.get({ backendId });
}

/**
 * The reads made once per backend when the watcher seeds its monitors (and when an
 * acknowledgement or maintenance changes), prepared once per connection as ./readings.ts's poll
 * statements are: building each through drizzle again for every backend was most of the start's
 * time at 1000 backends. Drizzle prepared queries map rows exactly as the unprepared ones do.
 */
interface SeedStatements {
  /** One per event list (the callers use two fixed lists). */
  lastNotification: Map<string, { get(values: { backendId: string }): NotificationRow | undefined }>;
  activeAcknowledgement: { get(values: { backendId: string }): AcknowledgementRow | undefined };
  openMaintenance: { all(values: { backendId: string; now: number }): MaintenancePeriodRow[] };
}

const seedStatementsOf = perConnection(
  (db: Db): SeedStatements => ({
    lastNotification: new Map(),
    activeAcknowledgement: db
      .select()
      .from(acknowledgements)
      .where(and(eq(acknowledgements.backendId, sql.placeholder("backendId")), isNull(acknowledgements.clearedAt)))
      .orderBy(desc(acknowledgements.at), desc(acknowledgements.id))
      .limit(1)
      .prepare(),
    openMaintenance: db
      .select()
      .from(maintenancePeriods)
      .where(and(eq(maintenancePeriods.backendId, sql.placeholder("backendId")), isNull(maintenancePeriods.endedAt), gt(maintenancePeriods.endsAt, sql.placeholder("now"))))
      .orderBy(maintenancePeriods.startsAt)
      .prepare(),
  }),
);

// ---- acknowledgements ----

export function insertAcknowledgement(db: Db, row: NewAcknowledgement): AcknowledgementRow {
  return db.insert(acknowledgements).values(row).returning().get();
}

/** The acknowledgement in force (not cleared), newest first. */
export function activeAcknowledgement(db: Db, backendId: string): AcknowledgementRow | undefined {
  return seedStatementsOf(db).activeAcknowledgement.get({ backendId });
}

export function clearAcknowledgements(db: Db, backendId: string, at: number, reason: string): number {
  return db
    .update(acknowledgements)
    .set({ clearedAt: at, clearedReason: reason })
    .where(and(eq(acknowledgements.backendId, backendId), isNull(acknowledgements.clearedAt)))
    .run().changes;
}

// ---- maintenance ----

export function insertMaintenance(db: Db, row: NewMaintenancePeriod): MaintenancePeriodRow {
  return db.insert(maintenancePeriods).values(row).returning().get();
}

/** The API maintenance periods of a backend that are not over at `now` (current or scheduled). */
export function openMaintenance(db: Db, backendId: string, now: number): MaintenancePeriodRow[] {
  return seedStatementsOf(db).openMaintenance.all({ backendId, now });
}

/**
 * The API maintenance periods of a backend that overlap [from, to], as spans (an ended one ends
 * when it was ended): what the outages count as planned time. Read per request, not per poll.
 */
export function maintenanceBetween(db: Db, backendId: string, from: number, to: number): Array<{ start: number; end: number }> {
  return db
    .select({ start: maintenancePeriods.startsAt, end: sql<number>`min(${maintenancePeriods.endsAt}, coalesce(${maintenancePeriods.endedAt}, ${maintenancePeriods.endsAt}))` })
    .from(maintenancePeriods)
    .where(and(eq(maintenancePeriods.backendId, backendId), lte(maintenancePeriods.startsAt, to), gt(maintenancePeriods.endsAt, from)))
    .all();
}

/** Ends every running maintenance period of a backend early; returns how many. */
export function endMaintenance(db: Db, backendId: string, at: number, by: string): number {
  return db
    .update(maintenancePeriods)
    .set({ endedAt: at, endedBy: by })
    .where(
      and(
        eq(maintenancePeriods.backendId, backendId),
        isNull(maintenancePeriods.endedAt),
        lte(maintenancePeriods.startsAt, at),
        gt(maintenancePeriods.endsAt, at),
      ),
    )
    .run().changes;
}

// ---- unattended restarts ----

/** Restarts of a backend asked for by `requestedBy` since `since` (maxPerDay counts from here). */
export function countRestartsBy(db: Db, backendId: string, requestedBy: string, since: number): number {
  const r = db
    .select({ n: sql<number>`COUNT(*)` })
    .from(restartEvents)
    .where(and(eq(restartEvents.backendId, backendId), eq(restartEvents.requestedBy, requestedBy), gte(restartEvents.requestedAt, since)))
    .get();
  return r?.n ?? 0;
}

/**
 * What moves whenever any process that shares the database acknowledges or starts or ends a
 * maintenance (the newest ids and end): read once a second by every replica's watcher, which
 * re-reads its on-call book when it moved. One cheap statement; the tables are small.
 */
export function onCallWatermark(db: Db): string {
  const r = db.$client
    .prepare("SELECT (SELECT max(id) FROM acknowledgements) AS a, (SELECT max(id) FROM maintenance_periods) AS m, (SELECT max(ended_at) FROM maintenance_periods) AS e")
    .get() as { a: number | null; m: number | null; e: number | null };
  return `${r.a ?? 0}:${r.m ?? 0}:${r.e ?? 0}`;
}
