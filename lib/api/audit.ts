/** The audit log as operators read it (GET /api/audit, the /audit page): newest first, paged by id. */
import "server-only";
import { listAudit } from "../../db/queries/auth";
import type { AuditRow } from "../../db/schema";
import { authState, requireOperator } from "./operator";

export const AUDIT_PAGE = 100;

export type AuditEntryDTO = Pick<AuditRow, "id" | "at" | "actor" | "actorKind" | "action" | "target" | "address" | "detail">;

export async function auditPage(opts: { limit?: number; before?: number } = {}): Promise<{ entries: AuditEntryDTO[]; nextBefore: number | null }> {
  await requireOperator();
  const { rt } = await authState();
  const limit = Math.min(Math.max(1, opts.limit ?? AUDIT_PAGE), 500);
  const rows = listAudit(rt.db.db, { limit: limit + 1, before: opts.before });
  const page = rows.slice(0, limit);
  return {
    entries: page.map((r) => ({ id: r.id, at: r.at, actor: r.actor, actorKind: r.actorKind, action: r.action, target: r.target, address: r.address, detail: r.detail })),
    nextBefore: rows.length > limit ? page[page.length - 1].id : null,
  };
}
