/**
 * Sign-in throttle: failed attempts are counted per (operator name, client address) in a sliding
 * window; past `maxFailures` that pair is refused (HTTP 429) until the window lets old failures go.
 * Every failure is also answered late (`failureDelayMs`), growing with the count, so guessing is
 * slow even below the limit. In memory on purpose: a restart of stepwatch forgets it, which costs an
 * attacker a restart they cannot cause. The clock is passed in.
 */
export interface ThrottleOptions {
  maxFailures: number;
  windowMs: number;
  /** Most distinct keys kept; the oldest are dropped first so a flood cannot grow memory. */
  maxKeys: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = { maxFailures: 5, windowMs: 15 * 60_000, maxKeys: 10_000 };

export class SignInThrottle {
  private failures = new Map<string, number[]>();
  constructor(private readonly opts: ThrottleOptions = DEFAULT_THROTTLE) {}

  private recent(key: string, now: number): number[] {
    const list = (this.failures.get(key) ?? []).filter((t) => now - t < this.opts.windowMs);
    if (list.length) this.failures.set(key, list);
    else this.failures.delete(key);
    return list;
  }

  /** Failures a key may have in the window before it is refused. */
  get maxFailures(): number {
    return this.opts.maxFailures;
  }

  /** null when an attempt may go ahead, else how long (ms) until one will. */
  retryAfterMs(key: string, now: number, maxFailures: number = this.opts.maxFailures): number | null {
    const list = this.recent(key, now);
    if (list.length < maxFailures) return null;
    // The attempt that frees a slot is when the oldest counted failure leaves the window.
    return list[list.length - maxFailures] + this.opts.windowMs - now;
  }

  /** Record a failure; returns how many failures the key has in the window now. */
  fail(key: string, now: number): number {
    const list = this.recent(key, now);
    list.push(now);
    this.failures.delete(key); // re-insert: Map order is the eviction order (oldest first)
    this.failures.set(key, list);
    while (this.failures.size > this.opts.maxKeys) {
      const oldest = this.failures.keys().next().value as string;
      this.failures.delete(oldest);
    }
    return list.length;
  }

  succeed(key: string): void {
    this.failures.delete(key);
  }
}

/** How long to hold back the answer to the n-th failure: 400 ms, 800 ms, ... at most 3 s. */
export function failureDelayMs(failures: number): number {
  return Math.min(400 * Math.max(1, failures), 3_000);
}

/**
 * Failures per operator name from every address together may reach this multiple of the
 * per-address limit. The address is the first X-Forwarded-For entry, which a client reaching
 * stepwatch directly (or through a proxy that appends to the header) chooses itself: without a
 * name-wide count, a new made-up address per attempt would never be throttled.
 */
export const NAME_WIDE_FACTOR = 2;

/** The key that counts one operator name's failures from all addresses. */
export function nameWideKey(name: string): string {
  return `${name.toLowerCase()}\u0000*`;
}

export function throttleKey(name: string, clientAddress: string): string {
  return `${name.toLowerCase()}\u0000${clientAddress}`;
}
