/**
 * Sign-in throttle. Attempts are counted BEFORE the slow password comparison (synchronously, in
 * the same tick as the check), so a burst of 500 guesses sent at once gets exactly as far as 500
 * guesses sent one by one: the first few are evaluated, the rest are refused (429) at once. A
 * successful sign-in takes its own attempt back.
 *
 * Three counts, each in a sliding window:
 * - per (operator name, client address): past `perPair` attempts, that pair is refused;
 * - per client address (any names): past `perAddress`, that address is refused, so one client
 *   cannot try many names (or flood random ones);
 * - per operator name (all addresses): never refused (that would let anyone lock the operator out
 *   during the incident they need to act on), only slowed: see `nameDelayMs` and the per-name
 *   concurrency bound in `ConcurrencyGate`.
 * The client address is the socket's, or what a trusted proxy says (lib/net/net-policy.ts), so a
 * client cannot make up a new address per attempt; an IPv6 address counts by its /64
 * (`addressBucket`), which is what one client gets.
 *
 * A device the operator signed in from before (its signed cookie, lib/auth/device.ts) is counted
 * apart (`admitDevice`, OWASP's device cookies): the anonymous counts above do not apply to it, so
 * guesses from everywhere cannot lock her out of her own browser; the device has its own limit, so
 * a stolen device cookie is worth `perDevice` guesses per window.
 *
 * The table is bounded (`maxKeys`). When it is full, expired entries go first, then entries that
 * do not hold a lockout (oldest first); entries that hold a lockout are never evicted. If every
 * entry holds a lockout, new keys are refused (429) until the window frees some: a flood can make
 * stepwatch refuse strangers for a while, never forget who is locked out.
 *
 * In memory on purpose: a restart of stepwatch forgets it, which costs an attacker a restart they
 * cannot cause. The clock is passed in.
 */
import os from "node:os";
import { addressBucket } from "../net/net-policy";

export interface ThrottleOptions {
  /** Attempts of one name from one address in the window before that pair is refused. */
  perPair: number;
  /** Attempts from one address (any names) in the window before it is refused. */
  perAddress: number;
  /** Attempts with one recognised device (any outcome) in the window before it is refused (default 10). */
  perDevice?: number;
  windowMs: number;
  /** Most keys kept (pairs + addresses + names + devices). */
  maxKeys: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = { perPair: 5, perAddress: 20, perDevice: 10, windowMs: 15 * 60_000, maxKeys: 10_000 };

type Kind = "pair" | "address" | "name" | "device";

interface Entry {
  kind: Kind;
  /** Attempt times in the window, oldest first. */
  times: number[];
}

export type AdmitResult =
  | { ok: true; ticket: AttemptTicket }
  | { ok: false; retryAfterMs: number; why: "pair" | "address" | "device" | "full" };

/** What `admit` counted; give it back with `succeed` (a right password) or keep it (a failure). */
export interface AttemptTicket {
  /** The pair's, the address's and the name's keys; a device attempt has its device's key alone. */
  keys: string[];
  device?: boolean;
  at: number;
  /** Failures of this name from all addresses in the window before this attempt. */
  nameAttempts: number;
  /** Attempts of this (name, address) pair in the window, this one included. */
  pairAttempts: number;
}

export class SignInThrottle {
  private entries = new Map<string, Entry>();
  constructor(readonly opts: ThrottleOptions = DEFAULT_THROTTLE) {}

  private limitOf(kind: Kind): number {
    return kind === "pair" ? this.opts.perPair : kind === "address" ? this.opts.perAddress : kind === "device" ? (this.opts.perDevice ?? 10) : Infinity;
  }

  private recent(key: string, now: number): Entry | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    while (e.times.length && now - e.times[0] >= this.opts.windowMs) e.times.shift();
    if (e.times.length === 0) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }

  private locked(e: Entry): boolean {
    return e.times.length >= this.limitOf(e.kind);
  }

  /** How long until `key` may try again, or null when it may now. */
  private retryAfter(key: string, now: number): number | null {
    const e = this.recent(key, now);
    if (!e) return null;
    const limit = this.limitOf(e.kind);
    if (e.times.length < limit) return null;
    return e.times[e.times.length - limit] + this.opts.windowMs - now;
  }

  /** Room for `n` new keys: drop expired entries, then unlocked ones oldest first; never a lockout. */
  private makeRoom(n: number, now: number): boolean {
    if (this.entries.size + n <= this.opts.maxKeys) return true;
    for (const key of [...this.entries.keys()]) this.recent(key, now);
    if (this.entries.size + n <= this.opts.maxKeys) return true;
    for (const [key, e] of this.entries) {
      if (this.entries.size + n <= this.opts.maxKeys) break;
      if (!this.locked(e)) this.entries.delete(key);
    }
    return this.entries.size + n <= this.opts.maxKeys;
  }

  /**
   * Check and count one attempt, in one synchronous step. Refused: how long to wait. Admitted: a
   * ticket; the attempt stays counted unless `succeed(ticket)` is called.
   */
  admit(name: string, address: string, now: number): AdmitResult {
    const pk = pairKey(name, address);
    const ak = addressKey(address);
    const nk = nameKey(name);
    const pairRetry = this.retryAfter(pk, now);
    if (pairRetry !== null) return { ok: false, retryAfterMs: pairRetry, why: "pair" };
    const addrRetry = this.retryAfter(ak, now);
    if (addrRetry !== null) return { ok: false, retryAfterMs: addrRetry, why: "address" };
    const missing = [pk, ak, nk].filter((k) => !this.entries.has(k)).length;
    if (!this.makeRoom(missing, now)) {
      // Every entry holds a lockout: refuse strangers until the window frees one.
      let soonest = this.opts.windowMs;
      for (const e of this.entries.values()) soonest = Math.min(soonest, e.times[0] + this.opts.windowMs - now);
      return { ok: false, retryAfterMs: Math.max(1000, soonest), why: "full" };
    }
    const nameAttempts = this.entries.get(nk)?.times.length ?? 0;
    for (const [key, kind] of [[pk, "pair"], [ak, "address"], [nk, "name"]] as const) {
      const e = this.entries.get(key) ?? { kind, times: [] };
      e.times.push(now);
      this.entries.delete(key); // re-insert: Map order is the eviction order (least recently tried first)
      this.entries.set(key, e);
    }
    return { ok: true, ticket: { keys: [pk, ak, nk], at: now, nameAttempts, pairAttempts: this.entries.get(pk)!.times.length } };
  }

  /**
   * Check and count one attempt from a recognised device (its id from the verified cookie): only
   * the device's own count applies, never the pair, address or name counts of anonymous guessers.
   */
  admitDevice(deviceId: string, now: number): AdmitResult {
    const dk = deviceKey(deviceId);
    const retry = this.retryAfter(dk, now);
    if (retry !== null) return { ok: false, retryAfterMs: retry, why: "device" };
    if (!this.entries.has(dk) && !this.makeRoom(1, now)) return { ok: false, retryAfterMs: 1000, why: "full" };
    const e = this.entries.get(dk) ?? { kind: "device" as const, times: [] };
    e.times.push(now);
    this.entries.delete(dk);
    this.entries.set(dk, e);
    return { ok: true, ticket: { keys: [dk], device: true, at: now, nameAttempts: 0, pairAttempts: e.times.length } };
  }

  /**
   * How long until this address may try again (its per-address count is full), or null. For a
   * check that is not a sign-in (a Bearer token, lib/auth/bearer.ts): only the address is counted.
   */
  addressRetryAfter(address: string, now: number): number | null {
    return this.retryAfter(addressKey(address), now);
  }

  /** Count one failed non-sign-in attempt (a wrong Bearer token) against the address. */
  countAddressFailure(address: string, now: number): void {
    const ak = addressKey(address);
    if (!this.entries.has(ak) && !this.makeRoom(1, now)) return; // full of lockouts: strangers are refused by admit anyway
    const e = this.entries.get(ak) ?? { kind: "address" as const, times: [] };
    e.times.push(now);
    this.entries.delete(ak);
    this.entries.set(ak, e);
  }

  /** The attempt was a right password: it is taken back, and the pair's earlier failures forgotten. */
  succeed(ticket: AttemptTicket): void {
    if (ticket.device) return this.withdraw(ticket);
    const [pk, ak, nk] = ticket.keys;
    this.entries.delete(pk);
    for (const key of [ak, nk]) {
      const e = this.entries.get(key);
      if (!e) continue;
      const i = e.times.lastIndexOf(ticket.at);
      if (i >= 0) e.times.splice(i, 1);
      if (e.times.length === 0) this.entries.delete(key);
    }
  }

  /** The attempt was never evaluated (refused for being one too many at once): take it back. */
  withdraw(ticket: AttemptTicket): void {
    for (const key of ticket.keys) {
      const e = this.entries.get(key);
      if (!e) continue;
      const i = e.times.lastIndexOf(ticket.at);
      if (i >= 0) e.times.splice(i, 1);
      if (e.times.length === 0) this.entries.delete(key);
    }
  }

  /** Keys held now (for tests and the bound). */
  get size(): number {
    return this.entries.size;
  }
}

/** How long to hold back the answer to the n-th failure of a pair: 400 ms, 800 ms, ... at most 3 s. */
export function failureDelayMs(failures: number): number {
  return Math.min(400 * Math.max(1, failures), 3_000);
}

/**
 * Extra time spent before comparing a password for a name that has failed often from anywhere,
 * while holding that name's one comparison slot: a name under attack from many addresses is
 * slowed to about one guess per (scrypt + this), and the operator's own attempt is slowed as
 * much, never refused. 0 below 5 failures, then 100 ms more per failure, at most 1 s.
 */
export function nameDelayMs(nameFailures: number): number {
  return nameFailures < 5 ? 0 : Math.min(100 * (nameFailures - 4), 1_000);
}

export function pairKey(name: string, clientAddress: string): string {
  return `p\u0000${name.toLowerCase()}\u0000${addressBucket(clientAddress)}`;
}
export function addressKey(clientAddress: string): string {
  return `a\u0000${addressBucket(clientAddress)}`;
}
export function deviceKey(deviceId: string): string {
  return `d\u0000${deviceId}`;
}
export function nameKey(name: string): string {
  return `n\u0000${name.toLowerCase()}`;
}

/**
 * Bounds how many password comparisons run at once: per name, per address and overall (scrypt is
 * ~32 MB and tens of ms of CPU each; a flood of random names would otherwise burn every core).
 * Waiters queue FIFO up to `maxQueued`, and at most `perNameQueued` of them for one name and
 * `perAddressQueued` for one address (its /64 for IPv6): the guessers of one name, from however
 * many addresses, cannot take every place, so another operator still gets one. Past that, or after
 * `maxWaitMs`, `acquire` gives up (null) and the caller answers "try again shortly".
 *
 * A recognised device (lib/auth/device.ts) waits in its own short queue that is served first and
 * needs only a free comparison slot, not the name's: the guessers of her name hold that one slot
 * in turn, so behind them she would wait as long as they keep it busy.
 */
export interface GateOptions {
  perName: number;
  perAddress: number;
  overall: number;
  maxQueued: number;
  /** Waiters for one name at most (default: maxQueued, no cap of its own). */
  perNameQueued?: number;
  /** Waiters from one address at most (default: maxQueued). */
  perAddressQueued?: number;
  /** Recognised devices waiting at most, in their own queue (default 16). */
  priorityQueued?: number;
  maxWaitMs: number;
}

/**
 * Comparisons at once overall, from the machine: one per core but one (the event loop, polls and
 * the dashboard keep a core), at least 2, and at most the libuv thread pool less one (scrypt runs
 * there, and so do dns.lookup and file reads: a pool full of scrypt would stall every poll that
 * resolves a host name). A 2-core box gets 2, as before; a 16-core one with the default pool of 4
 * gets 3, and with UV_THREADPOOL_SIZE=16, 15.
 */
export function comparisonSlots(cores: number, threadPool: number): number {
  const c = Number.isFinite(cores) && cores > 0 ? Math.floor(cores) : 1;
  const pool = Number.isFinite(threadPool) && threadPool > 0 ? Math.floor(threadPool) : 4;
  return Math.max(2, Math.min(c - 1, pool - 1));
}

/** This process's gate: sized by `comparisonSlots` from its cores and its libuv pool (default 4). */
export function defaultGate(
  cores: number = os.availableParallelism(),
  threadPool: number = Number(process.env.UV_THREADPOOL_SIZE) || 4,
): GateOptions {
  return {
    perName: 1,
    perAddress: 1,
    overall: comparisonSlots(cores, threadPool),
    maxQueued: 64,
    perNameQueued: 16,
    // As many as one address may try in a window (DEFAULT_THROTTLE.perAddress): a burst's admitted
    // guesses all wait, so it is evaluated exactly like the same guesses one by one; one address
    // still holds at most 20 of the 64 places.
    perAddressQueued: DEFAULT_THROTTLE.perAddress,
    priorityQueued: 16,
    maxWaitMs: 20_000,
  };
}

export const DEFAULT_GATE: GateOptions = defaultGate();

interface Waiter {
  name: string;
  address: string;
  grant: (release: () => void) => void;
}

const bump = (m: Map<string, number>, k: string, by: number) => {
  const n = (m.get(k) ?? 0) + by;
  if (n) m.set(k, n);
  else m.delete(k);
};

export class ConcurrencyGate {
  private byName = new Map<string, number>();
  private byAddress = new Map<string, number>();
  private queuedByName = new Map<string, number>();
  private queuedByAddress = new Map<string, number>();
  private total = 0;
  private queue: Waiter[] = [];
  private priority: Waiter[] = [];
  readonly opts: Required<GateOptions>;
  constructor(opts: GateOptions = DEFAULT_GATE) {
    this.opts = { perNameQueued: opts.maxQueued, perAddressQueued: opts.maxQueued, priorityQueued: 16, ...opts };
  }

  private fits(name: string, address: string): boolean {
    return (
      this.total < this.opts.overall &&
      (this.byName.get(name) ?? 0) < this.opts.perName &&
      (this.byAddress.get(address) ?? 0) < this.opts.perAddress
    );
  }

  private take(name: string, address: string): () => void {
    this.total++;
    bump(this.byName, name, 1);
    bump(this.byAddress, address, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      bump(this.byName, name, -1);
      bump(this.byAddress, address, -1);
      this.pump();
    };
  }

  private unqueue(w: Waiter, from: Waiter[]): boolean {
    const i = from.indexOf(w);
    if (i < 0) return false;
    from.splice(i, 1);
    if (from === this.queue) {
      bump(this.queuedByName, w.name, -1);
      bump(this.queuedByAddress, w.address, -1);
    }
    return true;
  }

  private pump(): void {
    // Recognised devices first: they need a free slot only.
    while (this.priority.length && this.total < this.opts.overall) {
      const w = this.priority[0];
      this.unqueue(w, this.priority);
      w.grant(this.take(w.name, w.address));
    }
    for (let i = 0; i < this.queue.length && this.total < this.opts.overall; ) {
      const w = this.queue[i];
      if (this.fits(w.name, w.address)) {
        this.unqueue(w, this.queue);
        w.grant(this.take(w.name, w.address));
      } else i++;
    }
  }

  private wait(w: Omit<Waiter, "grant">, into: Waiter[]): Promise<(() => void) | null> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        ...w,
        grant: (release) => {
          clearTimeout(timer);
          resolve(release);
        },
      };
      const timer = setTimeout(() => {
        this.unqueue(waiter, into);
        resolve(null);
      }, this.opts.maxWaitMs);
      into.push(waiter);
      if (into === this.queue) {
        bump(this.queuedByName, w.name, 1);
        bump(this.queuedByAddress, w.address, 1);
      }
      // A free slot that the waiters ahead cannot use (their name's slot is busy) is this one's now.
      this.pump();
    });
  }

  /**
   * A release function once a slot is held, or null when a queue (all, this name's, this
   * address's) is full or the wait too long. `trusted`: a recognised device (its own queue, first).
   */
  acquire(rawName: string, rawAddress: string, trusted = false): Promise<(() => void) | null> {
    const name = rawName.toLowerCase();
    const address = addressBucket(rawAddress);
    if (trusted) {
      if (this.priority.length === 0 && this.total < this.opts.overall) return Promise.resolve(this.take(name, address));
      if (this.priority.length >= this.opts.priorityQueued) return Promise.resolve(null);
      return this.wait({ name, address }, this.priority);
    }
    if (this.priority.length === 0 && this.queue.length === 0 && this.fits(name, address)) return Promise.resolve(this.take(name, address));
    if (
      this.queue.length >= this.opts.maxQueued ||
      (this.queuedByName.get(name) ?? 0) >= this.opts.perNameQueued ||
      (this.queuedByAddress.get(address) ?? 0) >= this.opts.perAddressQueued
    )
      return Promise.resolve(null);
    return this.wait({ name, address }, this.queue);
  }

  /** Comparisons running and waiting now (for tests). */
  get load(): { running: number; queued: number } {
    return { running: this.total, queued: this.queue.length + this.priority.length };
  }
}
