import { respondEncoded } from "@/lib/api/respond";
import { getFleetRecentJson } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The fleet's sparkline points from the watcher's memory (kept out of /api/fleet to keep it small). */
export function GET(req: Request): Promise<Response> {
  return respondEncoded(req, () => getFleetRecentJson());
}
