/**
 * The process-wide auth state: the key, the sign-in throttle and the comparison gate, on
 * globalThis (Next loads proxy.ts and each route as separate module instances). No Next imports
 * and only a type import of the runtime, so proxy.ts can use it without bundling the watcher.
 */
import type { Runtime } from "../runtime";
import { loadSessionKey } from "./session";
import { ConcurrencyGate, SignInThrottle } from "./throttle";

const KEY = Symbol.for("stepwatch.auth");
export type AuthHolder = { key: Buffer; dbPath: string; throttle: SignInThrottle; gate: ConcurrencyGate };
type Holder = { [KEY]?: AuthHolder };

export function authHolder(rt: Runtime): AuthHolder {
  const g = globalThis as Holder;
  if (!g[KEY] || g[KEY].dbPath !== rt.db.path) {
    g[KEY] = {
      key: loadSessionKey(rt.db.path),
      dbPath: rt.db.path,
      throttle: g[KEY]?.throttle ?? new SignInThrottle(),
      gate: g[KEY]?.gate ?? new ConcurrencyGate(),
    };
  }
  return g[KEY];
}

/** The runtime lib/runtime started (instrumentation awaits it before serving), or null. */
export function startedRuntime(): Promise<Runtime> | null {
  return (globalThis as { [k: symbol]: Promise<Runtime> | undefined })[Symbol.for("stepwatch.runtime")] ?? null;
}
