/**
 * The process-wide auth state: the key, the sign-in throttle and the comparison gate, on
 * globalThis (Next loads proxy.ts and each route as separate module instances). No Next imports,
 * so proxy.ts can use it without bundling the watcher.
 */
import { loadSessionKey } from "./session";
import { ConcurrencyGate, SignInThrottle } from "./throttle";

const KEY = Symbol.for("stepwatch.auth");
export type AuthHolder = { key: Buffer; dbPath: string; throttle: SignInThrottle; gate: ConcurrencyGate };
type Holder = { [KEY]?: AuthHolder };

export function authHolder(dbPath: string): AuthHolder {
  const g = globalThis as Holder;
  if (!g[KEY] || g[KEY].dbPath !== dbPath) {
    g[KEY] = {
      key: loadSessionKey(dbPath),
      dbPath,
      throttle: g[KEY]?.throttle ?? new SignInThrottle(),
      gate: g[KEY]?.gate ?? new ConcurrencyGate(),
    };
  }
  return g[KEY];
}
