import { z } from "zod";
import { withOperator } from "@/lib/api/operator";
import { restartBackend } from "@/lib/api/restart";
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
export const POST = withOperator<{ id: string }>(async ({ req, params, operator, actor }) => {
  const body = await readJson(req, Body);
  const event = await restartBackend({ backendId: params.id, operator: operator.name, ...actor, ...body, now: Date.now() });
  return Response.json({ event }, { status: 202, headers: { "cache-control": "no-store" } });
});
