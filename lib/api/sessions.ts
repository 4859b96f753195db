/**
 * An operator's view of their own sessions: list them (where and when each signed in, which one is
 * this browser) and end any of them. Nobody sees or ends another operator's sessions.
 */
import "server-only";
import { deleteSession, recordAudit, sessionsOf } from "../../db/queries/auth";
import { DomainError } from "../core/errors";
import { assertSameOrigin, authState, clientAddress, requireOperator } from "./operator";

export interface SessionDTO {
  id: string;
  createdAt: number;
  expiresAt: number;
  lastSeenAt: number;
  address: string | null;
  userAgent: string | null;
  current: boolean;
}

export async function listOwnSessions(): Promise<{ operator: string; sessions: SessionDTO[] }> {
  const me = await requireOperator();
  const { rt } = await authState();
  const rows = sessionsOf(rt.db.db, me.name, Date.now());
  return {
    operator: me.name,
    sessions: rows.map((r) => ({
      id: r.id,
      createdAt: r.createdAt,
      expiresAt: r.expiresAt,
      lastSeenAt: r.lastSeenAt,
      address: r.address,
      userAgent: r.userAgent,
      current: r.id === me.sessionId,
    })),
  };
}

export async function endOwnSession(req: Request, id: string): Promise<{ ended: string }> {
  assertSameOrigin(req);
  const me = await requireOperator();
  if (!/^[0-9a-f]{64}$/.test(id)) throw new DomainError("bad-request", "id: not a session id");
  const { rt } = await authState();
  if (!deleteSession(rt.db.db, id, me.name)) throw new DomainError("not-found", `no session ${id.slice(0, 12)}… of yours`);
  recordAudit(rt.db.db, { at: Date.now(), actor: me.name, actorKind: "operator", action: "session.ended", target: id.slice(0, 12), address: clientAddress(req) });
  return { ended: id };
}
