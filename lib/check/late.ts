/**
 * Reads this process saw late. A timeout is only evidence about a server when stepwatch looked at
 * its deadline on time: when its own event loop was busy (more backends than its cores can read,
 * a long GC, a heavy query in the same process), the answer may have sat unread in the socket
 * and the "timeout" is stepwatch's. Such a read (lib/net/http.ts marks it, lib/check/read.ts
 * carries it) is stored and shown, and never judged: a watcher's overload must never make a
 * healthy server stalled, stuck or down, nor earn it a restart.
 */
import { type ProxyReading, type Reading, reason, type Reason } from "../core/types";

/** How late this process saw the read's worst timeout (its GETs', or its probe's), 0 if none was seen late. */
export function lateMsOf(r: Reading | ProxyReading): number {
  return Math.max(r.watcherLateMs ?? 0, ("probe" in r ? r.probe?.watcherLateMs : undefined) ?? 0);
}

/** Whether a request of this read timed out while this process was late (a mark is always over LATE_DEADLINE_MS). */
export function seenLate(r: Reading | ProxyReading): boolean {
  return lateMsOf(r) > 0;
}

/** The reason a late read gives, first in its verdict's reasons. */
export function lateReason(r: Reading | ProxyReading): Reason {
  const s = (lateMsOf(r) / 1000).toFixed(1);
  return reason("watcher-late", `this read is not judged: a request timed out while stepwatch itself was ${s} s late to see it (its own event loop was busy), so the timeout says nothing about the server`);
}
