/**
 * Read threads: the watcher's requests to its backends (HTTP and parsing /metrics, about 60% of
 * its CPU per read) spread over worker threads, so a fleet too large for one core is still read on
 * time. Each backend is asked by one thread, always the same one: its connection and line cache
 * live there. What comes back is the Reading (or the probe's result); the watcher's thread judges,
 * keeps the history and stores, as without threads.
 */
import { Worker } from "node:worker_threads";
import type { Reader } from "../check/observe";
import { probeBackend, readBackend, type BackendTarget, type ProbeOptions, type ReadOptions } from "../check/read";
import type { ProbeResult, Reading } from "../core/types";

/** The read options that cross to a thread (the rest are the thread's own: connection, line cache, signal). */
const READ_KEYS = ["timeoutMs", "probeTimeoutMs", "maxBytes", "engineHint", "histogramsEveryMs", "keepBody"] as const satisfies ReadonlyArray<keyof ReadOptions>;
const PROBE_KEYS = [...READ_KEYS, "model", "engine", "learned"] as const satisfies ReadonlyArray<keyof ProbeOptions>;
export type ThreadReadOptions = Pick<ReadOptions, (typeof READ_KEYS)[number]>;
export type ThreadProbeOptions = Pick<ProbeOptions, (typeof PROBE_KEYS)[number]>;

/** What the pool asks a read thread (lib/watcher/read-worker.ts). */
export type PoolAsk =
  | { kind: "read"; id: number; key: string; target: BackendTarget; options: ThreadReadOptions }
  | { kind: "probe"; id: number; key: string; target: BackendTarget; options: ThreadProbeOptions }
  | { kind: "abort"; id: number }
  | { kind: "forget"; key: string };
export type PoolAnswer = { id: number; value: Reading | ProbeResult } | { id: number; error: string };

interface Thread {
  worker: Worker;
  pending: Map<number, { resolve(v: Reading | ProbeResult): void; reject(e: Error): void }>;
}

export interface ReadPool {
  readonly threads: number;
  /** The threads now running (null: one that stopped, started again by its next read); for tests and logs. */
  workers(): ReadonlyArray<Worker | null>;
  /** The Reader of one backend (`key`, its id): its reads and probes go to its thread. */
  readerOf(key: string): Reader;
  /** `key` is gone (removed by a reload, its loop ended): its thread closes its connection and drops its cache. */
  forget(key: string): void;
  close(): Promise<void>;
}

function pick<T extends object, K extends keyof T>(o: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** Starts one read thread (`name` is the thread's name, seen in debuggers and profiles). */
export type SpawnReadThread = (name: string) => Worker;

/**
 * The read thread of lib/watcher/read-worker.ts. The `new Worker(new URL(<literal>,
 * import.meta.url))` form is the one Next's bundler compiles into a chunk of its own (a Worker of
 * a computed path made it trace every file the expression could name, for minutes). Outside Next
 * (tests, tsx) the thread runs the TypeScript source and needs tsx's require hook: Node 20 runs no
 * `--import` loader for a worker's entry. (Under Next, import.meta.url still names the .ts source.)
 */
export const spawnReadWorker: SpawnReadThread = (name) =>
  new Worker(new URL("./read-worker.ts", import.meta.url), { name, execArgv: process.env.NEXT_RUNTIME ? undefined : ["--require", "tsx/cjs"] });

/**
 * A thread that dies this many times in a row before its first answer cannot start here (a build
 * without its chunk, a loader missing): the pool then reads on the watcher's thread, as with
 * readThreads 0, and says so once.
 */
export const MAX_START_FAILURES = 3;

export function startReadPool(count: number, log: (m: string) => void, spawnThread: SpawnReadThread = spawnReadWorker): ReadPool {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`read threads: ${count} is not a whole number from 1`);
  const threads: Array<Thread | null> = [];
  const owner = new Map<string, number>();
  let assigned = 0;
  let nextId = 1;
  let closing = false;
  let startFailures = 0;
  let broken = false;

  /** One more thread that ended before it answered anything; past MAX_START_FAILURES the pool reads here. */
  const startFailed = (why: string) => {
    if (++startFailures >= MAX_START_FAILURES && !broken) {
      broken = true;
      log(`stepwatch: read threads cannot start here (${why}, ${startFailures} times in a row): reading on the watcher's own thread from now on`);
      // Every thread runs the same script: any still up is stopped, its backends read here too.
      for (const t of threads) void t?.worker.terminate();
      return true;
    }
    return broken;
  };

  /** A new thread for slot `i`, or null (counted as a failed start) if one cannot even be created. */
  const trySpawn = (i: number): Thread | null => {
    try {
      return spawn(i);
    } catch (e) {
      if (!startFailed((e as Error)?.message ?? String(e))) log(`stepwatch: read thread ${i} could not start (${(e as Error)?.message ?? String(e)})`);
      return null;
    }
  };

  const spawn = (i: number): Thread => {
    const worker = spawnThread(`stepwatch-read-${i}`);
    // Its requests keep it busy, not the process alive: the watcher's own loops do that.
    worker.unref();
    const t: Thread = { worker, pending: new Map() };
    let answered = false;
    worker.on("message", (a: PoolAnswer) => {
      if (!answered) {
        answered = true;
        startFailures = 0;
      }
      const p = t.pending.get(a.id);
      if (!p) return;
      t.pending.delete(a.id);
      if ("value" in a) p.resolve(a.value);
      else p.reject(new Error(`read thread ${i}: ${a.error}`));
    });
    let failed = false;
    const fail = (why: string) => {
      if (failed) return;
      failed = true;
      if (threads[i] === t) threads[i] = null;
      for (const p of t.pending.values()) p.reject(new Error(`read thread ${i} stopped (${why}): this request's answer is lost, and nothing is judged from it`));
      t.pending.clear();
      if (closing) return;
      if (answered ? !broken : !startFailed(why)) log(`stepwatch: read thread ${i} stopped (${why}); a new one starts with the next read`);
    };
    worker.on("error", (e) => fail(e?.message ?? String(e)));
    worker.on("exit", (code) => fail(`exit code ${code}`));
    return t;
  };
  for (let i = 0; i < count; i++) threads.push(trySpawn(i));

  /** Asks `key`'s thread; `here` is the same question on this thread, once threads cannot start. */
  function ask<V extends Reading | ProbeResult>(key: string, make: (id: number) => PoolAsk, signal: AbortSignal | undefined, here: () => Promise<V>): Promise<V> {
    // The watcher closes the pool once its loops ended: nothing should ask after that.
    if (closing) return Promise.reject(new Error("the read threads are closed (the watcher stopped)"));
    if (broken) return here();
    let i = owner.get(key);
    if (i === undefined) {
      i = assigned++ % count;
      owner.set(key, i);
    }
    const t = threads[i] ?? (threads[i] = trySpawn(i));
    if (t === null) return broken ? here() : Promise.reject(new Error(`read thread ${i} could not start: this read is lost, and nothing is judged from it`));
    const id = nextId++;
    return new Promise<V>((resolve, reject) => {
      const onAbort = () => t.worker.postMessage({ kind: "abort", id } satisfies PoolAsk);
      const settle = () => signal?.removeEventListener("abort", onAbort);
      t.pending.set(id, {
        resolve: (v) => {
          settle();
          resolve(v as V);
        },
        reject: (e) => {
          settle();
          reject(e);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      t.worker.postMessage(make(id));
    });
  }

  return {
    threads: count,
    workers: () => threads.map((t) => t?.worker ?? null),
    readerOf(key) {
      return {
        read: (target, opts) => ask<Reading>(key, (id) => ({ kind: "read", id, key, target, options: pick(opts, READ_KEYS) }), opts.signal, () => readBackend(target, opts)),
        probe: (target, opts) => ask<ProbeResult>(key, (id) => ({ kind: "probe", id, key, target, options: pick(opts, PROBE_KEYS) }), opts.signal, () => probeBackend(target, opts)),
      };
    },
    forget(key) {
      const i = owner.get(key);
      if (i === undefined) return;
      owner.delete(key);
      threads[i]?.worker.postMessage({ kind: "forget", key } satisfies PoolAsk);
    },
    async close() {
      closing = true;
      await Promise.all(threads.map((t) => t?.worker.terminate()));
    },
  };
}
