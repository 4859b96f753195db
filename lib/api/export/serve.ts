/**
 * The /metrics verb: the scrape token check (when the config sets metrics.bearerToken) and the
 * exposition. Independent of sign-in on purpose: a Prometheus server has no operator session.
 */
import { errorResponse } from "../respond";
import { auditBearerFailure } from "../../auth/audit";
import { guardBearer } from "../../auth/bearer";
import { authHolder } from "../../auth/state";
import { bearerRateLimited } from "../../auth/principal";
import { buildNetPolicy, clientAddressOf, currentNetPolicy } from "../../net/net-policy";
import { safeEqualStrings } from "../../auth/password";
import { bearerIn } from "../../auth/principal";
import { getRuntime } from "../../runtime";

/** Whether an Authorization header carries `Bearer <token>`, compared in constant time (as API tokens are). */
export function bearerMatches(header: string | null, token: string): boolean {
  const given = bearerIn(header);
  return given !== null && safeEqualStrings(given, token);
}

/**
 * A rendered exposition is reused for this long. One render at 1000 backends costs tens of ms of
 * CPU on the event loop the watcher polls from (bench/metrics-scrape.ts); two HA Prometheus
 * servers, or anyone hammering this public URL, then cost one render per second at most. Far
 * below the watcher's own interval, so the answer is as fresh as what the watcher knows.
 */
export const METRICS_MAX_AGE_MS = 1000;
let cached: { at: number; body: Promise<string> } | null = null;

function rendered(render: () => Promise<string>, now: number): Promise<string> {
  if (cached && now - cached.at >= 0 && now - cached.at < METRICS_MAX_AGE_MS) return cached.body;
  const body = render();
  cached = { at: now, body };
  body.catch(() => {
    if (cached?.body === body) cached = null; // a failure is not cached
  });
  return body;
}

export async function metricsResponse(req: Request): Promise<Response> {
  try {
    const rt = await getRuntime();
    const token = rt.config.metrics.bearerToken;
    if (token !== null) {
      // Throttled and audited like a wrong API token (lib/auth/bearer.ts): 429 once over the limit.
      const address = clientAddressOf(req.headers, currentNetPolicy() ?? buildNetPolicy({ trustProxy: [], allowedHosts: [] }));
      const now = Date.now();
      const r = guardBearer(() => (bearerMatches(req.headers.get("authorization"), token) ? true : null), {
        throttle: authHolder(rt.db.path).throttle,
        address,
        now,
        onFailure: (a, why, at) => auditBearerFailure(rt.db.db, a, why, at),
      });
      if (!r.ok && r.why === "rate-limited") return errorResponse(bearerRateLimited(r.retryAfterMs));
      if (!r.ok) {
        return new Response("401 Unauthorized: /metrics needs Authorization: Bearer <metrics.bearerToken>\n", {
          status: 401,
          headers: { "www-authenticate": 'Bearer realm="stepwatch metrics"', "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" },
        });
      }
    }
    const body = await rendered(() => rt.metrics.render(), Date.now());
    return new Response(body, { headers: { "content-type": rt.metrics.contentType, "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}
