import { respondEncoded } from "@/lib/api/respond";
import { getFleetJson } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The whole fleet from the watcher's memory: never touches a backend. ETag, 304, gzip: see respondEncoded. */
export function GET(req: Request): Promise<Response> {
  return respondEncoded(req, () => getFleetJson());
}
