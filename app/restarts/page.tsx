import type { Metadata } from "next";
import { RestartsView } from "@/components/RestartsView";
import { getRuntime } from "@/lib/runtime";

export const metadata: Metadata = { title: "Restarts" };
export const dynamic = "force-dynamic";

export default async function RestartsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const backend = typeof sp.backend === "string" && sp.backend ? sp.backend : null;
  let backendIds: string[] = [];
  try {
    backendIds = (await getRuntime()).config.backends.map((b) => b.id);
  } catch {
    // The view shows the API's error.
  }
  return <RestartsView backend={backend} backendIds={backendIds} />;
}
