import { z } from "zod";
import { errorResponse } from "@/lib/api/respond";
import { actorOf, assertSameOrigin, requireOperator } from "@/lib/api/operator";
import { restartDTO } from "@/lib/api/snapshot";
import { requestRestart, restartDeps } from "@/lib/restart/request";
import { getRuntime } from "@/lib/runtime";
import { readJson } from "../../../_lib/body";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const Body = z.strictObject({
  confirm: z.string().max(64).optional(),
  overrideCooldown: z.boolean().optional(),
  note: z.string().max(500).optional(),
});

/**
 * POST /api/backends/{id}/restart {confirm?, overrideCooldown?, note?}
 * 403 foreign Origin, 401 no session or token, 403 a viewer, 404 unknown id, 501 no restart configured, 409 pending or
 * cooldown (before any 422 for the id), 422 healthy and the id not typed, 202 with the event (the
 * action then runs in the background). See docs/api.md.
 */
export async function POST(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  try {
    assertSameOrigin(req);
    const session = await requireOperator();
    const body = await readJson(req, Body);
    const { id } = await ctx.params;
    const rt = await getRuntime();
    const { event, done } = requestRestart(
      {
        backendId: id,
        operator: session.name,
        ...actorOf(req, session),
        confirm: body.confirm,
        overrideCooldown: body.overrideCooldown,
        note: body.note,
        now: Date.now(),
      },
      restartDeps(rt),
    );
    done.catch((e) => console.error(`stepwatch: restart #${event.id} of ${id}: ${(e as Error).message}`));
    return Response.json({ event: restartDTO(event) }, { status: 202, headers: { "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}
