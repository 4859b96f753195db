import { z } from "zod";
import { availabilityCsv } from "@/lib/api/exports";
import { getAvailability, MAX_AVAILABILITY_DAYS } from "@/lib/api/availability";
import { respondAs } from "@/lib/api/respond";
import { DomainError } from "@/lib/core/errors";
import { AVAILABILITY_PERIODS } from "@/lib/core/outages";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const DAY = 24 * 3600_000;
const ms = z.coerce.number().int().nonnegative();
const Query = z.object({
  backend: z.string().min(1).max(64).optional(),
  from: ms.optional(),
  to: ms.optional(),
  period: z.enum(AVAILABILITY_PERIODS, { error: `must be one of ${AVAILABILITY_PERIODS.join(", ")}` }).default("day"),
});

/**
 * GET /api/availability?backend=&from=&to=&period=day|week|month&format=json|csv (ms since epoch;
 * default the last 7 days, by day): per backend and period, seconds in each state (maintenance
 * apart; they add up to the period), restarts by stepwatch and by others, mean time to recover.
 */
export function GET(req: Request): Promise<Response> {
  const sp = new URL(req.url).searchParams;
  return respondAs(
    sp.get("format"),
    `availability${sp.get("backend") ? `-${sp.get("backend")}` : ""}.csv`,
    () => {
      const q = Query.safeParse({
        backend: sp.get("backend") ?? undefined,
        from: sp.get("from") ?? undefined,
        to: sp.get("to") ?? undefined,
        period: sp.get("period") ?? undefined,
      });
      if (!q.success) {
        const i = q.error.issues[0];
        throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
      }
      const to = q.data.to ?? Date.now();
      const from = q.data.from ?? to - 7 * DAY;
      if (from >= to) throw new DomainError("bad-request", "from: from must be before to");
      if (to - from > MAX_AVAILABILITY_DAYS * DAY) throw new DomainError("bad-request", `from: at most ${MAX_AVAILABILITY_DAYS} days in one report`);
      return getAvailability({ backendId: q.data.backend, from, to, period: q.data.period });
    },
    (r) => availabilityCsv(r.rows),
  );
}
