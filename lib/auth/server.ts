/**
 * Server-side glue of sign-in and sessions: the process-wide key and throttle (on globalThis: Next
 * loads routes as separate module instances), reading the session cookie, the Origin guard.
 * Route handlers and server pages call these; the pure parts live in session/signin/throttle.
 */
import "server-only";
import { cookies } from "next/headers";
import { DomainError } from "../errors";
import { getRuntime, type Runtime } from "../runtime";
import { isForeignOrigin } from "./origin";
import { SESSION_COOKIE, loadSessionKey, verifySession, type Session } from "./session";
import { SignInThrottle } from "./throttle";

const KEY = Symbol.for("stepwatch.auth");
type Holder = { [KEY]?: { key: Buffer; dbPath: string; throttle: SignInThrottle } };

function state(rt: Runtime) {
  const g = globalThis as Holder;
  if (!g[KEY] || g[KEY].dbPath !== rt.db.path) {
    g[KEY] = { key: loadSessionKey(rt.db.path), dbPath: rt.db.path, throttle: g[KEY]?.throttle ?? new SignInThrottle() };
  }
  return g[KEY];
}

export async function authState(): Promise<{ rt: Runtime; key: Buffer; throttle: SignInThrottle }> {
  const rt = await getRuntime();
  const s = state(rt);
  return { rt, key: s.key, throttle: s.throttle };
}

/** The signed-in operator from the cookie, or null. An operator removed from the config is signed out. */
export async function currentSession(now: number = Date.now()): Promise<Session | null> {
  const token = (await cookies()).get(SESSION_COOKIE)?.value;
  if (!token) return null;
  const { rt, key } = await authState();
  const s = verifySession(token, key, now);
  if (!s || !rt.config.operators.some((o) => o.name === s.name)) return null;
  return s;
}

/** For server pages: the operator's name, or null (never throws: a page still renders read-only). */
export async function currentOperatorName(): Promise<string | null> {
  try {
    return (await currentSession())?.name ?? null;
  } catch {
    return null;
  }
}

export async function requireOperator(): Promise<Session> {
  const s = await currentSession();
  if (!s) throw new DomainError("unauthenticated", "sign in as an operator first");
  return s;
}

/** 403 for a browser request from another site (CSRF); see origin.ts. */
export function assertSameOrigin(req: Request): void {
  const origin = req.headers.get("origin");
  const host = req.headers.get("x-forwarded-host") ?? req.headers.get("host");
  if (isForeignOrigin(origin, host)) {
    throw new DomainError("forbidden", `requests from ${origin} are not accepted; use the stepwatch page itself`);
  }
}

/**
 * The client's address for the sign-in throttle. Behind a reverse proxy this is the proxy's
 * X-Forwarded-For entry; without one, Next fills it from the socket.
 */
export function clientAddress(req: Request): string {
  const xff = req.headers.get("x-forwarded-for");
  return (xff?.split(",")[0] ?? req.headers.get("x-real-ip") ?? "local").trim() || "local";
}

/** The cookie is Secure when the page was served over https (directly or behind a TLS proxy). */
export function isHttps(req: Request): boolean {
  return new URL(req.url).protocol === "https:" || req.headers.get("x-forwarded-proto") === "https";
}
