import { respond } from "@/lib/api/respond";
import { getReplay } from "@/lib/api/replay";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * GET /api/backends/{id}/replay?from=&to=&stuckAfterSeconds=&startupGraceSeconds=&pollIntervalSeconds=&minStuckWindowSeconds=
 * (ms since epoch; default the last history.replayDays; each threshold not given is the configured one).
 */
export async function GET(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await ctx.params;
  return respond(() => getReplay(id, new URL(req.url).searchParams));
}
