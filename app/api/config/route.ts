import { respond } from "@/lib/api/respond";
import { getConfigView } from "@/lib/api/config-view";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** What config is loaded (secrets as `***` or `env:NAME`) and the last reload's problems. */
export function GET(): Promise<Response> {
  return respond(() => getConfigView());
}
