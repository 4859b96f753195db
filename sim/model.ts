/**
 * The state of one simulated vLLM server (API server + data-parallel engines), without I/O.
 *
 * The HTTP layer (server.ts and the engine fronts) owns sockets; this owns what a scrape shows: engines, the process
 * start time, the run-time mode. The clock is injected (ms since epoch) so unit tests drive time.
 */
import { LIVE_MODES, type LiveMode } from "./modes";
import { DEFAULT_ENGINE_CONFIG, Engine, type EngineConfig, type EngineRequest, type RequestSpec } from "./engine";

// The mode words live in modes.ts (the fronts speak them too); kept importable from here.
export { LIVE_MODES, SIM_MODES, type LiveMode, type SimMode } from "./modes";

export interface SimModelOptions {
  modelName: string;
  /** Data-parallel ranks: one series per engine in /metrics. */
  engines: number;
  engine: EngineConfig;
  /** Engine seconds per wall second (demos and benchmarks run the engine faster). */
  timeScale: number;
  /** vLLM with several API server processes: multiprocess metrics, no process_* / python_* / _created. */
  multiApiServer: boolean;
  /** Wall clock, ms since epoch. */
  clock: () => number;
}

export const DEFAULT_MODEL_NAME = "gb10/llama-3.1-70b-fp8";

export function defaultModelOptions(over: Partial<SimModelOptions> = {}): SimModelOptions {
  return {
    modelName: DEFAULT_MODEL_NAME,
    engines: 1,
    engine: { ...DEFAULT_ENGINE_CONFIG },
    timeScale: 1,
    multiApiServer: false,
    clock: Date.now,
    ...over,
  };
}

export interface SubmittedRequest {
  engineIndex: number;
  request: EngineRequest;
  /** The process that took it: a restart fails every request of the previous process. */
  generation: number;
}

export interface ModelTotals {
  running: number;
  waiting: number;
  kvCacheUsage: number;
  steps: number;
  promptTokens: number;
  generationTokens: number;
  finished: number;
}

export class VllmSimModel {
  readonly opts: SimModelOptions;
  mode: LiveMode = "normal";
  /** process_start_time_seconds of the current process (unix seconds). */
  processStartTime = 0;
  /** Bumped on every new process. */
  generation = 0;
  engines: Engine[] = [];
  /** http_requests_total{handler,method,status} of the current process. */
  readonly httpRequests = new Map<string, { handler: string; method: string; status: string; count: number; created: number }>();
  private readonly origin: number;

  constructor(opts: Partial<SimModelOptions> = {}) {
    this.opts = defaultModelOptions(opts);
    if (!Number.isInteger(this.opts.engines) || this.opts.engines < 1) throw new Error(`engines must be a positive integer, got ${this.opts.engines}`);
    if (!(this.opts.timeScale > 0)) throw new Error(`timeScale must be > 0, got ${this.opts.timeScale}`);
    this.origin = this.opts.clock();
    this.startNewProcess();
  }

  /** Wall time now, ms. */
  now(): number {
    return this.opts.clock();
  }

  /** Engine time now, seconds (scaled). */
  simNow(): number {
    return ((this.opts.clock() - this.origin) / 1000) * this.opts.timeScale;
  }

  /**
   * A new server process: every counter starts from zero, a new start time, all work of the old
   * process gone, mode back to normal (a restart cures a hang).
   */
  startNewProcess(): void {
    // Centisecond precision, like the Python client prints it; two restarts within one centisecond
    // must still show two different processes.
    const start = Math.round(this.opts.clock() / 10) / 100;
    this.processStartTime = start > this.processStartTime ? start : Math.round(this.processStartTime * 100 + 1) / 100;
    this.generation++;
    const t = this.simNow();
    this.engines = Array.from({ length: this.opts.engines }, () => new Engine(this.opts.engine, t));
    this.httpRequests.clear();
    this.mode = "normal";
    this.sleepLevel = 0;
  }

  /** Catch every engine up with the clock; called before any read of the state. */
  advance(): void {
    const t = this.simNow();
    for (const e of this.engines) e.advanceTo(t);
  }

  /** Hand a request to the least-loaded engine (vLLM's data-parallel balancing). */
  submit(spec: RequestSpec): SubmittedRequest {
    this.advance();
    let engineIndex = 0;
    this.engines.forEach((e, i) => {
      if (e.load < this.engines[engineIndex].load) engineIndex = i;
    });
    const request = this.engines[engineIndex].submit(spec, this.simNow());
    return { engineIndex, request, generation: this.generation };
  }

  abort(s: SubmittedRequest): void {
    if (s.generation !== this.generation) return;
    this.engines[s.engineIndex]?.abort(s.request, this.simNow());
  }

  /**
   * Switch a live mode. "hang" freezes the engines with their work in place; "waiting-hang" first
   * puts running work back in the queue (and adds `waiting` queued requests if fewer are there),
   * then freezes: running 0, waiting N, no progress.
   */
  setMode(mode: LiveMode, opts: { waiting?: number } = {}): void {
    if (!(LIVE_MODES as readonly string[]).includes(mode)) throw new Error(`unknown simulator mode "${mode}"`);
    const t = this.simNow();
    for (const e of this.engines) {
      e.setWedged(false, t);
      e.setChurn(false, t);
      e.releaseDeferred(t);
      e.setFrozen(this.sleepLevel > 0, t);
    }
    if (mode === "hang-engine") this.engines[this.engines.length - 1].setFrozen(true, t);
    if (mode === "wedged") for (const e of this.engines) e.setWedged(true, t);
    if (mode === "churn") for (const e of this.engines) e.setChurn(true, t);
    if (mode === "deferred") {
      const want = Math.max(opts.waiting ?? 1, 0);
      for (let i = 0; i < want; i++) this.engines[i % this.engines.length].submitDeferred({ promptTokens: 512, maxTokens: 256 }, t);
    }
    // Freeze first: preempting a live engine would let it admit the work again at once.
    if (mode === "hang" || mode === "waiting-hang") for (const e of this.engines) e.setFrozen(true, t);
    if (mode === "waiting-hang") for (const e of this.engines) e.preemptAll(t);
    if (mode === "waiting-hang") {
      // A frozen engine queues without admitting: these stay waiting.
      const want = Math.max(opts.waiting ?? 1, 0);
      for (let i = this.totals().waiting; i < want; i++) this.engines[i % this.engines.length].submit({ promptTokens: 512, maxTokens: 256 }, t);
    }
    this.mode = mode;
  }

  /** vLLM sleep mode (POST /sleep?level=1|2): 0 awake. Every engine sleeps and wakes together. */
  sleepLevel: 0 | 1 | 2 = 0;

  sleep(level: 1 | 2): void {
    const t = this.simNow();
    this.sleepLevel = level;
    for (const e of this.engines) e.setSleep(level, t);
  }

  wake(): void {
    const t = this.simNow();
    this.sleepLevel = 0;
    for (const e of this.engines) e.setSleep(0, t);
    if (this.mode === "hang" || this.mode === "waiting-hang") for (const e of this.engines) e.setFrozen(true, t);
  }

  totals(): ModelTotals {
    const out: ModelTotals = { running: 0, waiting: 0, kvCacheUsage: 0, steps: 0, promptTokens: 0, generationTokens: 0, finished: 0 };
    for (const e of this.engines) {
      out.running += e.numRunning;
      out.waiting += e.numWaiting;
      out.kvCacheUsage += e.kvCacheUsage / this.engines.length;
      out.steps += e.stats.steps;
      out.promptTokens += e.stats.promptTokens;
      out.generationTokens += e.stats.generationTokens;
      out.finished += e.stats.finishedTotal;
    }
    return out;
  }

  /** Count an HTTP request the way prometheus-fastapi-instrumentator does (status class). */
  recordHttp(handler: string, method: string, status: number): void {
    const cls = `${Math.floor(status / 100)}xx`;
    const key = `${handler} ${method} ${cls}`;
    const hit = this.httpRequests.get(key);
    if (hit) hit.count++;
    else this.httpRequests.set(key, { handler, method, status: cls, count: 1, created: this.opts.clock() / 1000 });
  }
}
