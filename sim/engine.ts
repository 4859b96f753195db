/**
 * One vLLM engine core (one data-parallel rank), as a discrete-time model with no timers.
 *
 * Time is passed in (engine seconds) and the engine catches up lazily in advanceTo(): a thousand
 * simulated backends share one process, so nothing here may tick on its own while idle. Runs of
 * identical decode steps are applied in one go (k steps at once) so catching up is cheap.
 *
 * What it reproduces, because stepwatch's classifier depends on each fact:
 * - `maxNumSeqs` running slots and a FIFO waiting queue: a request queues behind the load.
 * - Every step produces one token for each decoding request, so steps/s is the per-request token
 *   rate and generation tokens/s = running x that rate (8 tok/s alone, ~115 in total at 12).
 * - Chunked prefill: a long prompt is read chunk by chunk within a per-step token budget. A step
 *   counts (histogram `_count`, the "steps" stepwatch watches) only when it produced a token or
 *   finished a request, and prompt tokens are counted when the prompt is done, so a long prefill
 *   with nothing else running leaves steps and tokens flat while KV-cache usage grows per chunk.
 * - Frozen (hung): the clock moves, nothing else does; aborts wait for the engine loop like in vLLM.
 * - Wedged: no step ever produces anything, but the engine loop still runs, so client aborts are
 *   processed and counted (finished_reason "abort"): clients giving up on it must not look like progress.
 * - Churn (vLLM #25538): a request that cannot fit is admitted, allocates its prefill chunk, and is
 *   preempted again, step after step: the KV cache and num_preemptions move, no token is produced.
 * - Deferred requests: counted as waiting (`reason="deferred"`) but waiting on something outside the
 *   engine (a grammar compile, a remote KV transfer, a streaming client); never scheduled until released.
 */
import { BUCKETS, Histogram, buckets125 } from "./histogram";

export interface EngineConfig {
  /** vLLM --max-num-seqs: requests running at once per engine. */
  maxNumSeqs: number;
  /** Output tokens/s of one request alone (GB10, 70B FP8: about 8). */
  singleRequestTokensPerSecond: number;
  /** Output tokens/s of all requests together when maxNumSeqs are decoding (GB10: 100-130). */
  totalTokensPerSecondAtLimit: number;
  /** Prompt tokens read per second during prefill. */
  prefillTokensPerSecond: number;
  /** vLLM --max-num-batched-tokens: the token budget of one step (decodes + prefill chunks). */
  chunkSize: number;
  /** Tokens per KV-cache block. */
  blockSize: number;
  /** KV-cache blocks on the GPU (num_gpu_blocks). */
  kvCacheBlocks: number;
  /** --max-model-len: prompt + output may not exceed it. */
  maxModelLen: number;
}

export const DEFAULT_ENGINE_CONFIG: EngineConfig = {
  maxNumSeqs: 12,
  singleRequestTokensPerSecond: 8,
  totalTokensPerSecondAtLimit: 115,
  prefillTokensPerSecond: 1000,
  chunkSize: 2048,
  blockSize: 16,
  kvCacheBlocks: 8192,
  maxModelLen: 32768,
};

export const FINISH_REASONS = ["stop", "length", "abort", "error", "repetition"] as const;
export type FinishReason = (typeof FINISH_REASONS)[number];

export interface RequestSpec {
  promptTokens: number;
  /** The request's max_tokens. */
  maxTokens: number;
  /** Stop early (finish_reason "stop") after this many output tokens, as if EOS was sampled. */
  stopAfter?: number | null;
}

export interface EngineRequest {
  readonly promptTokens: number;
  readonly maxTokens: number;
  readonly stopAfter: number | null;
  readonly arrivedAt: number;
  status: "waiting" | "running" | "finished";
  prefilled: number;
  generated: number;
  scheduledAt: number | null;
  firstTokenAt: number | null;
  finishedAt: number | null;
  finishReason: FinishReason | null;
}

/** Counters and histograms of one engine, reset only by a new process (a new Engine). */
export class EngineStats {
  promptTokens = 0;
  generationTokens = 0;
  preemptions = 0;
  prefixCacheQueries = 0;
  /**
   * Every forward pass, prompt-only chunks included (llama.cpp's n_decode_total, SGLang's and
   * TGI's per-pass counters); `steps` below skips passes that produced no token, as vLLM does.
   */
  forwardPasses = 0;
  /** Passes that carried a prompt chunk (TGI's method="prefill"; the rest are decode passes). */
  prefillPasses = 0;
  /** Sum over passes of the requests in the pass (llama.cpp's n_busy_slots_per_decode numerator). */
  busySlotPasses = 0;
  readonly finished: Record<FinishReason, number> = { stop: 0, length: 0, abort: 0, error: 0, repetition: 0 };
  /** `_count` of this histogram is the step counter stepwatch reads. */
  readonly iterationTokens = new Histogram(BUCKETS.iterationTokens);
  readonly requestPromptTokens: Histogram;
  readonly requestGenerationTokens: Histogram;
  readonly requestMaxTokens: Histogram;
  readonly timeToFirstToken = new Histogram(BUCKETS.ttft);
  readonly interTokenLatency = new Histogram(BUCKETS.interToken);
  readonly e2eLatency = new Histogram(BUCKETS.requestSeconds);
  readonly queueTime = new Histogram(BUCKETS.requestSeconds);
  readonly inferenceTime = new Histogram(BUCKETS.requestSeconds);
  readonly prefillTime = new Histogram(BUCKETS.requestSeconds);
  readonly decodeTime = new Histogram(BUCKETS.requestSeconds);

  constructor(maxModelLen: number) {
    const tokenBuckets = buckets125(maxModelLen);
    this.requestPromptTokens = new Histogram(tokenBuckets);
    this.requestGenerationTokens = new Histogram(tokenBuckets);
    this.requestMaxTokens = new Histogram(tokenBuckets);
  }

  get steps(): number {
    return this.iterationTokens.count;
  }

  get finishedTotal(): number {
    return FINISH_REASONS.reduce((sum, r) => sum + this.finished[r], 0);
  }
}

// Float slack when dividing elapsed time into whole steps.
const EPS = 1e-9;

export class Engine {
  readonly stats: EngineStats;
  private readonly waiting: EngineRequest[] = [];
  private readonly running: EngineRequest[] = [];
  private readonly pendingAborts = new Set<EngineRequest>();
  /** Waiting on something outside the engine (by_reason "deferred"): never admitted. */
  private readonly deferred: EngineRequest[] = [];
  private frozen = false;
  /** Frozen for work, but the loop runs: aborts are processed at once. */
  private wedged = false;
  /** Preemption churn: since when (engine seconds), and the cycle length. */
  private churnSince: number | null = null;
  private static readonly CHURN_PERIOD = 0.5;
  /** Engine time (seconds) at the end of the last applied step, or "now" when idle. */
  private t: number;

  constructor(
    readonly config: EngineConfig,
    startAt: number,
  ) {
    if (config.maxNumSeqs < 1) throw new Error(`maxNumSeqs must be at least 1, got ${config.maxNumSeqs}`);
    if (!(config.singleRequestTokensPerSecond > 0)) throw new Error("singleRequestTokensPerSecond must be > 0");
    if (!(config.totalTokensPerSecondAtLimit > 0)) throw new Error("totalTokensPerSecondAtLimit must be > 0");
    if (!(config.prefillTokensPerSecond > 0)) throw new Error("prefillTokensPerSecond must be > 0");
    this.stats = new EngineStats(config.maxModelLen);
    this.t = startAt;
  }

  get time(): number {
    return this.t;
  }
  get isFrozen(): boolean {
    return this.frozen;
  }
  get numRunning(): number {
    return this.running.length;
  }
  get numWaiting(): number {
    return this.waiting.length + this.deferred.length;
  }
  /** Of numWaiting, those deferred on something outside the engine. */
  get numDeferred(): number {
    return this.deferred.length;
  }
  get isWedged(): boolean {
    return this.wedged;
  }
  get isChurning(): boolean {
    return this.churnSince !== null;
  }
  /** Load used to pick an engine for a new request (vLLM's data-parallel balancing). */
  get load(): number {
    return this.running.length + this.waiting.length;
  }

  /** Blocks in use / total, 0..1: grows per prefill chunk and per block of output. */
  get kvCacheUsage(): number {
    let used = 0;
    for (const r of this.running) used += this.blocksOf(r.prefilled + r.generated);
    const base = Math.min(1, used / this.config.kvCacheBlocks);
    if (this.churnSince === null) return base;
    // Churn: each cycle the preempted request is re-admitted with part of a prefill chunk of blocks
    // (a different part each cycle: the golden-ratio step never repeats a value), then freed again.
    const cycle = Math.floor((this.t - this.churnSince) / Engine.CHURN_PERIOD);
    const chunk = this.blocksOf(this.config.chunkSize) / this.config.kvCacheBlocks;
    return Math.min(1, base + chunk * ((cycle * 0.6180339887) % 1));
  }

  /** Cumulative preemptions: the counted ones plus one per churn cycle. */
  get preemptions(): number {
    if (this.churnSince === null) return this.stats.preemptions;
    return this.stats.preemptions + Math.floor((this.t - this.churnSince) / Engine.CHURN_PERIOD);
  }

  private blocksOf(tokens: number): number {
    return Math.ceil(tokens / this.config.blockSize);
  }

  /**
   * Blocks the running requests hold or will hold before their next output: a prompt counts whole
   * from admission (its chunks are coming), output block by block.
   */
  private committedBlocks(): number {
    let n = 0;
    for (const r of this.running) n += this.blocksOf(Math.max(r.promptTokens, r.prefilled) + r.generated);
    return n;
  }

  private resetForRecompute(r: EngineRequest): void {
    r.status = "waiting";
    r.prefilled = 0;
    r.generated = 0;
    r.firstTokenAt = null;
    r.scheduledAt = null;
    this.stats.preemptions++;
  }

  /**
   * Out of KV cache: send the newest running requests back to the head of the queue, their cache
   * dropped, to be recomputed later (vLLM V1's preemption). The oldest one always keeps running.
   */
  private preemptIfFull(): void {
    while (this.running.length > 1 && this.committedBlocks() > this.config.kvCacheBlocks) {
      const r = this.running.pop()!;
      this.resetForRecompute(r);
      this.waiting.unshift(r);
    }
  }

  /**
   * Seconds one step takes with n requests decoding. Decode on this hardware is bound by reading
   * the weights once per step, so step time grows only slowly with the batch: total throughput
   * rises linearly from the single-request rate to the rate at the limit.
   */
  decodeStepSeconds(n: number): number {
    const { maxNumSeqs: max, singleRequestTokensPerSecond: single, totalTokensPerSecondAtLimit: atLimit } = this.config;
    const m = Math.max(1, n);
    const total = max > 1 ? single + ((atLimit - single) * (Math.min(m, max) - 1)) / (max - 1) : single;
    return m / total;
  }

  /** Queue a request at time `now` (seconds). Admission happens at once when a slot is free. */
  submit(spec: RequestSpec, now: number): EngineRequest {
    this.advanceTo(now);
    const promptTokens = Math.max(1, Math.floor(spec.promptTokens));
    const maxTokens = Math.max(1, Math.floor(spec.maxTokens));
    const stopAfter =
      spec.stopAfter != null && spec.stopAfter >= 1 && spec.stopAfter < maxTokens ? Math.floor(spec.stopAfter) : null;
    const req: EngineRequest = {
      promptTokens,
      maxTokens,
      stopAfter,
      arrivedAt: Math.max(now, this.t),
      status: "waiting",
      prefilled: 0,
      generated: 0,
      scheduledAt: null,
      firstTokenAt: null,
      finishedAt: null,
      finishReason: null,
    };
    this.waiting.push(req);
    this.admit();
    return req;
  }

  /**
   * Queue a request that waits on something outside the engine (vLLM's "deferred" waiting): it is
   * counted as waiting but never scheduled until `releaseDeferred`.
   */
  submitDeferred(spec: RequestSpec, now: number): EngineRequest {
    this.advanceTo(now);
    const req = this.submit({ ...spec }, now);
    const i = this.waiting.indexOf(req);
    if (i >= 0) {
      this.waiting.splice(i, 1);
      this.deferred.push(req);
    } else if (req.status === "running") {
      this.running.splice(this.running.indexOf(req), 1);
      req.status = "waiting";
      req.scheduledAt = null;
      this.deferred.push(req);
    }
    return req;
  }

  /** The deferred requests' outside wait is over: they queue like any other. */
  releaseDeferred(now: number): void {
    this.advanceTo(now);
    this.waiting.push(...this.deferred.splice(0, this.deferred.length));
    this.admit();
  }

  /** vLLM sleep mode: 0 awake, 1 weights offloaded, 2 weights discarded. Asleep, it does not step. */
  get sleepLevel(): number {
    return this.sleep;
  }
  private sleep = 0;
  setSleep(level: 0 | 1 | 2, now: number): void {
    this.setFrozen(level > 0, now);
    this.sleep = level;
  }

  /** Wedged: no step produces anything, but aborts are processed (and counted) at once. */
  setWedged(wedged: boolean, now: number): void {
    this.setFrozen(wedged, now);
    this.wedged = wedged;
  }

  /** Preemption churn (vLLM #25538): the KV cache and preemptions move, nothing else does. */
  setChurn(on: boolean, now: number): void {
    this.setFrozen(on, now);
    if (on && this.churnSince === null) this.churnSince = this.t;
    if (!on && this.churnSince !== null) {
      this.stats.preemptions = this.preemptions;
      this.churnSince = null;
    }
  }

  /** The client went away: free its slot. A hung engine only sees the abort once it steps again. */
  abort(req: EngineRequest, now: number): void {
    if (req.status === "finished") return;
    this.advanceTo(now);
    if (this.frozen && !this.wedged) {
      this.pendingAborts.add(req);
      return;
    }
    this.remove(req, "abort");
    this.admit();
  }

  /** Stop (hang) or resume stepping. Time spent frozen is skipped, not replayed. */
  setFrozen(frozen: boolean, now: number): void {
    this.advanceTo(now);
    this.frozen = frozen;
    if (!frozen) {
      for (const r of this.pendingAborts) this.remove(r, "abort");
      this.pendingAborts.clear();
      this.admit();
    }
  }

  /**
   * Put every running request back at the head of the queue, its KV cache freed (vLLM's recompute
   * preemption). Used for the "running 0, waiting N" hang.
   */
  preemptAll(now: number): void {
    this.advanceTo(now);
    const back = this.running.splice(0, this.running.length);
    for (const r of back) this.resetForRecompute(r);
    this.waiting.unshift(...back);
  }

  /** Apply every step that completes by `now` (seconds). */
  advanceTo(now: number): void {
    if (now <= this.t) return;
    if (this.frozen) {
      this.t = now;
      return;
    }
    for (;;) {
      this.preemptIfFull();
      this.admit();
      const decode: EngineRequest[] = [];
      const prefilling: EngineRequest[] = [];
      for (const r of this.running) (r.prefilled >= r.promptTokens ? decode : prefilling).push(r);
      // Chunked prefill: decodes take one token each from the step's budget, prompts share the rest.
      let budget = this.config.chunkSize - decode.length;
      const chunks: Array<[EngineRequest, number]> = [];
      for (const r of prefilling) {
        const c = Math.min(r.promptTokens - r.prefilled, budget);
        if (c <= 0) break;
        chunks.push([r, c]);
        budget -= c;
      }
      const dt = this.decodeStepSeconds(decode.length);
      if (chunks.length === 0) {
        if (decode.length === 0) {
          this.t = now; // idle: nothing to catch up
          return;
        }
        // Identical decode steps until the first request finishes: apply them in one go, but
        // no further than the free KV cache lasts (then preemption is checked again).
        const fit = Math.floor((now - this.t) / dt + EPS);
        if (fit <= 0) return;
        const headroom = this.config.kvCacheBlocks - this.committedBlocks();
        let k = Math.min(fit, Math.max(1, Math.floor((headroom * this.config.blockSize) / decode.length)));
        for (const r of decode) k = Math.min(k, this.remaining(r));
        this.applyDecodeSteps(decode, k, dt);
        continue;
      }
      let prefillTokens = 0;
      for (const [, c] of chunks) prefillTokens += c;
      const duration = dt + prefillTokens / this.config.prefillTokensPerSecond;
      if (this.t + duration > now + EPS) return;
      this.applyMixedStep(decode, chunks, duration);
    }
  }

  private remaining(r: EngineRequest): number {
    return (r.stopAfter ?? r.maxTokens) - r.generated;
  }

  private applyDecodeSteps(decode: EngineRequest[], k: number, dt: number): void {
    this.t += k * dt;
    this.stats.forwardPasses += k;
    this.stats.busySlotPasses += k * decode.length;
    for (const r of decode) r.generated += k;
    this.stats.generationTokens += k * decode.length;
    this.stats.iterationTokens.observe(decode.length, k);
    this.stats.interTokenLatency.observe(dt, k * decode.length);
    this.finishCompleted();
  }

  private applyMixedStep(decode: EngineRequest[], chunks: Array<[EngineRequest, number]>, duration: number): void {
    this.t += duration;
    this.stats.forwardPasses++;
    this.stats.prefillPasses++;
    this.stats.busySlotPasses += decode.length + chunks.length;
    let generated = decode.length;
    let iterationTokens = decode.length;
    for (const r of decode) r.generated++;
    if (decode.length) this.stats.interTokenLatency.observe(duration, decode.length);
    for (const [r, c] of chunks) {
      r.prefilled += c;
      if (r.prefilled < r.promptTokens) continue;
      // The last chunk samples the first output token; vLLM counts the prompt at that moment.
      r.generated = 1;
      r.firstTokenAt = this.t;
      generated++;
      iterationTokens += 1 + r.promptTokens;
      this.stats.promptTokens += r.promptTokens;
      this.stats.timeToFirstToken.observe(this.t - r.arrivedAt);
    }
    this.stats.generationTokens += generated;
    // A step that only read part of a prompt produced nothing: vLLM does not count it.
    if (generated > 0) this.stats.iterationTokens.observe(iterationTokens);
    this.finishCompleted();
  }

  private finishCompleted(): void {
    for (const r of [...this.running]) {
      if (r.firstTokenAt === null || this.remaining(r) > 0) continue;
      this.remove(r, r.stopAfter !== null ? "stop" : "length");
    }
  }

  private remove(r: EngineRequest, reason: FinishReason): void {
    for (const list of [this.running, this.waiting, this.deferred]) {
      const i = list.indexOf(r);
      if (i >= 0) list.splice(i, 1);
    }
    r.status = "finished";
    r.finishReason = reason;
    r.finishedAt = this.t;
    const s = this.stats;
    s.finished[reason]++;
    if (reason === "abort") return;
    s.requestPromptTokens.observe(r.promptTokens);
    s.requestGenerationTokens.observe(r.generated);
    s.requestMaxTokens.observe(r.maxTokens);
    s.e2eLatency.observe(this.t - r.arrivedAt);
    if (r.scheduledAt !== null) s.inferenceTime.observe(this.t - r.scheduledAt);
    if (r.scheduledAt !== null && r.firstTokenAt !== null) s.prefillTime.observe(r.firstTokenAt - r.scheduledAt);
    if (r.firstTokenAt !== null) s.decodeTime.observe(this.t - r.firstTokenAt);
  }

  /**
   * Move queued requests into free slots, in order, while the KV cache can hold their prompts
   * (otherwise a request waits although a slot is free, as in vLLM).
   */
  private admit(): void {
    if (this.frozen) return;
    const { maxNumSeqs, kvCacheBlocks } = this.config;
    let committed = this.committedBlocks();
    while (this.waiting.length && this.running.length < maxNumSeqs) {
      const r = this.waiting[0];
      const need = Math.min(kvCacheBlocks, this.blocksOf(r.promptTokens + 1));
      // An empty engine takes any request, so one larger than the cache cannot block the queue.
      if (this.running.length > 0 && committed + need > kvCacheBlocks) return;
      committed += need;
      this.waiting.shift();
      r.status = "running";
      r.scheduledAt = this.t;
      this.stats.queueTime.observe(Math.max(0, this.t - r.arrivedAt));
      this.stats.prefixCacheQueries += r.promptTokens;
      this.running.push(r);
    }
  }
}
