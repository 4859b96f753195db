/**
 * The sign-in verb: count the attempt (throttle), wait for a comparison slot (gate), compare the
 * password in constant time with exactly one scrypt, answer failures late. Route handlers only
 * parse input and map the DomainError this throws.
 */
import { DomainError } from "../core/errors";
import type { OperatorConfig } from "../config";
import { burnPasswordCheck, safeEqualStrings, verifyPassword } from "./password";
import { failureDelayMs, nameDelayMs, type ConcurrencyGate, type SignInThrottle } from "./throttle";

export interface SignInInput {
  name: string;
  password: string;
  /** The client's address (lib/net/net-policy clientAddressOf); part of the throttle keys. */
  clientAddress: string;
  now: number;
  /**
   * The id of a device this name signed in from before (lib/auth/device.ts, already verified for
   * this name): counted and queued apart from anonymous attempts, never slowed for the name.
   */
  device?: string | null;
}

export interface SignInDeps {
  operators: OperatorConfig[];
  throttle: SignInThrottle;
  gate: ConcurrencyGate;
  sleep?: (ms: number) => Promise<void>;
  /** Told about every failed attempt (the audit log and the server log). */
  onFailure?: (name: string, clientAddress: string, why: "wrong" | "rate-limited" | "busy") => void;
}

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function rateLimited(retryAfterMs: number, message = "too many failed sign-ins"): DomainError {
  const s = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new DomainError("rate-limited", `${message}; try again in ${s} s`, { retryAfterSeconds: s });
}

/** The operator whose name and password match; throws "unauthenticated" or "rate-limited". */
export async function signIn(input: SignInInput, deps: SignInDeps): Promise<OperatorConfig> {
  const sleep = deps.sleep ?? realSleep;
  const device = input.device ?? null;
  // Counted before any await: a burst is throttled exactly like the same guesses one by one.
  const admitted = device ? deps.throttle.admitDevice(device, input.now) : deps.throttle.admit(input.name, input.clientAddress, input.now);
  if (!admitted.ok) {
    deps.onFailure?.(input.name, input.clientAddress, "rate-limited");
    throw rateLimited(admitted.retryAfterMs, admitted.why === "full" ? "too many sign-ins are being refused right now" : undefined);
  }
  const { ticket } = admitted;
  const release = await deps.gate.acquire(input.name, input.clientAddress, device !== null);
  if (!release) {
    deps.throttle.withdraw(ticket); // never evaluated: it does not count
    deps.onFailure?.(input.name, input.clientAddress, "busy");
    throw rateLimited(5_000, "too many sign-ins at once");
  }
  let operator: OperatorConfig | undefined;
  let ok = false;
  try {
    // A name failing from everywhere is slowed (inside its one slot), never refused; her own device is not.
    const extra = device ? 0 : nameDelayMs(ticket.nameAttempts);
    if (extra > 0) await sleep(extra);
    // Look the name up without an early exit, so timing does not reveal which names exist.
    for (const o of deps.operators) if (safeEqualStrings(o.name, input.name)) operator = o;
    ok = operator ? await verifyPassword(operator.password, input.password) : (await burnPasswordCheck(input.password), false);
  } finally {
    release();
  }
  if (!ok || !operator) {
    deps.onFailure?.(input.name, input.clientAddress, "wrong");
    await sleep(failureDelayMs(ticket.pairAttempts));
    throw new DomainError("unauthenticated", "unknown operator or wrong password");
  }
  deps.throttle.succeed(ticket);
  return operator;
}
