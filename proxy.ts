/**
 * Next 16 Proxy (the successor of middleware), run before every page and API route:
 * 1. the Host check against DNS rebinding (lib/auth/net-policy isAllowedHost): a name that is not
 *    an IP literal, localhost, publicUrl's host or in server.allowedHosts gets a 421 page that
 *    says what to configure, and nothing else;
 * 2. the Content-Security-Policy with a fresh nonce per request and 'strict-dynamic' (no
 *    'unsafe-inline' scripts): the nonce travels to Next on the request's CSP header, and Next puts
 *    it on every script it renders;
 * 3. the read gate: with access.read "signed-in", a page without a viewer or operator (session,
 *    API token or trusted proxy user) is sent to /signin, an API answer is 401;
 * 4. HSTS when the browser came over TLS, and the security headers on every answer, refusals and
 *    error pages included.
 */
import { NextResponse, type NextRequest } from "next/server";
import { buildNetPolicy, currentNetPolicy, isAllowedHost, requestOrigin, type NetPolicy } from "./lib/auth/net-policy";
import { contentSecurityPolicy, escapeHtml, SECURITY_HEADERS } from "./lib/auth/headers";
import { principalOf } from "./lib/auth/principal";
import { sessionTokenFrom } from "./lib/auth/session";
import { authHolder, startedRuntime } from "./lib/auth/state";

const FALLBACK = buildNetPolicy({ trustProxy: [], allowedHosts: [] });

function withSecurityHeaders(res: Response, csp: string, https: boolean): Response {
  res.headers.set("content-security-policy", csp);
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.headers.set(k, v);
  if (https) res.headers.set("strict-transport-security", "max-age=31536000");
  return res;
}

function hostRefused(host: string | null, csp: string, https: boolean): Response {
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
  return withSecurityHeaders(
    new Response(body, { status: 421, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } }),
    csp,
    https,
  );
}

/**
 * Not behind the read gate even when access.read is "signed-in": the sign-in itself, and the
 * Prometheus export (/metrics), which has its own bearer option and is scraped by a machine.
 */
function isOpenPath(p: string): boolean {
  return p === "/signin" || p === "/api/session" || p === "/metrics" || p.startsWith("/_next/") || p === "/favicon.ico" || p === "/robots.txt";
}

/** null when the request may go on; else the refusal (401 for the API, a redirect to /signin for pages). */
async function readGate(request: NextRequest, policy: NetPolicy, https: boolean): Promise<Response | null> {
  const started = startedRuntime();
  // instrumentation.ts starts the runtime before Next serves anything; if it has not, fail closed.
  if (!started) return Response.json({ error: "unavailable", message: "stepwatch is starting" }, { status: 503, headers: { "retry-after": "2" } });
  const rt = await started;
  if (rt.config.access.read !== "signed-in" || isOpenPath(request.nextUrl.pathname)) return null;
  const { key } = authHolder(rt);
  const who = principalOf(request.headers, sessionTokenFrom(request.cookies, https), { config: rt.config, db: rt.db.db, key, policy, now: Date.now() });
  if (who) return null;
  if (request.nextUrl.pathname.startsWith("/api/")) {
    return Response.json({ error: "unauthenticated", message: "sign in to read this stepwatch (access.read is signed-in)" }, { status: 401, headers: { "cache-control": "no-store" } });
  }
  // Absolute (Next refuses relative redirects from a proxy), on the scheme and host the browser used.
  const { scheme, host } = requestOrigin(request.headers, policy);
  const to = new URL("/signin", `${scheme}://${host}`);
  to.searchParams.set("next", `${request.nextUrl.pathname}${request.nextUrl.search}`);
  return NextResponse.redirect(to, 303);
}

export async function proxy(request: NextRequest): Promise<Response> {
  const policy: NetPolicy = currentNetPolicy() ?? FALLBACK;
  const { scheme, host } = requestOrigin(request.headers, policy);
  const https = scheme === "https";
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString("base64");
  const csp = contentSecurityPolicy(nonce, process.env.NODE_ENV !== "production");
  if (!isAllowedHost(host, policy)) return hostRefused(host, csp, https);
  const refused = await readGate(request, policy, https);
  if (refused) return withSecurityHeaders(refused, csp, https);

  const headers = new Headers(request.headers);
  headers.set("x-nonce", nonce);
  headers.set("content-security-policy", csp);
  const res = NextResponse.next({ request: { headers } });
  return withSecurityHeaders(res, csp, https);
}

export const config = {
  // Static assets are immutable files: no policy to attach, nothing a rebinding page can learn.
  matcher: ["/((?!_next/static|_next/image|favicon.ico).*)"],
};
