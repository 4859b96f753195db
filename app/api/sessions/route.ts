import { respond } from "@/lib/api/respond";
import { listOwnSessions } from "@/lib/api/sessions";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** GET /api/sessions: the signed-in operator's own live sessions (401 otherwise). */
export function GET(): Promise<Response> {
  return respond(() => listOwnSessions());
}
