import { z } from "zod";
import { editTargetAs } from "@/lib/api/config-edit";
import { withOperator } from "@/lib/api/operator";
import { readJson } from "../../../_lib/body";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** PUT /api/config/backends/{id} {the backend}: replaces it in the file (without `restart`, the file's stays). 200, 404 unknown id; else as POST. */
export const PUT = withOperator<{ id: string }>(async ({ req, params, operator, actor }) => {
  const backend = await readJson(req, z.record(z.string(), z.unknown()));
  return Response.json(await editTargetAs(operator, actor.address, { kind: "backend", op: "update", id: params.id, body: backend }), { headers: { "cache-control": "no-store" } });
});

/** DELETE /api/config/backends/{id}: removed from the file and no longer polled. 204, 404 unknown id. */
export const DELETE = withOperator<{ id: string }>(async ({ params, operator, actor }) => {
  await editTargetAs(operator, actor.address, { kind: "backend", op: "remove", id: params.id });
  return new Response(null, { status: 204, headers: { "cache-control": "no-store" } });
});
