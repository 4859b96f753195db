/**
 * The restart cooldown, computed here only: the restart verb refuses a new restart inside it (in
 * SQL, as `requested_at > cooldownStart(now)`), the fleet view shows until when it runs.
 */

/** A restart asked for at `requestedAt` (ms) blocks the next one, without an override, until this time (ms). */
export function cooldownUntil(requestedAt: number, cooldownSeconds: number): number {
  return requestedAt + cooldownSeconds * 1000;
}

/** At `now`, the restarts asked for after this time (ms) are inside their cooldown: the same rule as cooldownUntil(at) > now. */
export function cooldownStart(now: number, cooldownSeconds: number): number {
  return now - cooldownSeconds * 1000;
}
