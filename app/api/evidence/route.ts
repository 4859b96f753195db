import { listEvidence } from "@/lib/api/evidence";
import { respond } from "@/lib/api/respond";
import { DomainError } from "@/lib/core/errors";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** GET /api/evidence?backend=ID : the backend's newest evidence bundles (without their contents), newest first. */
export async function GET(req: Request): Promise<Response> {
  const backend = new URL(req.url).searchParams.get("backend");
  return respond(() => {
    if (!backend) throw new DomainError("bad-request", "backend: required");
    return listEvidence(backend);
  });
}
