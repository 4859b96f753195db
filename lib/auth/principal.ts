/**
 * Who is asking: one Principal from, in this order, an API token (`Authorization: Bearer`), the
 * trusted reverse proxy's user header (`auth.proxyHeader`, only from server.trustProxy), or the
 * session cookie. Its role decides: a viewer reads (where access.read is "signed-in"), only an
 * operator restarts. The name is what the audit log and the restart log record as the actor.
 * No Next imports: proxy.ts (the read gate) and route handlers (lib/api/operator.ts) share it.
 */
import type { Db } from "../../db/types";
import type { Config, Role } from "../config";
import { isTrustedProxy, peerAddress, type HeaderSource, type NetPolicy } from "../net/net-policy";
import { DomainError } from "../core/errors";
import { guardBearer, type BearerGuard } from "./bearer";
import { safeEqualStrings } from "./password";
import { resolveSession } from "./session";

export interface Principal {
  name: string;
  role: Role;
  via: "session" | "token" | "proxy";
  /** The session's id (via "session"). */
  sessionId?: string;
  expiresAt?: number;
}

export interface PrincipalContext {
  config: Pick<Config, "operators" | "tokens" | "auth">;
  db: Db;
  key: Buffer;
  policy: NetPolicy;
  now: number;
  /** The throttle and audit a Bearer token goes through (lib/auth/bearer.ts). */
  bearerGuard: Omit<BearerGuard, "now">;
}

/** The token a Bearer header carries, or null. */
export function bearerOf(headers: HeaderSource): string | null {
  return bearerIn(headers.get("authorization"));
}

/** The token of an `Authorization: Bearer <token>` header value, or null (also the /metrics scrape token's check). */
export function bearerIn(header: string | null): string | null {
  const m = header ? /^Bearer\s+(\S{1,512})\s*$/i.exec(header) : null;
  return m ? m[1] : null;
}

/** Every configured token is compared (constant time each), so timing does not tell which matched. */
export function tokenPrincipal(given: string, tokens: Config["tokens"]): Principal | null {
  let found: Config["tokens"][number] | undefined;
  for (const t of tokens) if (safeEqualStrings(t.token, given)) found = t;
  return found ? { name: found.name, role: found.role, via: "token" } : null;
}

/** The "rate-limited" error of a throttled Bearer token (429 with Retry-After, lib/api/respond.ts). */
export function bearerRateLimited(retryAfterMs: number): DomainError {
  const s = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new DomainError("rate-limited", `too many failed attempts from this address; try again in ${s} s`, { retryAfterSeconds: s });
}

/**
 * Whether the request carries the proof the proxy adds (`auth.proxy`: its secret header), compared
 * in constant time (both sides hashed to equal length, then timingSafeEqual: safeEqualStrings).
 * A trusted address alone is not proof when that address is shared (the loopback: every process on
 * the host); with no `auth.proxy` configured the address is all there is (the config warns).
 */
export function provenByProxy(headers: HeaderSource, proof: Config["auth"]["proxy"]): boolean {
  if (!proof) return true;
  const given = headers.get(proof.secretHeader);
  // Evaluated whatever was sent, so an absent header costs what a wrong one does.
  return safeEqualStrings(given ?? "", proof.secret) && given !== null;
}

/**
 * Resolve the principal. A Bearer header that matches no token is an answer in itself (null): it
 * does not fall back to the cookie, so a script with a revoked token fails loudly. A Bearer header
 * from an address the throttle holds back throws "rate-limited" without being compared.
 */
export function principalOf(headers: HeaderSource, cookieToken: string | undefined, ctx: PrincipalContext): Principal | null {
  const bearer = bearerOf(headers);
  if (bearer !== null) {
    const r = guardBearer(() => tokenPrincipal(bearer, ctx.config.tokens), { ...ctx.bearerGuard, now: ctx.now });
    if (r.ok) return r.value;
    if (r.why === "rate-limited") throw bearerRateLimited(r.retryAfterMs);
    return null;
  }
  const header = ctx.config.auth.proxyHeader;
  if (header && isTrustedProxy(ctx.policy, peerAddress(headers)) && provenByProxy(headers, ctx.config.auth.proxy)) {
    const user = headers.get(header)?.trim();
    if (user) {
      const name = user.slice(0, 100);
      // A user the proxy vouches for is an operator only if the config names them one.
      const op = ctx.config.operators.find((o) => o.name === name);
      return { name, role: op?.role ?? "viewer", via: "proxy" };
    }
  }
  const s = resolveSession(ctx.db, cookieToken, { operators: ctx.config.operators, key: ctx.key, now: ctx.now });
  if (!s) return null;
  const op = ctx.config.operators.find((o) => o.name === s.name);
  return { name: s.name, role: op?.role ?? "viewer", via: "session", sessionId: s.id, expiresAt: s.expiresAt };
}
