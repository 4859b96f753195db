import { respond } from "@/lib/api/respond";
import { reloadConfigAs } from "@/lib/api/config-view";
import { assertSameOrigin, requireOperator } from "@/lib/api/operator";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * POST /api/config/reload: re-read the config file now. 403 foreign Origin, 401 no session,
 * 409 the demo fleet (no file), 422 the file has problems (the running config stays; `details`
 * lists them by field), 200 {ok, added, removed, changed}. See docs/api.md.
 */
export function POST(req: Request): Promise<Response> {
  return respond(async () => {
    assertSameOrigin(req);
    const session = await requireOperator();
    return reloadConfigAs(session.name);
  });
}
