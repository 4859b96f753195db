import { reloadConfigAs } from "@/lib/api/config-view";
import { withOperator } from "@/lib/api/operator";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * POST /api/config/reload: re-read the config file now. 403 foreign Origin, 401 no session,
 * 409 the demo fleet (no file), 422 the file has problems (the running config stays; `details`
 * lists them by field), 200 {ok, added, removed, changed}. See docs/api.md.
 */
export const POST = withOperator(async ({ operator }) =>
  Response.json(await reloadConfigAs(operator.name), { headers: { "cache-control": "no-store" } }),
);
