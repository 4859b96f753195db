/**
 * Sessions and the audit log (lib/auth and every verb that records what an operator did).
 */
import { and, desc, eq, gt, lt, lte } from "drizzle-orm";
import type { Db } from "../types";
import { auditLog, sessions, type AuditRow, type SessionRow } from "../schema";

export type NewSession = typeof sessions.$inferInsert;

/** Store a new session; ends expired ones, and the operator's oldest past `maxPerOperator`. */
export function insertSession(db: Db, row: NewSession, maxPerOperator: number): void {
  db.$client.transaction(() => {
    db.delete(sessions).where(lte(sessions.expiresAt, row.createdAt)).run();
    db.insert(sessions).values(row).run();
    const extra = db
      .select({ id: sessions.id })
      .from(sessions)
      .where(eq(sessions.operator, row.operator))
      .orderBy(desc(sessions.createdAt), desc(sessions.id))
      .offset(maxPerOperator)
      .limit(1000)
      .all();
    for (const e of extra) db.delete(sessions).where(eq(sessions.id, e.id)).run();
  })();
}

export function sessionById(db: Db, id: string): SessionRow | undefined {
  return db.select().from(sessions).where(eq(sessions.id, id)).get();
}

export function touchSession(db: Db, id: string, at: number): void {
  db.update(sessions).set({ lastSeenAt: at }).where(eq(sessions.id, id)).run();
}

/** Ends one session; with `operator`, only if it is that operator's. Returns whether one ended. */
export function deleteSession(db: Db, id: string, operator?: string): boolean {
  const where = operator === undefined ? eq(sessions.id, id) : and(eq(sessions.id, id), eq(sessions.operator, operator));
  return db.delete(sessions).where(where).run().changes > 0;
}

/** Ends every session of an operator (e.g. "sign out everywhere"); returns how many. */
export function deleteSessionsOf(db: Db, operator: string): number {
  return db.delete(sessions).where(eq(sessions.operator, operator)).run().changes;
}

/** Every session's id, operator and password fingerprint (for the sweep at start and at each reload). */
export function sessionCredentials(db: Db): Array<{ id: string; operator: string; credential: string }> {
  return db.select({ id: sessions.id, operator: sessions.operator, credential: sessions.credential }).from(sessions).all();
}

/** The operator's live sessions, newest first. */
export function sessionsOf(db: Db, operator: string, now: number): SessionRow[] {
  return db
    .select()
    .from(sessions)
    .where(and(eq(sessions.operator, operator), gt(sessions.expiresAt, now)))
    .orderBy(desc(sessions.createdAt))
    .all();
}

export type AuditActorKind = AuditRow["actorKind"];

export interface AuditEntry {
  at: number;
  actor: string | null;
  actorKind: AuditActorKind;
  /** "signin.ok", "signin.failed", "signout", "session.ended", "restart", "config.reload", "acknowledge", "maintenance", ... */
  action: string;
  target?: string | null;
  address?: string | null;
  detail?: string | null;
}

/** Longest actor/target/detail kept: the audit log is bounded whatever a client sends. */
const AUDIT_FIELD_MAX = 200;
const AUDIT_DETAIL_MAX = 1000;
const clip = (s: string | null | undefined, n: number) => (s == null ? null : s.length > n ? `${s.slice(0, n)}… (${s.length - n} more characters)` : s);

/**
 * Append one line to the audit log. For every engineer's verbs (acknowledgements, maintenance...):
 * call it in the same transaction as the change it records where one exists.
 */
export function recordAudit(db: Db, e: AuditEntry): void {
  db.insert(auditLog)
    .values({
      at: e.at,
      actor: clip(e.actor, AUDIT_FIELD_MAX),
      actorKind: e.actorKind,
      action: clip(e.action, 64)!,
      target: clip(e.target, AUDIT_FIELD_MAX),
      address: clip(e.address, 64),
      detail: clip(e.detail, AUDIT_DETAIL_MAX),
    })
    .run();
}

/**
 * Deletes audit lines older than `before` (ms), in batches so a first sweep of a year of lines
 * does not hold the write lock for long. Returns how many went. Kept by `audit.retentionDays`.
 */
export function pruneAudit(db: Db, before: number, batch = 5_000): number {
  const del = db.$client.prepare(`DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? LIMIT ?)`);
  let total = 0;
  for (;;) {
    const n = del.run(before, batch).changes;
    total += n;
    if (n < batch) return total;
  }
}

/** The audit log, newest first; `before` (an id) pages back. */
export function listAudit(db: Db, opts: { limit: number; before?: number }): AuditRow[] {
  return db
    .select()
    .from(auditLog)
    .where(opts.before !== undefined ? lt(auditLog.id, opts.before) : undefined)
    .orderBy(desc(auditLog.id))
    .limit(opts.limit)
    .all();
}
