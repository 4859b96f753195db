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
 * The client address is the socket's, or what a trusted proxy says (lib/auth/client-address.ts),
 * so a client cannot make up a new address per attempt.
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

export interface ThrottleOptions {
  /** Attempts of one name from one address in the window before that pair is refused. */
  perPair: number;
  /** Attempts from one address (any names) in the window before it is refused. */
  perAddress: number;
  windowMs: number;
  /** Most keys kept (pairs + addresses + names). */
  maxKeys: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = { perPair: 5, perAddress: 20, windowMs: 15 * 60_000, maxKeys: 10_000 };

type Kind = "pair" | "address" | "name";

interface Entry {
  kind: Kind;
  /** Attempt times in the window, oldest first. */
  times: number[];
}

export type AdmitResult =
  | { ok: true; ticket: AttemptTicket }
  | { ok: false; retryAfterMs: number; why: "pair" | "address" | "full" };

/** What `admit` counted; give it back with `succeed` (a right password) or keep it (a failure). */
export interface AttemptTicket {
  keys: string[];
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
    return kind === "pair" ? this.opts.perPair : kind === "address" ? this.opts.perAddress : Infinity;
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
  return `p\u0000${name.toLowerCase()}\u0000${clientAddress}`;
}
export function addressKey(clientAddress: string): string {
  return `a\u0000${clientAddress}`;
}
export function nameKey(name: string): string {
  return `n\u0000${name.toLowerCase()}`;
}

/**
 * Bounds how many password comparisons run at once: per name, per address and overall (scrypt is
 * ~32 MB and tens of ms of CPU each; a flood of random names would otherwise burn every core).
 * Waiters queue FIFO up to `maxQueued`; past that, or after `maxWaitMs`, `acquire` gives up
 * (null) and the caller answers "try again shortly".
 */
export interface GateOptions {
  perName: number;
  perAddress: number;
  overall: number;
  maxQueued: number;
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
  return { perName: 1, perAddress: 1, overall: comparisonSlots(cores, threadPool), maxQueued: 64, maxWaitMs: 20_000 };
}

export const DEFAULT_GATE: GateOptions = defaultGate();

interface Waiter {
  name: string;
  address: string;
  grant: (release: () => void) => void;
}

export class ConcurrencyGate {
  private byName = new Map<string, number>();
  private byAddress = new Map<string, number>();
  private total = 0;
  private queue: Waiter[] = [];
  constructor(readonly opts: GateOptions = DEFAULT_GATE) {}

  private fits(name: string, address: string): boolean {
    return (
      this.total < this.opts.overall &&
      (this.byName.get(name) ?? 0) < this.opts.perName &&
      (this.byAddress.get(address) ?? 0) < this.opts.perAddress
    );
  }

  private take(name: string, address: string): () => void {
    this.total++;
    this.byName.set(name, (this.byName.get(name) ?? 0) + 1);
    this.byAddress.set(address, (this.byAddress.get(address) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const n = this.byName.get(name)! - 1;
      if (n) this.byName.set(name, n);
      else this.byName.delete(name);
      const a = this.byAddress.get(address)! - 1;
      if (a) this.byAddress.set(address, a);
      else this.byAddress.delete(address);
      this.pump();
    };
  }

  private pump(): void {
    for (let i = 0; i < this.queue.length; ) {
      const w = this.queue[i];
      if (this.fits(w.name, w.address)) {
        this.queue.splice(i, 1);
        w.grant(this.take(w.name, w.address));
      } else i++;
    }
  }

  /** A release function once a slot is held, or null when the queue is full or the wait too long. */
  acquire(rawName: string, address: string): Promise<(() => void) | null> {
    const name = rawName.toLowerCase();
    if (this.queue.length === 0 && this.fits(name, address)) return Promise.resolve(this.take(name, address));
    if (this.queue.length >= this.opts.maxQueued) return Promise.resolve(null);
    return new Promise((resolve) => {
      const w: Waiter = {
        name,
        address,
        grant: (release) => {
          clearTimeout(timer);
          resolve(release);
        },
      };
      const timer = setTimeout(() => {
        const i = this.queue.indexOf(w);
        if (i >= 0) this.queue.splice(i, 1);
        resolve(null);
      }, this.opts.maxWaitMs);
      this.queue.push(w);
    });
  }

  /** Comparisons running and waiting now (for tests). */
  get load(): { running: number; queued: number } {
    return { running: this.total, queued: this.queue.length };
  }
}
