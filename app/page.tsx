import { FleetView } from "@/components/FleetView";
import { currentOperatorName } from "@/lib/api/operator";
import { getFleet } from "@/lib/api/fleet";
import type { FleetResponse } from "@/lib/api/types";

export const dynamic = "force-dynamic";

/** Server-rendered first answer (no empty flash), then the client polls /api/fleet. */
export default async function FleetPage() {
  let initial: FleetResponse | null = null;
  try {
    initial = await getFleet();
  } catch {
    // The client shows the API's own error on its first poll.
  }
  return <FleetView initial={initial} operator={await currentOperatorName()} />;
}
