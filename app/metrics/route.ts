import { metricsResponse } from "@/lib/api/export/serve";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Prometheus exposition of the fleet's verdicts and stepwatch's own health (lib/api/export/). */
export function GET(req: Request): Promise<Response> {
  return metricsResponse(req);
}
