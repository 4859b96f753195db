/**
 * Replays the incident's load over real HTTP against simulator URLs: a batch job that keeps 2 to 4
 * long requests busy on a server for minutes at a time, at times fills it to its limit of 12, and
 * sometimes pauses (so the server goes idle and a probe is allowed).
 *
 * Each target follows the same cycle of phases, shifted by an offset so the servers differ and
 * still overlap at 12 for a while ("both at their limit" in the incident). A phase sets how many
 * requests the job wants in flight; when it drops, surplus workers finish their current request
 * first, as a batch job does. Failed requests (refused during a restart, 500 when it began) are
 * retried after a pause. Timers exist only at phase changes and retries, never per token.
 */
import { setMaxListeners } from "node:events";
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";

export interface LoadPhase {
  /** Wall seconds at timeScale 1. */
  seconds: number;
  /** Requests the batch job keeps in flight on one server. */
  concurrency: number;
}

/** The incident's day, compressed into a 16-minute cycle. */
export const INCIDENT_SCHEDULE: readonly LoadPhase[] = [
  { seconds: 240, concurrency: 3 },
  { seconds: 120, concurrency: 2 },
  { seconds: 180, concurrency: 4 },
  { seconds: 150, concurrency: 12 },
  { seconds: 180, concurrency: 3 },
  { seconds: 90, concurrency: 0 },
];

export interface IncidentLoadOptions {
  /** Simulator (or proxy) base URLs. */
  targets: string[];
  /** Divides every phase length and retry pause (match the simulators' timeScale). */
  timeScale?: number;
  schedule?: readonly LoadPhase[];
  /** Where in the cycle each target starts (seconds at timeScale 1); default i * 60. */
  offsetsSeconds?: number[];
  seed?: number;
  model?: string;
  apiKey?: string;
  /** Prompt tokens per request, [min, max]. */
  promptTokens?: [number, number];
  /** max_tokens per request, [min, max]: 300-1200 output tokens take minutes at ~9 tok/s. */
  maxTokens?: [number, number];
  /** Every Nth request carries a long prompt (chunked prefill over many steps); 0 = never. */
  longPromptEvery?: number;
  longPromptTokens?: number;
  /** Pause before retrying a failed request (seconds at timeScale 1). */
  retrySeconds?: number;
}

export interface LoadStats {
  sent: number;
  succeeded: number;
  failed: number;
  inFlight: number;
  /** Requests the job currently wants in flight, per target. */
  desired: number[];
}

export interface IncidentLoad {
  stats(): LoadStats;
  stop(): Promise<void>;
}

/** Small deterministic PRNG (mulberry32): the same seed replays the same requests. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Which phase a point of the cycle falls in, and how long that phase still lasts (seconds). */
export function phaseAt(schedule: readonly LoadPhase[], offsetSeconds: number): { index: number; remaining: number } {
  const cycle = schedule.reduce((s, p) => s + p.seconds, 0);
  if (!(cycle > 0)) throw new Error("load schedule must have a positive total length");
  let pos = ((offsetSeconds % cycle) + cycle) % cycle;
  for (let i = 0; i < schedule.length; i++) {
    if (pos < schedule[i].seconds) return { index: i, remaining: schedule[i].seconds - pos };
    pos -= schedule[i].seconds;
  }
  return { index: 0, remaining: schedule[0].seconds };
}

export function startIncidentLoad(opts: IncidentLoadOptions): IncidentLoad {
  const scale = opts.timeScale ?? 1;
  if (!(scale > 0)) throw new Error(`timeScale must be > 0, got ${scale}`);
  const schedule = opts.schedule ?? INCIDENT_SCHEDULE;
  const [pMin, pMax] = opts.promptTokens ?? [500, 6000];
  const [mMin, mMax] = opts.maxTokens ?? [300, 1200];
  const longEvery = opts.longPromptEvery ?? 10;
  const longTokens = opts.longPromptTokens ?? 24_000;
  const retryMs = ((opts.retrySeconds ?? 5) * 1000) / scale;
  const random = seededRandom(opts.seed ?? 1);
  const agent = new http.Agent({ keepAlive: true });
  const controller = new AbortController();
  const timers = new Set<NodeJS.Timeout>();
  const workers = new Set<Promise<void>>();
  const targets = opts.targets.map((t) => t.replace(/\/+$/, ""));
  // Every request and every retry wait listens on this one signal until it ends, and a target has
  // at most its schedule's highest concurrency of workers. A request lets go of its listener when
  // Node sees its stream end, which can be after its worker moved on to a retry wait or its next
  // request (seen once as 25 listeners at 2 targets x 12), so a worker may briefly hold two. Node
  // warns past 10, which 12 long requests at the incident's peak are (no leak: each is removed).
  const mostWorkers = targets.length * Math.max(0, ...schedule.map((p) => p.concurrency));
  setMaxListeners(Math.max(10, 2 * mostWorkers), controller.signal);
  const desired = targets.map(() => 0);
  const slots = targets.map(() => new Set<number>());
  const stats = { sent: 0, succeeded: 0, failed: 0, inFlight: 0 };
  let requestNo = 0;

  const between = (lo: number, hi: number) => Math.round(lo + random() * Math.max(0, hi - lo));

  function nextBody(): string {
    requestNo++;
    const long = longEvery > 0 && requestNo % longEvery === 0;
    const body: Record<string, unknown> = {
      prompt: `Batch item ${requestNo}: summarise the attached document.`,
      max_tokens: between(mMin, mMax),
      sim_prompt_tokens: long ? longTokens : between(pMin, pMax),
    };
    if (opts.model) body.model = opts.model;
    return JSON.stringify(body);
  }

  /** One completion over HTTP; true when it was answered 200. Never throws. */
  function send(target: string): Promise<boolean> {
    return new Promise((resolve) => {
      const body = nextBody();
      const headers: Record<string, string> = { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) };
      if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
      stats.sent++;
      stats.inFlight++;
      let settled = false;
      const settle = (ok: boolean) => {
        if (settled) return;
        settled = true;
        stats.inFlight--;
        if (ok) stats.succeeded++;
        else stats.failed++;
        resolve(ok);
      };
      const req = http.request(`${target}/v1/completions`, { method: "POST", headers, agent, signal: controller.signal }, (res) => {
        res.resume();
        res.on("end", () => settle(res.statusCode === 200));
        res.on("error", () => settle(false));
        res.on("close", () => settle(false));
      });
      req.on("error", () => settle(false));
      req.end(body);
    });
  }

  async function worker(t: number, slot: number): Promise<void> {
    try {
      while (!controller.signal.aborted && slot < desired[t]) {
        const ok = await send(targets[t]);
        if (!ok && !controller.signal.aborted) await sleep(retryMs, undefined, { signal: controller.signal, ref: false });
      }
    } catch {
      // aborted by stop()
    } finally {
      slots[t].delete(slot);
    }
  }

  function setDesired(t: number, n: number): void {
    desired[t] = n;
    for (let slot = 0; slot < n; slot++) {
      if (slots[t].has(slot)) continue;
      slots[t].add(slot);
      const p = worker(t, slot);
      workers.add(p);
      void p.finally(() => workers.delete(p));
    }
  }

  function enterPhase(t: number, index: number, remainingSeconds: number): void {
    if (controller.signal.aborted) return;
    setDesired(t, schedule[index].concurrency);
    const timer = setTimeout(() => {
      timers.delete(timer);
      const next = (index + 1) % schedule.length;
      enterPhase(t, next, schedule[next].seconds);
    }, (remainingSeconds * 1000) / scale);
    timers.add(timer);
  }

  targets.forEach((_, t) => {
    const { index, remaining } = phaseAt(schedule, opts.offsetsSeconds?.[t] ?? t * 60);
    enterPhase(t, index, remaining);
  });

  return {
    stats: () => ({ ...stats, desired: [...desired] }),
    stop: async () => {
      controller.abort();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.allSettled([...workers]);
      agent.destroy();
    },
  };
}
