import { z } from "zod";
import { historyCsv } from "@/lib/api/exports";
import { respondAs } from "@/lib/api/respond";
import { DomainError } from "@/lib/errors";
import { getHistory } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const HOUR = 3600_000;
const ms = z.coerce.number().int().nonnegative();
const Query = z
  .object({ from: ms.optional(), to: ms.optional() })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, { message: "from must be before to", path: ["from"] });

/** GET /api/backends/{id}/history?from=&to=&format=json|csv (ms since epoch; default the last hour). JSON: columns (lib/api/history.ts). */
export async function GET(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await ctx.params;
  const sp = new URL(req.url).searchParams;
  const format = sp.get("format");
  return respondAs(format, `history-${id}.csv`, () => {
    const q = Query.safeParse({ from: sp.get("from") ?? undefined, to: sp.get("to") ?? undefined });
    if (!q.success) {
      const i = q.error.issues[0];
      throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
    }
    const to = q.data.to ?? Date.now();
    const from = q.data.from ?? to - HOUR;
    if (from >= to) throw new DomainError("bad-request", "from: from must be before to");
    // JSON carries three significant digits (docs/api.md); the CSV every digit stored.
    return getHistory(id, from, to, { exact: format === "csv" });
  }, historyCsv);
}
