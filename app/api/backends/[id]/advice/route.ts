import { respond } from "@/lib/api/respond";
import { getAdvice } from "@/lib/api/replay";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** GET /api/backends/{id}/advice?from=&to=: stuckAfterSeconds, startupGraceSeconds, probe timeout and probe YAML advised from the record. Never applied. */
export async function GET(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await ctx.params;
  return respond(() => getAdvice(id, new URL(req.url).searchParams));
}
