import { z } from "zod";
import { withOperator } from "@/lib/api/operator";
import { acknowledgeBackend } from "@/lib/api/oncall";
import { readJson } from "../../../_lib/body";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const Body = z.strictObject({ note: z.string().max(500).optional() });

/**
 * POST /api/backends/{id}/acknowledge {note?}: stops reminders (and an unattended restart) for the
 * current problem until the backend is healthy again. 403 foreign Origin, 401 no session, 404
 * unknown id, 409 healthy (nothing to acknowledge), 201 with the acknowledgement.
 */
export const POST = withOperator<{ id: string }>(async ({ req, params, operator, actor }) => {
  const body = await readJson(req, Body);
  const acknowledgement = await acknowledgeBackend(params.id, operator.name, body.note, actor);
  return Response.json({ acknowledgement }, { status: 201, headers: { "cache-control": "no-store" } });
});
