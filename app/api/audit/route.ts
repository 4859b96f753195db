import { z } from "zod";
import { errorResponse } from "@/lib/api/respond";
import { auditPage } from "@/lib/api/audit";
import { DomainError } from "@/lib/core/errors";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const Query = z.object({ limit: z.coerce.number().int().min(1).max(500).optional(), before: z.coerce.number().int().min(1).optional() });

/** GET /api/audit?limit=&before= : the audit log, newest first (operators only: 401/403 otherwise). */
export async function GET(req: Request): Promise<Response> {
  try {
    const sp = new URL(req.url).searchParams;
    const q = Query.safeParse({ limit: sp.get("limit") ?? undefined, before: sp.get("before") ?? undefined });
    if (!q.success) {
      const i = q.error.issues[0];
      throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
    }
    return Response.json(await auditPage(q.data), { headers: { "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}
