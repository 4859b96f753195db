/**
 * "1 of 2 healthy" beside a proxy's own state: a proxy that answers /v1/models is "up" even when
 * every backend behind it is down or stuck, so the fleet page says how many of the backends the
 * config names for it (`proxies[].backends`) are healthy. Pure, for the page and its tests.
 */
import type { FleetProxy } from "../api/types";

export type FrontedTone = "ok" | "warn" | "bad";

export function frontedLabel(
  p: Pick<FleetProxy, "healthyBackends" | "totalBackends"> & { sleepingBackends?: number | null },
): { text: string; tone: FrontedTone } | null {
  if (p.totalBackends === null || p.healthyBackends === null || p.totalBackends === 0) return null;
  const tone: FrontedTone = p.healthyBackends === p.totalBackends ? "ok" : p.healthyBackends === 0 ? "bad" : "warn";
  // Sleeping ones are healthy (parked on purpose) but not serving now: said, not hidden in the count.
  const sleeping = p.sleepingBackends ? ` · ${p.sleepingBackends} sleeping` : "";
  return { text: `${p.healthyBackends} of ${p.totalBackends} healthy${sleeping}`, tone };
}
