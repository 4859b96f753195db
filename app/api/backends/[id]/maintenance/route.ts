import { z } from "zod";
import { withOperator } from "@/lib/api/operator";
import { endBackendMaintenance, startBackendMaintenance } from "@/lib/api/oncall";
import { MAX_MAINTENANCE_MINUTES } from "@/lib/core/oncall";
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
export const POST = withOperator<{ id: string }>(async ({ req, params, operator, actor }) => {
  const body = await readJson(req, Body);
  const maintenance = await startBackendMaintenance(params.id, operator.name, body.minutes, body.note, actor);
  return Response.json({ maintenance }, { status: 201, headers: { "cache-control": "no-store" } });
});

/** DELETE /api/backends/{id}/maintenance: ends it now. 409 when not in maintenance (or only in a config window). */
export const DELETE = withOperator<{ id: string }>(async ({ params, operator, actor }) =>
  Response.json(await endBackendMaintenance(params.id, operator.name, actor), { headers: { "cache-control": "no-store" } }),
);
