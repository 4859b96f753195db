import { z } from "zod";
import { editTargetAs } from "@/lib/api/config-edit";
import { withOperator } from "@/lib/api/operator";
import { readJson } from "../../_lib/body";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * POST /api/config/backends {a backend as in the config file}: added to the file and reloaded.
 * 201; 403 foreign Origin or a viewer, 401 no session, 409 the id is in use or the demo fleet,
 * 422 naming the field (a secret not given as env:NAME), 503 the file cannot be written (its path).
 */
export const POST = withOperator(async ({ req, operator, actor }) => {
  const backend = await readJson(req, z.record(z.string(), z.unknown()));
  const r = await editTargetAs(operator, actor.address, { kind: "backend", op: "add", body: backend });
  return Response.json(r, { status: 201, headers: { "cache-control": "no-store" } });
});
