/**
 * "1 of 2 healthy" beside a proxy's own state: a proxy that answers /v1/models is "up" even when
 * every backend behind it is down or stuck, so the fleet page says how many of the backends the
 * config names for it (`proxies[].backends`) are healthy. Pure, for the page and its tests.
 */
import type { FleetProxy } from "../api/types";
import { proxyHealth, type ProxyHealth } from "../core/states";

export type FrontedTone = "ok" | "warn" | "bad";

/** The server's word for the proxy's backends (FleetProxy.health) as the page's tones: amber some, red none. */
const TONE: Record<ProxyHealth, FrontedTone> = { ok: "ok", degraded: "warn", none: "bad" };

export function frontedLabel(
  p: Pick<FleetProxy, "healthyBackends" | "totalBackends"> & { sleepingBackends?: number | null; health?: ProxyHealth | null },
): { text: string; tone: FrontedTone } | null {
  if (p.totalBackends === null || p.healthyBackends === null || p.totalBackends === 0) return null;
  const tone = TONE[p.health ?? proxyHealth(p.healthyBackends, p.totalBackends)];
  // Sleeping ones are healthy (parked on purpose) but not serving now: said, not hidden in the count.
  const sleeping = p.sleepingBackends ? ` · ${p.sleepingBackends} sleeping` : "";
  return { text: `${p.healthyBackends} of ${p.totalBackends} healthy${sleeping}`, tone };
}
