/**
 * Audit lines of what anonymous clients do wrong: failed sign-ins (the name tried, cut to 100
 * characters by the route's schema, and the client address, never the password), sign-ins the
 * throttle refused, wrong or throttled Bearer tokens (never the token). Each goes to the audit log
 * and to the server log, as a bounded summary, because a client that is not signed in must not
 * be able to grow the disk (issue 31: 235 rows a second from many addresses):
 * - per (action, name, address), the first event in a minute is a row; the ones after it in that
 *   minute are counted into that key's next row ("N more since the last line");
 * - at most `budget` such rows a minute in all; past it, events are counted per action and written
 *   as one row when the minute ends ("N more from M addresses, not written one by one").
 * So a guessing attack from any number of addresses writes at most budget + 3 rows a minute, and as
 * many server log lines. The audit log's retention (`audit.retentionDays`) bounds the rest.
 */
import type { Db } from "../../db/types";
import { recordAudit } from "../../db/queries/auth";

type AnonymousAction = "signin.failed" | "signin.refused" | "bearer.failed";

export interface AnonymousEvent {
  action: AnonymousAction;
  /** The name tried; for a Bearer token "(bearer token)". */
  actor: string;
  /** The client address; null on an overflow row, which sums many. */
  address: string | null;
  /** What happened, without the count ("rate-limited", "unknown token"); null for a wrong password. */
  detail: string | null;
  at: number;
}

export interface LedgerOptions {
  intervalMs: number;
  /** Rows of distinct keys written per interval at most. */
  budget: number;
}

export const DEFAULT_LEDGER: LedgerOptions = { intervalMs: 60_000, budget: 20 };

/** Most addresses remembered for an overflow row's "from M addresses" (then "at least M"). */
const OVERFLOW_ADDRESSES = 10_000;

/**
 * The bounded summary of anonymous failures. `write` makes one row (and its log line); `schedule`
 * runs the end-of-interval flush (a timer in the server, called by hand in tests).
 */
export class AnonymousLedger {
  private keys = new Map<string, { at: number; since: number }>();
  private windowStart = -Infinity;
  private written = 0;
  private overflow = new Map<AnonymousAction, { count: number; addresses: Set<string>; actors: Set<string>; first: number }>();
  private flushScheduled = false;

  constructor(
    private readonly write: (e: AnonymousEvent) => void,
    private readonly opts: LedgerOptions = DEFAULT_LEDGER,
    private readonly schedule: (fn: () => void, ms: number) => void = (fn, ms) => void setTimeout(fn, ms).unref?.(),
  ) {}

  note(e: AnonymousEvent): void {
    if (e.at - this.windowStart >= this.opts.intervalMs) this.roll(e.at);
    const key = `${e.action}\u0000${e.actor.toLowerCase()}\u0000${e.address ?? ""}`;
    const s = this.keys.get(key);
    if (s && e.at - s.at < this.opts.intervalMs) {
      s.since++;
      return;
    }
    if (this.written < this.opts.budget) {
      this.written++;
      this.keys.set(key, { at: e.at, since: 0 });
      const more = s?.since ? `${s.since} more since the last line` : null;
      this.write({ ...e, detail: [e.detail, more].filter(Boolean).join("; ") || null });
      return;
    }
    const o = this.overflow.get(e.action) ?? { count: 0, addresses: new Set<string>(), actors: new Set<string>(), first: e.at };
    o.count++;
    if (o.addresses.size < OVERFLOW_ADDRESSES && e.address) o.addresses.add(e.address);
    if (o.actors.size < 2) o.actors.add(e.actor);
    this.overflow.set(e.action, o);
    this.scheduleFlush(e.at);
  }

  /** The overflow of this interval is written when it ends, even if nothing comes after it. */
  private scheduleFlush(now: number): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const ws = this.windowStart;
    this.schedule(() => {
      this.flushScheduled = false;
      if (this.windowStart === ws) this.flush(ws + this.opts.intervalMs);
      else if (this.overflow.size) this.scheduleFlush(ws + this.opts.intervalMs);
    }, Math.max(0, ws + this.opts.intervalMs - now));
  }

  /** A new interval: write what overflowed in the last one, forget keys whose minute is over. */
  private roll(now: number): void {
    this.flush(now);
    this.windowStart = now;
    this.written = 0;
    for (const [k, s] of this.keys) if (now - s.at >= this.opts.intervalMs && s.since === 0) this.keys.delete(k);
    // Keys with a count waiting stay until their next row; never more than a few intervals' budgets.
    if (this.keys.size > 50 * this.opts.budget) this.keys.clear();
  }

  /** Write the overflow rows (one per action) of the interval that ended. */
  flush(now: number): void {
    for (const [action, o] of this.overflow) {
      const from = o.addresses.size >= OVERFLOW_ADDRESSES ? `at least ${o.addresses.size}` : String(o.addresses.size);
      this.write({
        action,
        actor: o.actors.size === 1 ? [...o.actors][0] : "(several names)",
        address: null,
        at: now,
        detail: `${o.count} more from ${from} address(es) since ${new Date(o.first).toISOString()}, not written one by one (at most ${this.opts.budget} lines a minute)`,
      });
    }
    this.overflow.clear();
  }
}

function writeAnonymous(db: Db, e: AnonymousEvent): void {
  const what = e.action === "bearer.failed" ? "" : ` for ${JSON.stringify(e.actor.slice(0, 100))}`;
  console.warn(`stepwatch: ${e.action}${what} from ${e.address ?? "many addresses"}${e.detail ? ` (${e.detail})` : ""}`);
  try {
    recordAudit(db, { at: e.at, actor: e.actor, actorKind: "anonymous", action: e.action, address: e.address, detail: e.detail });
  } catch (err) {
    console.error(`stepwatch: cannot write the audit log: ${(err as Error).message}`);
  }
}

const LEDGER = Symbol.for("stepwatch.audit.anonymous");
type LedgerHolder = { [LEDGER]?: { db: Db; ledger: AnonymousLedger } };

/** The process's ledger for this database (on globalThis: each route is its own module instance). */
function ledgerFor(db: Db): AnonymousLedger {
  const g = globalThis as LedgerHolder;
  if (!g[LEDGER] || g[LEDGER].db !== db) g[LEDGER] = { db, ledger: new AnonymousLedger((e) => writeAnonymous(db, e)) };
  return g[LEDGER].ledger;
}

export function auditSignInFailure(db: Db, name: string, address: string, why: "wrong" | "rate-limited" | "busy", now = Date.now()): void {
  ledgerFor(db).note({ action: why === "wrong" ? "signin.failed" : "signin.refused", actor: name, address, detail: why === "wrong" ? null : why, at: now });
}

/** A wrong or throttled Bearer token (lib/auth/bearer.ts); the token itself is never written. */
export function auditBearerFailure(db: Db, address: string, why: "wrong" | "rate-limited", now = Date.now()): void {
  ledgerFor(db).note({ action: "bearer.failed", actor: "(bearer token)", address, detail: why === "wrong" ? "unknown token" : "rate-limited", at: now });
}

/** The audit line of a session begun or ended by its operator (written by the session route). */
export function auditSession(db: Db, action: "signin.ok" | "signout", operator: string, address: string, now = Date.now()): void {
  recordAudit(db, { at: now, actor: operator, actorKind: "operator", action, address });
}
