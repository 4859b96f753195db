import type { Metadata } from "next";
import { HistoryView } from "@/components/HistoryView";
import { getRuntime } from "@/lib/runtime";
import { HISTORY_RANGES, parseWindow, type HistoryRangeKey } from "@/lib/ui/chart";

export const metadata: Metadata = { title: "History" };
export const dynamic = "force-dynamic";

const one = (v: string | string[] | undefined): string | null => (typeof v === "string" && v ? v : null);

export default async function HistoryPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  let backendIds: string[] = [];
  try {
    backendIds = (await getRuntime()).config.backends.map((b) => b.id);
  } catch {
    // The view shows the API's error.
  }
  const r = one(sp.range);
  const range: HistoryRangeKey = HISTORY_RANGES.find((x) => x.key === r)?.key ?? "7d";
  return <HistoryView backend={one(sp.backend)} backendIds={backendIds} range={range} window={parseWindow(one(sp.from), one(sp.to))} />;
}
