import { respondEncoded } from "@/lib/api/respond";
import { getFleetJson } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The whole fleet from the watcher's memory: never touches a backend. */
export function GET(): Promise<Response> {
  return respondEncoded(() => getFleetJson());
}
