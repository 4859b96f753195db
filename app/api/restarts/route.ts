import { z } from "zod";
import { errorResponse } from "@/lib/api/respond";
import { DomainError } from "@/lib/errors";
import { RESTARTS_MAX_LIMIT, listRestarts } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const Query = z.object({
  backend: z.string().min(1).max(64).optional(),
  limit: z.coerce.number().int().min(1).max(RESTARTS_MAX_LIMIT).optional(),
  before: z.coerce.number().int().min(1).optional(),
});

/**
 * GET /api/restarts?backend=&limit=&before= : the restart log, newest first, one page (at most
 * `limit`, default 100, max 500). The body is the array of events; when there are older ones, a
 * `Link: <...&before=ID>; rel="next"` header names the next page.
 */
export async function GET(req: Request): Promise<Response> {
  try {
    const url = new URL(req.url);
    const sp = url.searchParams;
    const q = Query.safeParse({ backend: sp.get("backend") ?? undefined, limit: sp.get("limit") ?? undefined, before: sp.get("before") ?? undefined });
    if (!q.success) {
      const i = q.error.issues[0];
      throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
    }
    const page = await listRestarts({ backendId: q.data.backend, limit: q.data.limit, beforeId: q.data.before });
    const headers: Record<string, string> = { "cache-control": "no-store" };
    if (page.nextBefore !== null) {
      const next = new URLSearchParams(sp);
      next.set("before", String(page.nextBefore));
      headers.link = `</api/restarts?${next.toString()}>; rel="next"`;
    }
    return Response.json(page.events, { headers });
  } catch (e) {
    return errorResponse(e);
  }
}
