import { respond } from "@/lib/api/respond";
import { getRestartPlan } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** GET /api/backends/{id}/restart-plan: what a restart would run, the cooldown it starts, the outage to expect. */
export async function GET(_req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await ctx.params;
  return respond(() => getRestartPlan(id));
}
