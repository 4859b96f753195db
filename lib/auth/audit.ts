/**
 * Audit lines of the sign-in: a failed sign-in goes to the audit log and to the server log, with
 * the name that was tried (cut to 100 characters by the route's schema) and the client address,
 * never the password. Refusals by the throttle are counted, not written one by one: a burst of 500
 * refused guesses must not become 500 rows; the first refusal of an address in a minute is.
 */
import type { Db } from "../../db/types";
import { recordAudit } from "../../db/queries/auth";

const lastRefusalLogged = new Map<string, number>();

export function auditSignInFailure(db: Db, name: string, address: string, why: "wrong" | "rate-limited" | "busy", now = Date.now()): void {
  if (why !== "wrong") {
    const last = lastRefusalLogged.get(address);
    if (last !== undefined && now - last < 60_000) return;
    if (lastRefusalLogged.size > 1000) lastRefusalLogged.clear();
    lastRefusalLogged.set(address, now);
  }
  const action = why === "wrong" ? "signin.failed" : "signin.refused";
  console.warn(`stepwatch: ${action} for ${JSON.stringify(name.slice(0, 100))} from ${address}${why === "wrong" ? "" : ` (${why})`}`);
  try {
    recordAudit(db, { at: now, actor: name, actorKind: "anonymous", action, address, detail: why === "wrong" ? null : why });
  } catch (e) {
    console.error(`stepwatch: cannot write the audit log: ${(e as Error).message}`);
  }
}

const bearerSummary = new Map<string, { at: number; since: number }>();

/**
 * A wrong or throttled Bearer token (lib/auth/bearer.ts): a guesser sends one per request, so the
 * sign-in's refusal rule applies to every failure here, wrong ones included: the first failure of
 * an address in a minute is a row (and a server log line) that says how many went unwritten since
 * the last one; the rest are only counted. The token itself is never written.
 */
export function auditBearerFailure(db: Db, address: string, why: "wrong" | "rate-limited", now = Date.now()): void {
  const s = bearerSummary.get(address);
  if (s && now - s.at < 60_000) {
    s.since++;
    return;
  }
  if (bearerSummary.size > 1000) bearerSummary.clear();
  bearerSummary.set(address, { at: now, since: 0 });
  const more = s?.since ? `; ${s.since} more since the last line` : "";
  const detail = `${why === "wrong" ? "unknown token" : "rate-limited"}${more}`;
  console.warn(`stepwatch: bearer.failed from ${address} (${detail})`);
  try {
    recordAudit(db, { at: now, actor: "(bearer token)", actorKind: "anonymous", action: "bearer.failed", address, detail });
  } catch (e) {
    console.error(`stepwatch: cannot write the audit log: ${(e as Error).message}`);
  }
}

/** The audit line of a session begun or ended by its operator (written by the session route). */
export function auditSession(db: Db, action: "signin.ok" | "signout", operator: string, address: string, now = Date.now()): void {
  recordAudit(db, { at: now, actor: operator, actorKind: "operator", action, address });
}
