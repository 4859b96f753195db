/**
 * How a pending restart ends, decided in one pure place. The watcher asks `resolve` after every
 * verdict while a restart is pending and only persists what it returns; the restart verb asks
 * `actionFailed` when the action itself failed (lib/restart/request.ts). Nothing here reads the
 * clock or the database: the pending event, the verdict, its reading's time and `now` go in.
 */

/** What the watcher knows of the pending restart. */
export interface PendingEvent {
  requestedAt: number;
}

/** What the current verdict says: a new process seen serving (`recovered`), and the state for the message. */
export interface ResolveVerdict {
  state: string;
  recovered?: boolean;
}

export interface RestartTimeouts {
  /** A restart with no new process seen serving within this long timed out. */
  recoveryTimeoutSeconds: number;
}

/** What to record: the row's outcome and the line a person reads, or null while it stays pending. */
export type Resolution =
  | { outcome: "recovered"; resolvedAt: number; recoveredAt: number; downtimeSeconds: number; resolution: string }
  | { outcome: "timed-out"; resolvedAt: number; downtimeSeconds: null; resolution: string };

/**
 * Recovered when the verdict saw a new process serving (downtime from the request to that
 * reading); timed out once `now` is past recoveryTimeoutSeconds after the request; else pending.
 * Recovery wins over the timeout: a server that came back late did come back.
 */
export function resolve(pending: PendingEvent, verdict: ResolveVerdict, readingAt: number, now: number, timeouts: RestartTimeouts): Resolution | null {
  if (verdict.recovered) {
    const downtimeSeconds = (readingAt - pending.requestedAt) / 1000;
    return {
      outcome: "recovered",
      resolvedAt: now,
      recoveredAt: readingAt,
      downtimeSeconds,
      resolution: `a new process was seen serving ${downtimeSeconds.toFixed(1)} s after the restart was asked for (${verdict.state})`,
    };
  }
  if (now - pending.requestedAt > timeouts.recoveryTimeoutSeconds * 1000) {
    return {
      outcome: "timed-out",
      resolvedAt: now,
      downtimeSeconds: null,
      resolution: `no new process seen serving within recoveryTimeoutSeconds (${timeouts.recoveryTimeoutSeconds} s); last state ${verdict.state}`,
    };
  }
  return null;
}

/** The action failed (non-zero exit, timeout, webhook error): the event closes at once, never retried. */
export function actionFailed(error: string | null): { outcome: "failed"; resolution: string } {
  return { outcome: "failed", resolution: `the restart action failed: ${error ?? "unknown error"}; not retried` };
}

/**
 * How long a restart may wait for a leader to carry it out. One asked on a standby is picked up
 * within a second while a replica leads, and a failover takes about one lease (15 s by default);
 * past this, the backend the operator saw may be well again, and running the command then would
 * restart a healthy server on a stale request. A restart runs when it is asked, or not at all.
 */
export const PICKUP_LIMIT_MS = 120_000;

/** A pending restart no leader started within PICKUP_LIMIT_MS: closed, never run. */
export function notRunStale(row: { requestedAt: number; requestedBy: string }, now: number): { outcome: "failed"; resolution: string } {
  const waited = Math.round((now - row.requestedAt) / 1000);
  return {
    outcome: "failed",
    resolution: `not run: asked by ${row.requestedBy} ${waited} s ago, and no leader took it up within ${PICKUP_LIMIT_MS / 1000} s (a restart runs when it is asked or not at all; ask again if it is still needed: its cooldown counts from the request, so overriding it)`,
  };
}

/** What is known of a started restart whose result was never recorded. */
export interface StartedEvent {
  startedAt: number | null;
  startedBy: string | null;
  startedEpoch: number | null;
}

/**
 * A restart whose action was started by a leader that stopped leading before its result was
 * recorded (killed, or its lease lost mid-command), and whose backend the next leader's first
 * reading does not show recovered: the command may or may not have run to its end. Never re-run
 * automatically; an operator looks at the backend and asks again if need be.
 */
export function outcomeUnknown(e: StartedEvent, now: number): { outcome: "unknown"; resolvedAt: number; downtimeSeconds: null; resolution: string } {
  const who = `${e.startedBy ?? "another replica"}${e.startedEpoch !== null ? ` (epoch ${e.startedEpoch})` : ""}`;
  const when = e.startedAt !== null ? ` at ${new Date(e.startedAt).toISOString()}` : "";
  return {
    outcome: "unknown",
    resolvedAt: now,
    downtimeSeconds: null,
    resolution: `outcome unknown: the action was started by ${who}${when}, which stopped leading before its result was recorded, and no new process was seen serving since; not run again`,
  };
}
