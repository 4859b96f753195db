/** GET /api/cluster: who leads and which replicas are alive, as this replica sees them. */
import type { ClusterResponse } from "../core/cluster";
import { getRuntime } from "../runtime";

export async function clusterView(): Promise<ClusterResponse> {
  const rt = await getRuntime();
  return { answeredBy: rt.leadership.replicaId, ...(await rt.leadership.view()) };
}
