import { respond } from "@/lib/api/respond";
import { clusterView } from "@/lib/api/cluster";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** GET /api/cluster : `{ answeredBy, leader: {id, epoch, since, expiresAt} | null, replicas: [{id, lastSeenAt, leader}] }`. */
export function GET(): Promise<Response> {
  return respond(() => clusterView());
}
