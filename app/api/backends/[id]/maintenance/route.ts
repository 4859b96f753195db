import { z } from "zod";
import { errorResponse } from "@/lib/api/respond";
import { actorOf, assertSameOrigin, requireOperator } from "@/lib/api/operator";
import { endBackendMaintenance, startBackendMaintenance } from "@/lib/api/oncall";
import { MAX_MAINTENANCE_MINUTES } from "@/lib/oncall/verbs";
import { readJson } from "../../../_lib/body";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const Body = z.strictObject({
  minutes: z.number().positive().max(MAX_MAINTENANCE_MINUTES),
  note: z.string().max(500).optional(),
});

/**
 * POST /api/backends/{id}/maintenance {minutes, note?}: from now on, for `minutes`: no
 * notification, no restart recommendation, no unattended restart. Replaces a running period.
 * 403 foreign Origin, 401 no session, 404 unknown id, 400 bad minutes, 201 with the period.
 */
export async function POST(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  try {
    assertSameOrigin(req);
    const session = await requireOperator();
    const body = await readJson(req, Body);
    const { id } = await ctx.params;
    const maintenance = await startBackendMaintenance(id, session.name, body.minutes, body.note, actorOf(req, session));
    return Response.json({ maintenance }, { status: 201, headers: { "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}

/** DELETE /api/backends/{id}/maintenance: ends it now. 409 when not in maintenance (or only in a config window). */
export async function DELETE(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  try {
    assertSameOrigin(req);
    const session = await requireOperator();
    const { id } = await ctx.params;
    return Response.json(await endBackendMaintenance(id, session.name, actorOf(req, session)), { headers: { "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}
