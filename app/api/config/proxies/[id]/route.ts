import { z } from "zod";
import { editTargetAs } from "@/lib/api/config-edit";
import { withOperator } from "@/lib/api/operator";
import { readJson } from "../../../_lib/body";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** PUT /api/config/proxies/{id} {the proxy}: replaces it in the file. 200, 404 unknown id; else as POST. */
export const PUT = withOperator<{ id: string }>(async ({ req, params, operator, actor }) => {
  const proxy = await readJson(req, z.record(z.string(), z.unknown()));
  return Response.json(await editTargetAs(operator, actor.address, { kind: "proxy", op: "update", id: params.id, body: proxy }), { headers: { "cache-control": "no-store" } });
});

/** DELETE /api/config/proxies/{id}: removed from the file and no longer polled. 204, 404 unknown id. */
export const DELETE = withOperator<{ id: string }>(async ({ params, operator, actor }) => {
  await editTargetAs(operator, actor.address, { kind: "proxy", op: "remove", id: params.id });
  return new Response(null, { status: 204, headers: { "cache-control": "no-store" } });
});
