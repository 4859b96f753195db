/** GET /api/cluster: who leads and which replicas are alive, as this replica sees them. */
import type { ClusterResponse, ReplicaLine } from "../core/cluster";
import { getRuntime } from "../runtime";

export async function clusterView(): Promise<ClusterResponse> {
  const rt = await getRuntime();
  return { answeredBy: rt.leadership.replicaId, ...(await rt.leadership.view()) };
}

/** Asked on every page: bounded, so a database that went away never holds a page (the line then says it does not know). */
export async function replicaLine(waitMs = 300): Promise<ReplicaLine | null> {
  const rt = await getRuntime();
  if (rt.db.engine !== "postgresql") return null;
  const answeredBy = rt.leadership.replicaId;
  if (rt.leadership.isLeader()) return { answeredBy, leader: answeredBy };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), waitMs)));
  const view = await Promise.race([rt.leadership.view().catch(() => undefined), late]).finally(() => clearTimeout(timer));
  return { answeredBy, leader: view === undefined ? undefined : (view.leader?.id ?? null) };
}
