/**
 * Server-side glue of sign-in and sessions: the process-wide key, throttle and comparison gate (on
 * globalThis: Next loads routes as separate module instances), reading the session cookie, the
 * Origin guard, the client's address. Route handlers and server pages call these; the pure parts
 * live in session/signin/throttle/net-policy.
 */
import "server-only";
import { cookies, headers } from "next/headers";
import type { NextResponse } from "next/server";
import { DomainError } from "../core/errors";
import { errorResponse } from "./respond";
import type { Viewer } from "./types";
import { getRuntime, type Runtime } from "../runtime";
import { buildNetPolicy, clientAddressOf, currentNetPolicy, isForeignOriginFor, requestOrigin, setNetPolicy, type HeaderSource, type NetPolicy } from "../net/net-policy";
import { principalOf, type Principal } from "../auth/principal";
import { SECURE_SESSION_COOKIE, SESSION_COOKIE, resolveSession, sessionTokenFrom, type Session } from "../auth/session";
import { authHolder } from "../auth/state";
import { DEVICE_COOKIE, SECURE_DEVICE_COOKIE, deviceCookieFrom } from "../auth/device";
import { auditBearerFailure } from "../auth/audit";
import type { ConcurrencyGate, SignInThrottle } from "../auth/throttle";

export async function authState(): Promise<{ rt: Runtime; key: Buffer; throttle: SignInThrottle; gate: ConcurrencyGate }> {
  const rt = await getRuntime();
  const s = authHolder(rt.db.path);
  return { rt, key: s.key, throttle: s.throttle, gate: s.gate };
}

/** The config's network policy (set at start by lib/runtime; built here if a route came first). */
export function netPolicyOf(rt: Runtime): NetPolicy {
  let p = currentNetPolicy();
  if (!p) {
    p = buildNetPolicy({ ...rt.config.server, publicUrl: rt.config.publicUrl });
    setNetPolicy(p);
  }
  return p;
}

/** Whether the browser reached stepwatch over https (directly, or as a trusted proxy says). */
function httpsOf(h: HeaderSource, policy: NetPolicy): boolean {
  return requestOrigin(h, policy).scheme === "https";
}

/** The signed-in operator's session from the cookie, or null. */
export async function currentSession(now: number = Date.now()): Promise<Session | null> {
  const { rt, key } = await authState();
  const https = httpsOf(await headers(), netPolicyOf(rt));
  const token = sessionTokenFrom(await cookies(), https);
  if (!token) return null;
  return resolveSession(rt.db.db, token, { operators: rt.config.operators, key, now });
}

/** Who is asking (API token, trusted proxy user, or session), or null. */
export async function currentPrincipal(now: number = Date.now()): Promise<Principal | null> {
  const { rt, key, throttle } = await authState();
  const h = await headers();
  const policy = netPolicyOf(rt);
  const bearerGuard = { throttle, address: clientAddressOf(h, policy), onFailure: (a: string, why: "wrong" | "rate-limited", at: number) => auditBearerFailure(rt.db.db, a, why, at) };
  return principalOf(h, sessionTokenFrom(await cookies(), httpsOf(h, policy)), { config: rt.config, db: rt.db.db, key, policy, now, bearerGuard });
}

/** The raw session token of this request (for sign-out), or undefined. */
export async function currentToken(req: Request): Promise<string | undefined> {
  const rt = await getRuntime();
  return sessionTokenFrom(await cookies(), isHttps(req, rt));
}

/** For server pages: the signed-in user's name (operator or viewer), or null (never throws: a page still renders read-only). */
export async function currentOperatorName(): Promise<string | null> {
  try {
    return (await currentPrincipal())?.name ?? null;
  } catch {
    return null;
  }
}

/** For server pages: who is looking and their role, for the client components' buttons; null when nobody signed in (never throws). */
export async function currentViewer(): Promise<Viewer | null> {
  try {
    const p = await currentPrincipal();
    return p ? { name: p.name, role: p.role } : null;
  } catch {
    return null;
  }
}

/**
 * For every state-changing route: the operator acting (a session, an API token or a trusted
 * proxy's user with the operator role). 401 without one, 403 for a viewer. `.name` is the actor to
 * record.
 */
export async function requireOperator(): Promise<Principal> {
  const p = await currentPrincipal();
  if (!p) throw new DomainError("unauthenticated", "sign in as an operator first");
  if (p.role !== "operator") throw new DomainError("forbidden", `${p.name} is a viewer: only operators can do this`);
  return p;
}

/** How the audit log names the kind of actor a principal is. */
export function actorKindOf(p: Principal): "operator" | "token" | "proxy" {
  return p.via === "token" ? "token" : p.via === "proxy" ? "proxy" : "operator";
}

/** Who asked, for the audit log of the verbs that take an operator (acknowledge, maintenance). */
export function actorOf(req: Request, p: Principal): { actorKind: "operator" | "token" | "proxy"; address: string } {
  return { actorKind: actorKindOf(p), address: clientAddress(req) };
}

/** For read routes: anyone when access.read is "public", else a viewer or an operator (401). */
export async function requireReader(): Promise<Principal | null> {
  const rt = await getRuntime();
  const p = await currentPrincipal();
  if (rt.config.access.read === "signed-in" && !p) throw new DomainError("unauthenticated", "sign in to read this stepwatch (access.read is signed-in)");
  return p;
}

/**
 * 403 for a browser request from another site (CSRF). Compares the Origin's scheme and host with
 * the ones this request was made to (X-Forwarded-Host/-Proto only from server.trustProxy) or with
 * publicUrl's origin. Synchronous when the policy is known (it is once the runtime started).
 */
export function assertSameOrigin(req: Request): void {
  const policy = currentNetPolicy() ?? buildNetPolicy({ trustProxy: [], allowedHosts: [] });
  const origin = req.headers.get("origin");
  if (isForeignOriginFor(origin, req.headers, policy)) {
    throw new DomainError("forbidden", `requests from ${origin} are not accepted; use the stepwatch page itself`);
  }
}

/** The client's address: the socket's, or what a proxy in server.trustProxy says. */
export function clientAddress(req: Request): string {
  return clientAddressOf(req.headers, currentNetPolicy() ?? buildNetPolicy({ trustProxy: [], allowedHosts: [] }));
}

/** The cookie is Secure (and `__Host-`) when the page was served over https (directly or behind a trusted TLS proxy). */
export function isHttps(req: Request, rt?: Runtime): boolean {
  const policy = currentNetPolicy() ?? (rt ? netPolicyOf(rt) : buildNetPolicy({ trustProxy: [], allowedHosts: [] }));
  return httpsOf(req.headers, policy);
}

export function setSessionCookie(res: NextResponse, req: Request, token: string, expiresAt: number): void {
  const https = isHttps(req);
  res.cookies.set(https ? SECURE_SESSION_COOKIE : SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: "strict",
    secure: https,
    path: "/",
    expires: new Date(expiresAt),
  });
}

/** The device cookie (lib/auth/device.ts): like the session's, but it outlives sign-out (it is not a credential). */
export function setDeviceCookie(res: NextResponse, req: Request, value: string, expiresAt: number): void {
  const https = isHttps(req);
  res.cookies.set(https ? SECURE_DEVICE_COOKIE : DEVICE_COOKIE, value, { httpOnly: true, sameSite: "strict", secure: https, path: "/", expires: new Date(expiresAt) });
}

/** The device cookie this request brings, or undefined. */
export async function currentDeviceCookie(req: Request): Promise<string | undefined> {
  return deviceCookieFrom(await cookies(), isHttps(req));
}

export function clearSessionCookie(res: NextResponse, req: Request): void {
  const https = isHttps(req);
  res.cookies.set(https ? SECURE_SESSION_COOKIE : SESSION_COOKIE, "", { httpOnly: true, sameSite: "strict", secure: https, path: "/", maxAge: 0 });
}

/** What a state-changing route's handler gets: the request, its route params, the operator and how to audit them. */
export interface OperatorCall<P> {
  req: Request;
  params: P;
  operator: Principal;
  /** For the audit log: how the operator was identified and from which address. */
  actor: { actorKind: "operator" | "token" | "proxy"; address: string };
}

/**
 * The one operator check of every state-changing route: same origin (403), an operator (401, 403
 * for a viewer), then the handler; any error mapped by errorResponse. A route is
 * `export const POST = withOperator(async ({ params, operator, actor }) => ...)`.
 */
export function withOperator<P = Record<string, never>>(
  handler: (call: OperatorCall<P>) => Promise<Response>,
): (req: Request, ctx?: { params: Promise<P> }) => Promise<Response> {
  return async (req, ctx) => {
    try {
      assertSameOrigin(req);
      const operator = await requireOperator();
      const params = ctx ? await ctx.params : ({} as P);
      return await handler({ req, params, operator, actor: actorOf(req, operator) });
    } catch (e) {
      return errorResponse(e);
    }
  };
}
