import { historyCsv } from "@/lib/api/exports";
import { historyRange } from "@/lib/api/history-query";
import { respondAs } from "@/lib/api/respond";
import { getHistory } from "@/lib/api/fleet";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * GET /api/backends/{id}/history?from=&to=&format=json|csv (ms since epoch; default the last hour). JSON: columns (lib/core/history.ts).
 * The JSON is usually answered by the fast lane (lib/api/fast-lane.ts) before this handler; its answer must stay this one's.
 */
export async function GET(req: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await ctx.params;
  const sp = new URL(req.url).searchParams;
  const format = sp.get("format");
  return respondAs(format, `history-${id}.csv`, () => {
    const { from, to } = historyRange(sp);
    // JSON carries three significant digits (docs/api.md); the CSV every digit stored.
    return getHistory(id, from, to, { exact: format === "csv" });
  }, historyCsv);
}
