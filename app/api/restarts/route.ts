import { z } from "zod";
import { restartsCsv } from "@/lib/api/exports";
import { respondAs } from "@/lib/api/respond";
import { DomainError } from "@/lib/errors";
import { listRestarts } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const Query = z.object({
  backend: z.string().min(1).max(64).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

/** GET /api/restarts?backend=&limit=&format=json|csv : the restart log, newest first. */
export function GET(req: Request): Promise<Response> {
  const sp = new URL(req.url).searchParams;
  return respondAs(sp.get("format"), `restarts${sp.get("backend") ? `-${sp.get("backend")}` : ""}.csv`, () => {
    const q = Query.safeParse({ backend: sp.get("backend") ?? undefined, limit: sp.get("limit") ?? undefined });
    if (!q.success) {
      const i = q.error.issues[0];
      throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
    }
    return listRestarts({ backendId: q.data.backend, limit: q.data.limit });
  }, restartsCsv);
}
