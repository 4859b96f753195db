import { evidenceTarGz, getEvidence } from "@/lib/api/evidence";
import { errorResponse, respond } from "@/lib/api/respond";
import { DomainError } from "@/lib/core/errors";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * GET /api/evidence/{id}?format=json|tar.gz : one evidence bundle (docs/api.md), as JSON or as a
 * .tar.gz download. Behind the read gate like every read route (access.read).
 */
export async function GET(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await ctx.params;
  const format = new URL(req.url).searchParams.get("format") ?? "json";
  const parsed = /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : null;
  const verb = () => {
    if (parsed === null) throw new DomainError("bad-request", "id: must be a bundle's number");
    if (format !== "json" && format !== "tar.gz") throw new DomainError("bad-request", 'format: must be "json" or "tar.gz"');
    return getEvidence(parsed);
  };
  if (format !== "tar.gz") return respond(verb);
  try {
    const { name, bytes } = evidenceTarGz(await verb());
    return new Response(new Uint8Array(bytes), {
      headers: { "content-type": "application/gzip", "content-disposition": `attachment; filename="${name}"`, "cache-control": "no-store" },
    });
  } catch (e) {
    return errorResponse(e);
  }
}
