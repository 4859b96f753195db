import type { Metadata } from "next";
import { cache } from "react";
import { FleetView } from "@/components/FleetView";
import { currentViewer } from "@/lib/api/operator";
import { fleetSeed, getFleet } from "@/lib/api/fleet";
import type { FleetResponse } from "@/lib/api/types";
import { attentionTitle } from "@/lib/ui/fleet";

export const dynamic = "force-dynamic";

// Once per request: the title and the page read the same answer.
const firstAnswer = cache(async (): Promise<FleetResponse | null> => {
  try {
    return await getFleet();
  } catch {
    // The client shows the API's own error on its first poll.
    return null;
  }
});

/**
 * "2 stuck, 1 down · stepwatch" in the served HTML: a tab opened while something is stuck says so
 * before any script runs (the client keeps it current after each refresh). `absolute`, because the
 * layout's template would add a second "· stepwatch".
 */
export async function generateMetadata(): Promise<Metadata> {
  const fleet = await firstAnswer();
  return { title: { absolute: attentionTitle(fleet?.backends ?? []) } };
}

/**
 * Server-rendered first answer (no empty flash), then the client polls /api/fleet. It goes to the
 * client as columns (FleetSeed): React's payload repeats it beside the rendered rows, and 500
 * backends' keys were two thirds of that copy.
 */
export default async function FleetPage() {
  const initial = await firstAnswer();
  return <FleetView initial={initial ? fleetSeed(initial) : null} viewer={await currentViewer()} />;
}
