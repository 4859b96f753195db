/**
 * Evidence bundles (lib/restart/evidence.ts captures them) and the link of a restart event to its
 * bundle. Retention: past its expiresAt, then oldest first while all bundles together exceed the
 * total cap, so the database never grows without bound because of them.
 */
import { desc, eq, inArray, lt, sql } from "drizzle-orm";
import type { EvidenceBundle, EvidenceTrigger } from "../../lib/core/evidence";
import type { Db } from "../types";
import { evidenceBundles, restartEvidence, type EvidenceBundleRow } from "../schema";

const sizeOf = (b: EvidenceBundle) => Buffer.byteLength(JSON.stringify(b));

export function insertEvidence(db: Db, row: { backendId: string; trigger: EvidenceTrigger; startedAt: number; expiresAt: number; bundle: EvidenceBundle }): number {
  const r = db
    .insert(evidenceBundles)
    .values({ ...row, finishedAt: row.bundle.finishedAt, sizeBytes: sizeOf(row.bundle) })
    .returning({ id: evidenceBundles.id })
    .get();
  return r.id;
}

/** Writes the bundle as it stands (the capture's progress, then its end). */
export function updateEvidence(db: Db, id: number, bundle: EvidenceBundle): void {
  db.update(evidenceBundles).set({ bundle, finishedAt: bundle.finishedAt, sizeBytes: sizeOf(bundle) }).where(eq(evidenceBundles.id, id)).run();
}

export function evidenceById(db: Db, id: number): EvidenceBundleRow | undefined {
  return db.select().from(evidenceBundles).where(eq(evidenceBundles.id, id)).get();
}

/** The newest bundles of a backend, without their bodies (the backend page's list). */
export function evidenceOfBackend(db: Db, backendId: string, limit: number): Array<Omit<EvidenceBundleRow, "bundle">> {
  return db
    .select({
      id: evidenceBundles.id,
      backendId: evidenceBundles.backendId,
      trigger: evidenceBundles.trigger,
      startedAt: evidenceBundles.startedAt,
      finishedAt: evidenceBundles.finishedAt,
      expiresAt: evidenceBundles.expiresAt,
      sizeBytes: evidenceBundles.sizeBytes,
    })
    .from(evidenceBundles)
    .where(eq(evidenceBundles.backendId, backendId))
    .orderBy(desc(evidenceBundles.startedAt), desc(evidenceBundles.id))
    .limit(limit)
    .all();
}

export function linkRestartEvidence(db: Db, restartEventId: number, evidenceId: number): void {
  db.insert(restartEvidence).values({ restartEventId, evidenceId }).onConflictDoNothing().run();
}

/** evidenceId by restart event id, for the events given (those without a bundle are absent). */
export function evidenceIdsOf(db: Db, restartEventIds: readonly number[]): Map<number, number> {
  const out = new Map<number, number>();
  if (restartEventIds.length === 0) return out;
  for (let i = 0; i < restartEventIds.length; i += 500) {
    const part = restartEventIds.slice(i, i + 500);
    for (const r of db.select().from(restartEvidence).where(inArray(restartEvidence.restartEventId, part)).all()) out.set(r.restartEventId, r.evidenceId);
  }
  return out;
}

/**
 * Deletes the bundles past their expiresAt, then the oldest while all together exceed
 * `maxTotalBytes` (newest kept first). Returns how many went.
 */
export function pruneEvidence(db: Db, now: number, maxTotalBytes: number): number {
  return db.$client.transaction(() => {
    const expired = db.delete(evidenceBundles).where(lt(evidenceBundles.expiresAt, now)).run().changes;
    const over = db.run(sql`DELETE FROM evidence_bundles WHERE id IN (
      SELECT id FROM (SELECT id, SUM(size_bytes) OVER (ORDER BY started_at DESC, id DESC) AS running FROM evidence_bundles) AS totals WHERE running > ${maxTotalBytes}
    )`).changes;
    return expired + over;
  })();
}
