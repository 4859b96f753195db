/**
 * Next 16 Proxy (the successor of middleware), run before every page and API route. What may be
 * answered, and the headers every answer carries, is decided once in lib/api/admission.ts
 * (`admit`), which the fleet's fast lane (lib/api/fast-lane.ts) calls too:
 * 1. the Host check against DNS rebinding: a name that is not an IP literal, localhost,
 *    publicUrl's host or in server.allowedHosts gets a 421 page that says what to configure;
 * 2. the Content-Security-Policy with a fresh nonce per request and 'strict-dynamic' (no
 *    'unsafe-inline' scripts): the nonce travels to Next on the request's CSP header, and Next puts
 *    it on every script it renders;
 * 3. the read gate: with access.read "signed-in", a page without a viewer or operator (session,
 *    API token or trusted proxy user) is sent to /signin, an API answer is 401;
 * 4. HSTS when the browser came over TLS, and the security headers on every answer, refusals and
 *    error pages included.
 */
import { NextResponse, type NextRequest } from "next/server";
import { admit, answerHeaders, refusalResponse, type Admission } from "./lib/api/admission";

function withAnswerHeaders(res: Response, a: Admission): Response {
  for (const [k, v] of answerHeaders(a)) res.headers.set(k, v);
  return res;
}

export async function proxy(request: NextRequest): Promise<Response> {
  const a = await admit({ headers: request.headers, cookies: request.cookies, pathname: request.nextUrl.pathname, search: request.nextUrl.search });
  if (!a.ok) {
    const refused = a.refusal.kind === "sign-in" ? NextResponse.redirect(a.refusal.location, 303) : refusalResponse(a.refusal);
    return withAnswerHeaders(refused, a);
  }
  const headers = new Headers(request.headers);
  headers.set("x-nonce", a.nonce);
  headers.set("content-security-policy", a.csp);
  return withAnswerHeaders(NextResponse.next({ request: { headers } }), a);
}

export const config = {
  // Static assets are immutable files: no policy to attach, nothing a rebinding page can learn.
  matcher: ["/((?!_next/static|_next/image|favicon.ico).*)"],
};
