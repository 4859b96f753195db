/**
 * The /metrics verb: the scrape token check (when the config sets metrics.bearerToken) and the
 * exposition. Independent of sign-in on purpose: a Prometheus server has no operator session.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { errorResponse } from "../api/respond";
import { getRuntime } from "../runtime";

/**
 * Whether an Authorization header carries `Bearer <token>`. Both sides are hashed first, so the
 * comparison is constant-time whatever the lengths (timingSafeEqual needs equal lengths).
 */
export function bearerMatches(header: string | null, token: string): boolean {
  const m = header === null ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  const given = createHash("sha256").update(m ? m[1] : "").digest();
  const want = createHash("sha256").update(token).digest();
  return timingSafeEqual(given, want) && m !== null;
}

export async function metricsResponse(req: Request): Promise<Response> {
  try {
    const rt = await getRuntime();
    const token = rt.config.metrics.bearerToken;
    if (token !== null && !bearerMatches(req.headers.get("authorization"), token)) {
      return new Response("401 Unauthorized: /metrics needs Authorization: Bearer <metrics.bearerToken>\n", {
        status: 401,
        headers: { "www-authenticate": 'Bearer realm="stepwatch metrics"', "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" },
      });
    }
    const body = await rt.metrics.render();
    return new Response(body, { headers: { "content-type": rt.metrics.contentType, "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}
