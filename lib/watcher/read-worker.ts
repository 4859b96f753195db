/**
 * A read thread of the watcher (lib/watcher/read-pool.ts starts it): asks the backends the pool
 * gives it, each through its own connection and line cache kept here, and answers with what
 * readBackend or probeBackend returned. Measures only: judging, history and storage stay on the
 * watcher's thread.
 */
import { parentPort } from "node:worker_threads";
import type { Client } from "undici";
import { probeBackend, readBackend, type BackendTarget } from "../check/read";
import { LineCache } from "../metrics/prometheus";
import { backendClient } from "../net/http";
import type { PoolAnswer, PoolAsk } from "./read-pool";

/** Per backend, for the URL it was opened for (a reload that changes the URL starts afresh). */
interface Kept {
  url: string;
  cache: LineCache;
  client: Client | null;
}

const kept = new Map<string, Kept>();
const inFlight = new Map<number, AbortController>();

function keptFor(key: string, target: BackendTarget): Kept {
  let k = kept.get(key);
  if (!k || k.url !== target.url) {
    void k?.client?.destroy();
    k = { url: target.url, cache: new LineCache(), client: backendClient(target.url) };
    kept.set(key, k);
  }
  return k;
}

const port = parentPort;
if (!port) throw new Error("lib/watcher/read-worker.ts runs as a thread of lib/watcher/read-pool.ts");

port.on("message", (ask: PoolAsk) => {
  if (ask.kind === "abort") {
    inFlight.get(ask.id)?.abort();
    return;
  }
  if (ask.kind === "forget") {
    void kept.get(ask.key)?.client?.destroy();
    kept.delete(ask.key);
    return;
  }
  const k = keptFor(ask.key, ask.target);
  const controller = new AbortController();
  inFlight.set(ask.id, controller);
  const own = { signal: controller.signal, dispatcher: k.client ?? undefined };
  const asked = ask.kind === "read" ? readBackend(ask.target, { ...ask.options, ...own, lineCache: k.cache }) : probeBackend(ask.target, { ...ask.options, ...own });
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
