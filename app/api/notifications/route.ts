import { z } from "zod";
import { respond } from "@/lib/api/respond";
import { DomainError } from "@/lib/core/errors";
import { listNotifications } from "@/lib/api/oncall";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const Query = z.object({
  backend: z.string().min(1).max(64).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

/** GET /api/notifications?backend=&limit= : recent notifications with each channel's deliveries and attempts, and the channels' health. */
export function GET(req: Request): Promise<Response> {
  return respond(() => {
    const sp = new URL(req.url).searchParams;
    const q = Query.safeParse({ backend: sp.get("backend") ?? undefined, limit: sp.get("limit") ?? undefined });
    if (!q.success) {
      const i = q.error.issues[0];
      throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
    }
    return listNotifications({ backendId: q.data.backend, limit: q.data.limit });
  });
}
