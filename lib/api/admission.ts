/**
 * The one admission decision of stepwatch's HTTP answers: whether a request may be answered, and
 * the headers every answer carries. Two callers, one decision (CONTRIBUTING.md invariant 13):
 * proxy.ts (Next's Proxy, before every page and route) and the fleet's fast lane
 * (lib/api/fast-lane.ts, before Next, for GET /api/fleet). A check added here applies to both.
 *
 * In order:
 * 1. the Host check against DNS rebinding (net-policy isAllowedHost): a name that is not an IP
 *    literal, localhost, publicUrl's host or in server.allowedHosts is refused (421);
 * 2. the runtime must have started (instrumentation.ts starts it before Next serves anything);
 *    if it has not, fail closed (503);
 * 3. the read gate: with access.read "signed-in", a path that is not open needs a viewer or an
 *    operator (principalOf: API token, trusted proxy user or session cookie); without one an API
 *    path is refused (401), a page is sent to /signin. A wrong Bearer token counts against the
 *    address like a failed sign-in; past the limit the answer is 429 (lib/auth/bearer.ts).
 * The answer's headers: the Content-Security-Policy with a fresh nonce ('strict-dynamic', no
 * 'unsafe-inline' scripts), SECURITY_HEADERS, and HSTS when the browser came over TLS, on
 * answers and refusals alike.
 *
 * No Next imports: the caller hands in the request's headers and a cookie jar parsed as Next
 * parses one.
 */
import { buildNetPolicy, clientAddressOf, currentNetPolicy, isAllowedHost, requestOrigin, type HeaderSource, type NetPolicy } from "../net/net-policy";
import { contentSecurityPolicy, escapeHtml, SECURITY_HEADERS } from "../auth/headers";
import { principalOf, type Principal } from "../auth/principal";
import { sessionTokenFrom } from "../auth/session";
import { authHolder } from "../auth/state";
import { auditBearerFailure } from "../auth/audit";
import { DomainError } from "../core/errors";
import type { Runtime } from "../runtime";

const FALLBACK = buildNetPolicy({ trustProxy: [], allowedHosts: [] });

/**
 * CSP nonces, 18 random bytes each, cut from a pool the CSPRNG fills 256 nonces at a time: one
 * getRandomValues call per request was about 5% of the server's CPU under 50 clients (a
 * --cpu-prof of the fleet's fast lane). Each nonce's bytes are used once.
 */
const NONCE_BYTES = 18;
const noncePool = new Uint8Array(NONCE_BYTES * 256);
let nonceAt = noncePool.length;
export function freshNonce(): string {
  if (nonceAt + NONCE_BYTES > noncePool.length) {
    crypto.getRandomValues(noncePool);
    nonceAt = 0;
  }
  const bytes = noncePool.subarray(nonceAt, nonceAt + NONCE_BYTES);
  nonceAt += NONCE_BYTES;
  return Buffer.from(bytes.buffer, bytes.byteOffset, NONCE_BYTES).toString("base64");
}

export interface AdmissionRequest {
  headers: HeaderSource;
  /** The request's cookies (Next's RequestCookies, or one built from the same Cookie header). */
  cookies: { get(name: string): { value: string } | undefined };
  pathname: string;
  /** The query string with its "?", or "" (kept for the sign-in page's way back). */
  search: string;
  /**
   * True from the fast lanes: a wrong Bearer token is judged but not counted or audited, because
   * the lane then leaves the request to Next, whose admission (proxy.ts) counts it once.
   */
  judgeOnly?: boolean;
}

export type Refusal =
  | { kind: "host"; host: string | null }
  | { kind: "starting" }
  | { kind: "unauthenticated" }
  | { kind: "rate-limited"; retryAfterSeconds: number }
  | { kind: "sign-in"; location: URL };

interface Common {
  nonce: string;
  csp: string;
  https: boolean;
}

export type Admission = (Common & { ok: true; principal: Principal | null }) | (Common & { ok: false; refusal: Refusal });

/**
 * Not behind the read gate even when access.read is "signed-in": the sign-in itself, and the
 * Prometheus export (/metrics), which has its own bearer option and is scraped by a machine.
 */
export function isOpenPath(p: string): boolean {
  return p === "/signin" || p === "/api/session" || p === "/metrics" || p.startsWith("/_next/") || p === "/favicon.ico" || p === "/robots.txt";
}

export async function admit(req: AdmissionRequest): Promise<Admission> {
  const policy: NetPolicy = currentNetPolicy() ?? FALLBACK;
  const { scheme, host } = requestOrigin(req.headers, policy);
  const https = scheme === "https";
  const nonce = freshNonce();
  const common: Common = { nonce, csp: contentSecurityPolicy(nonce, process.env.NODE_ENV !== "production"), https };
  const refuse = (refusal: Refusal): Admission => ({ ...common, ok: false, refusal });
  if (!isAllowedHost(host, policy)) return refuse({ kind: "host", host });
  const started = startedRuntime();
  if (!started) return refuse({ kind: "starting" });
  const rt = await started;
  if (rt.config.access.read !== "signed-in" || isOpenPath(req.pathname)) return { ...common, ok: true, principal: null };
  const { key, throttle } = authHolder(rt.db.path);
  const bearerGuard = { throttle, address: clientAddressOf(req.headers, policy), count: !req.judgeOnly, onFailure: (a: string, why: "wrong" | "rate-limited", at: number) => auditBearerFailure(rt.db.db, a, why, at) };
  let who: Principal | null;
  try {
    who = principalOf(req.headers, sessionTokenFrom(req.cookies, https), { config: rt.config, db: rt.db.db, key, policy, now: Date.now(), bearerGuard });
  } catch (e) {
    if (e instanceof DomainError && e.code === "rate-limited") return refuse({ kind: "rate-limited", retryAfterSeconds: Number(e.details?.retryAfterSeconds) || 1 });
    throw e;
  }
  if (who) return { ...common, ok: true, principal: who };
  if (req.pathname.startsWith("/api/")) return refuse({ kind: "unauthenticated" });
  // Absolute (Next refuses relative redirects from a proxy), on the scheme and host the browser used.
  const to = new URL("/signin", `${scheme}://${host}`);
  to.searchParams.set("next", `${req.pathname}${req.search}`);
  return refuse({ kind: "sign-in", location: to });
}

/** The headers every answer carries, admitted or refused. */
export function answerHeaders(a: Common): Array<[string, string]> {
  const out: Array<[string, string]> = [["content-security-policy", a.csp], ...Object.entries(SECURITY_HEADERS)];
  if (a.https) out.push(["strict-transport-security", "max-age=31536000"]);
  return out;
}

/** A refusal as a plain Response (without answerHeaders; the sign-in redirect is the caller's). */
export function refusalResponse(r: Exclude<Refusal, { kind: "sign-in" }>): Response {
  switch (r.kind) {
    case "host":
      return hostRefused(r.host);
    case "starting":
      return Response.json({ error: "unavailable", message: "stepwatch is starting" }, { status: 503, headers: { "retry-after": "2" } });
    case "unauthenticated":
      return Response.json({ error: "unauthenticated", message: "sign in to read this stepwatch (access.read is signed-in)" }, { status: 401, headers: { "cache-control": "no-store" } });
    case "rate-limited":
      return Response.json(
        { error: "rate-limited", message: `too many failed attempts from this address; try again in ${r.retryAfterSeconds} s` },
        { status: 429, headers: { "retry-after": String(r.retryAfterSeconds), "cache-control": "no-store" } },
      );
  }
}

function hostRefused(host: string | null): Response {
  const shown = host ? escapeHtml(host.slice(0, 200)) : "(none)";
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Unknown host name · stepwatch</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; line-height: 1.5">
<h1>This host name is not served</h1>
<p>stepwatch was reached as <code>${shown}</code>, which is not one of its names. It answers only
to IP addresses, <code>localhost</code>, the host of <code>publicUrl</code> and the names listed in
<code>server.allowedHosts</code> of its config. This protects it from other web sites that point
their own names at this address (DNS rebinding).</p>
<p>If this is the name you use for stepwatch, add it to <code>server.allowedHosts</code> (or set
<code>publicUrl</code>) and restart stepwatch.</p>
</body></html>`;
  return new Response(body, { status: 421, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
}

/**
 * The runtime lib/runtime started (instrumentation awaits it before serving), or null. Read from
 * globalThis with only a type import of the runtime, so proxy.ts does not bundle the watcher.
 */
function startedRuntime(): Promise<Runtime> | null {
  return (globalThis as { [k: symbol]: Promise<Runtime> | undefined })[Symbol.for("stepwatch.runtime")] ?? null;
}
