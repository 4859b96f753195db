/**
 * The sign-in verb: check the throttle, verify the password in constant time, answer failures late.
 * Route handlers only parse input and map the DomainError this throws.
 */
import { DomainError } from "../errors";
import type { OperatorConfig } from "../config";
import { burnPasswordCheck, safeEqualStrings, verifyPassword } from "./password";
import { SESSION_TTL_MS, signSession, type Session } from "./session";
import { NAME_WIDE_FACTOR, failureDelayMs, nameWideKey, throttleKey, type SignInThrottle } from "./throttle";

export interface SignInInput {
  name: string;
  password: string;
  /** The client's address as the server saw it; part of the throttle key. */
  clientAddress: string;
  now: number;
}

export interface SignInDeps {
  operators: OperatorConfig[];
  throttle: SignInThrottle;
  key: Buffer;
  sleep?: (ms: number) => Promise<void>;
}

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function signIn(input: SignInInput, deps: SignInDeps): Promise<{ token: string; session: Session }> {
  const sleep = deps.sleep ?? realSleep;
  const tkey = throttleKey(input.name, input.clientAddress);
  const nkey = nameWideKey(input.name);
  const perAddress = deps.throttle.retryAfterMs(tkey, input.now);
  const nameWide = deps.throttle.retryAfterMs(nkey, input.now, deps.throttle.maxFailures * NAME_WIDE_FACTOR);
  const retry = perAddress === null ? nameWide : nameWide === null ? perAddress : Math.max(perAddress, nameWide);
  if (retry !== null) {
    throw new DomainError("rate-limited", `too many failed sign-ins; try again in ${Math.ceil(retry / 1000)} s`, {
      retryAfterSeconds: Math.ceil(retry / 1000),
    });
  }
  // Look the name up without an early exit, so timing does not reveal which names exist.
  let operator: OperatorConfig | undefined;
  for (const o of deps.operators) if (safeEqualStrings(o.name, input.name)) operator = o;
  const ok = operator ? await verifyPassword(operator.password, input.password) : (await burnPasswordCheck(input.password), false);
  if (!ok || !operator) {
    deps.throttle.fail(nkey, input.now);
    const failures = deps.throttle.fail(tkey, input.now);
    await sleep(failureDelayMs(failures));
    throw new DomainError("unauthenticated", "unknown operator or wrong password");
  }
  deps.throttle.succeed(tkey);
  const session = { name: operator.name, expiresAt: input.now + SESSION_TTL_MS };
  return { token: signSession(session, deps.key), session };
}
