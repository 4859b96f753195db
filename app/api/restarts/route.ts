import { z } from "zod";
import { restartsCsv } from "@/lib/api/exports";
import { respondAs } from "@/lib/api/respond";
import { DomainError } from "@/lib/core/errors";
import { RESTARTS_MAX_LIMIT, listRestarts } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const Query = z.object({
  backend: z.string().min(1).max(64).optional(),
  limit: z.coerce.number().int().min(1).max(RESTARTS_MAX_LIMIT).optional(),
  before: z.coerce.number().int().min(1).optional(),
});

/**
 * GET /api/restarts?backend=&limit=&before=&format=json|csv : the restart log, newest first, one
 * page (at most `limit`, default 100, max 1000). When there are older events, a
 * `Link: <...&before=ID>; rel="next"` header names the next page.
 */
export async function GET(req: Request): Promise<Response> {
  const sp = new URL(req.url).searchParams;
  let next: string | null = null;
  const res = await respondAs(sp.get("format"), `restarts${sp.get("backend") ? `-${sp.get("backend")}` : ""}.csv`, async () => {
    const q = Query.safeParse({ backend: sp.get("backend") ?? undefined, limit: sp.get("limit") ?? undefined, before: sp.get("before") ?? undefined });
    if (!q.success) {
      const i = q.error.issues[0];
      throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
    }
    const page = await listRestarts({ backendId: q.data.backend, limit: q.data.limit, beforeId: q.data.before });
    if (page.nextBefore !== null) {
      const p = new URLSearchParams(sp);
      p.set("before", String(page.nextBefore));
      next = `</api/restarts?${p.toString()}>; rel="next"`;
    }
    return page.events;
  }, restartsCsv);
  if (next !== null && res.ok) res.headers.set("link", next);
  return res;
}
