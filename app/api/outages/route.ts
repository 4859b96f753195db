import { z } from "zod";
import { outagesCsv } from "@/lib/api/exports";
import { getOutages } from "@/lib/api/outages";
import { respondAs } from "@/lib/api/respond";
import { DomainError } from "@/lib/core/errors";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const WEEK = 7 * 24 * 3600_000;
const ms = z.coerce.number().int().nonnegative();
const Query = z.object({ backend: z.string().min(1).max(64).optional(), from: ms.optional(), to: ms.optional() });

/**
 * GET /api/outages?backend=&from=&to=&format=json|csv (ms since epoch; default the last 7 days):
 * `{from, to, outages: [{backendId, state, cause, start, end, durationSeconds}], uptime}`, newest
 * first; an outage still going on has `end: null`.
 */
export function GET(req: Request): Promise<Response> {
  const sp = new URL(req.url).searchParams;
  return respondAs(
    sp.get("format"),
    `outages${sp.get("backend") ? `-${sp.get("backend")}` : ""}.csv`,
    () => {
      const q = Query.safeParse({ backend: sp.get("backend") ?? undefined, from: sp.get("from") ?? undefined, to: sp.get("to") ?? undefined });
      if (!q.success) {
        const i = q.error.issues[0];
        throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
      }
      const to = q.data.to ?? Date.now();
      const from = q.data.from ?? to - WEEK;
      if (from >= to) throw new DomainError("bad-request", "from: from must be before to");
      return getOutages({ backendId: q.data.backend, from, to });
    },
    (r) => outagesCsv(r.outages),
  );
}
