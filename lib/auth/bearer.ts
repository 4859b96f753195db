/**
 * The Bearer guard: every `Authorization: Bearer` check (API tokens in lib/auth/principal.ts, the
 * /metrics scrape token in lib/api/export/serve.ts) goes through `guardBearer`, so a wrong token
 * costs what a wrong password costs:
 * - it counts against the client address in the sign-in throttle (lib/auth/throttle.ts, the same
 *   per-address count and window a failed sign-in uses), so one address gets `perAddress` guesses
 *   of either kind per window, then 429 with Retry-After (even for a right token: the answer must
 *   not tell a locked-out guesser it guessed right);
 * - it is audited as a bounded summary (lib/auth/audit.ts auditBearerFailure): the first failure
 *   of an address in a minute is a row, the rest are counted into the next one.
 * The check, the comparison and the count happen in one synchronous step, so a burst gets no
 * further than the same guesses sent one by one. A right token costs nothing.
 */
import type { SignInThrottle } from "./throttle";

export type BearerOutcome<T> = { ok: true; value: T } | { ok: false; why: "wrong" } | { ok: false; why: "rate-limited"; retryAfterMs: number };

export interface BearerGuard {
  throttle: SignInThrottle;
  address: string;
  now: number;
  /** Called once per refused or wrong token (auditing decides what to write). */
  onFailure?: (address: string, why: "wrong" | "rate-limited", now: number) => void;
  /**
   * False: judge without counting or auditing (the fast lanes, lib/api/fast-lane.ts, which leave
   * any refusal to Next, whose admission then counts it: one failure is counted once).
   */
  count?: boolean;
}

/** Compare with `match` (constant time, the caller's), unless the address is locked out; count a miss. */
export function guardBearer<T>(match: () => T | null, g: BearerGuard): BearerOutcome<T> {
  const wait = g.throttle.addressRetryAfter(g.address, g.now);
  const count = g.count !== false;
  if (wait !== null) {
    if (count) g.onFailure?.(g.address, "rate-limited", g.now);
    return { ok: false, why: "rate-limited", retryAfterMs: wait };
  }
  const value = match();
  if (value !== null) return { ok: true, value };
  if (!count) return { ok: false, why: "wrong" };
  g.throttle.countAddressFailure(g.address, g.now);
  g.onFailure?.(g.address, "wrong", g.now);
  return { ok: false, why: "wrong" };
}
