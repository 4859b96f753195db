/**
 * A read thread of the watcher (lib/watcher/read-pool.ts starts it): asks the backends the pool
 * gives it, each through its own connection and line cache kept here, and answers with what
 * readBackend or probeBackend returned. Measures only: judging, history and storage stay on the
 * watcher's thread.
 */
import { parentPort } from "node:worker_threads";
import { probeBackend, readBackend } from "../check/read";
import { linkFor, type BackendLink } from "./backend-link";
import type { PoolAnswer, PoolAsk } from "./read-pool";

/** Per backend (its key), for the URL it was read at last (a reload that changes the URL starts afresh). */
const kept = new Map<string, BackendLink>();
const inFlight = new Map<number, AbortController>();

const port = parentPort;
if (!port) throw new Error("lib/watcher/read-worker.ts runs as a thread of lib/watcher/read-pool.ts");

port.on("message", (ask: PoolAsk) => {
  if (ask.kind === "abort") {
    inFlight.get(ask.id)?.abort();
    return;
  }
  if (ask.kind === "forget") {
    kept.get(ask.key)?.close();
    kept.delete(ask.key);
    return;
  }
  const link = linkFor(kept.get(ask.key), ask.target.url);
  kept.set(ask.key, link);
  const controller = new AbortController();
  inFlight.set(ask.id, controller);
  const own = { signal: controller.signal, dispatcher: link.client() ?? undefined };
  const asked = ask.kind === "read" ? readBackend(ask.target, { ...ask.options, ...own, lineCache: link.cache, filterMemory: link.filter }) : probeBackend(ask.target, { ...ask.options, ...own });
  void asked
    .then(
      (value): PoolAnswer => ({ id: ask.id, value }),
      (e: unknown): PoolAnswer => ({ id: ask.id, error: (e as Error)?.stack ?? String(e) }),
    )
    .then((answer) => {
      inFlight.delete(ask.id);
      port.postMessage(answer);
    });
});
