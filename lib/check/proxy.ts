/**
 * A proxy is judged only from GET /v1/models: never its /metrics (behind least-connection
 * balancing each read may come from a different backend), never a backend from its errors.
 *
 * The one proxy rule, used by the watcher and the CLI alike: one failed read is "unknown", two
 * failed reads in a row are "down" (docs/decisions.md, "Proxy down rule").
 */
import { countOf } from "../core/caps";
import { lateReason, seenLate } from "./late";
import type { ProxyState } from "../core/states";
import { type ProxyReading, reason, type Reason } from "../core/types";

export interface ProxyJudgement {
  state: ProxyState;
  reasons: Reason[];
}

/** Pure: `previous` is the last reading judged before this one (null on the first). One miss is not "down". */
export function judgeProxy(previous: ProxyReading | null, reading: ProxyReading): ProxyJudgement {
  // Seen late (lib/check/late.ts): never "down"; the caller keeps `previous` as the read that counts.
  if (seenLate(reading)) return { state: "unknown", reasons: [lateReason(reading)] };
  if (reading.outcome === "ok") {
    return { state: "up", reasons: [reason("proxy-up", `/v1/models answered in ${Math.round(reading.latencyMs)} ms: ${countOf(reading.models)} model(s)`)] };
  }
  const why = reason("proxy-failed", `/v1/models failed: ${reading.error ?? reading.outcome}${reading.status ? ` (HTTP ${reading.status})` : ""}`);
  if (previous && previous.outcome !== "ok") return { state: "down", reasons: [why, reason("proxy-down", "failed on two consecutive reads")] };
  return { state: "unknown", reasons: [why, reason("proxy-one-miss", "one failed read is not down")] };
}
