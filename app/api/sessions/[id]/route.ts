import { respond } from "@/lib/api/respond";
import { endOwnSession } from "@/lib/api/sessions";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** DELETE /api/sessions/{id}: end one of the signed-in operator's own sessions (404 if not theirs). */
export async function DELETE(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await ctx.params;
  return respond(() => endOwnSession(req, id));
}
