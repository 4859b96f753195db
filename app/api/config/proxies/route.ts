import { z } from "zod";
import { editTargetAs } from "@/lib/api/config-edit";
import { withOperator } from "@/lib/api/operator";
import { readJson } from "../../_lib/body";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * POST /api/config/proxies {a proxy as in the config file: id, url, apiKey?, backends?}: added to
 * the file and reloaded. The same checks and answers as POST /api/config/backends (docs/api.md).
 */
export const POST = withOperator(async ({ req, operator, actor }) => {
  const proxy = await readJson(req, z.record(z.string(), z.unknown()));
  const r = await editTargetAs(operator, actor.address, { kind: "proxy", op: "add", body: proxy });
  return Response.json(r, { status: 201, headers: { "cache-control": "no-store" } });
});
