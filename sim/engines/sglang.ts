/**
 * SGLang's HTTP server (python/sglang/srt/entrypoints/http_server.py, v0.5.10; the real scrape is
 * tests/fixtures/real-metrics/sglang-0.5.10-datadog.prom) over the shared engine core.
 *
 * - /metrics only with --enable-metrics (mode "no-metrics": FastAPI's 404). Always prometheus_client
 *   multiprocess: no process_* families and no start time, so a restart shows only as counters
 *   going down.
 * - The scheduler's gauges (num_running_reqs, num_queue_reqs, token_usage, gen_throughput...) are
 *   written only when it logs: on every prefill batch, every `decode_log_interval` (40) decode
 *   passes, and every 30 s while idle. Between those, and for ever while the scheduler is hung,
 *   a scrape shows the last values: gen_throughput keeps its last non-zero value during a hang.
 * - prompt_tokens_total / generation_tokens_total / num_requests_total are counted when a request
 *   finishes (observe_one_finished_request): a long generation leaves them flat.
 * - Newer releases (option `progressCounters`) add cuda_graph_passes_total{mode} (+1 per decode
 *   pass) and realtime_tokens_total{mode} (added at each log point).
 * - /health and /health_generate run a one-token generation (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION
 *   is on by default): they enter the scheduler's queue like any request, answer 200 once the
 *   scheduler produced any output, 503 after SGLANG_HEALTH_CHECK_TIMEOUT (20 s), 503 while the
 *   warmup request runs after start. The received log marks them as completions.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Exposition, formatValue, type Labels } from "../format";
import type { EngineRequest } from "../engine";
import { Histogram } from "../histogram";
import { BadRequest, STREAM_DONE, completionBody, parseCompletionAsk, streamChunk } from "../openai";
import { EngineHttpError, ModelessFront, serveRoute, finishedInCore, delay, estimateTokens, positiveIntField, readJsonObject, sendJson, tokensText } from "./held";
import type { EngineFront, FrontContext, FrontRequestKind } from "./types";

export const SGLANG_VERSION = "0.5.10.post1";
/** --decode-log-interval's default. */
const DECODE_LOG_INTERVAL = 40;
/** The scheduler's DEFAULT_FORCE_STREAM_INTERVAL: a non-streamed request's output goes out every 50 tokens. */
const FORCE_STREAM_INTERVAL = 50;
/** check_memory() logs the gauges during idle at most every 30 s. */
const IDLE_LOG_SECONDS = 30;

// TokenizerMetricsCollector's default buckets (python/sglang/srt/metrics/collector.py).
const TTFT_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400];
const E2E_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400];
const ITL_BUCKETS = [0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8];
const QUEUE_BUCKETS = [0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000];
const TOKEN_BUCKETS = [100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 12000, 15000, 20000, 22000, 25000, 30000, 35000, 40000, 66000, 99000, 132000, 300000, 600000, 900000, 1100000];

/** What the scheduler last wrote to its gauges (SchedulerStats at its last log point). */
interface Logged {
  running: number;
  queue: number;
  usedTokens: number;
  tokenUsage: number;
  genThroughput: number;
  /** Engine seconds of this log point. */
  at: number;
  decodePasses: number;
  prefillPasses: number;
  generationTokens: number;
  promptTokens: number;
  /** Requests scheduled so far (each one joined a prefill batch). */
  admitted: number;
}

const sglError = (message: string, status = 400) => new EngineHttpError(status, { object: "error", message, type: "BadRequestError", param: null, code: status });

export class SglangFront extends ModelessFront implements EngineFront {
  readonly kind = "sglang" as const;
  readonly listensWhileLoading = false;
  readonly exposesProcessStartTime = false;
  private logged!: Logged;
  private warmupUntil = 0;
  private readonly endpointsSeen = new Set<string>();
  private realtime = { prefill: 0, decode: 0 };
  // The tokenizer manager's histograms (one set per process; its counters come from the core).
  private ttft = new Histogram(TTFT_BUCKETS);
  private itl = new Histogram(ITL_BUCKETS);
  private e2e = new Histogram(E2E_BUCKETS);
  private queueTime = new Histogram(QUEUE_BUCKETS);
  private promptHist = new Histogram(TOKEN_BUCKETS);
  private generationHist = new Histogram(TOKEN_BUCKETS);
  private nextId = 1;
  /** Health-check generations that finished in the core (not counted, as in SGLang). */
  private healthProbes = { requests: 0, promptTokens: 0, generationTokens: 0 };
  /** Engine time of each request's previous output to the tokenizer manager, and its tokens so far. */
  private readonly lastChunkAt = new WeakMap<EngineRequest, number>();
  private readonly seenTokens = new WeakMap<EngineRequest, number>();

  constructor(private readonly ctx: FrontContext) {
    super(ctx.model, "SGLang");
    this.newProcess();
  }

  private get now(): number {
    return this.ctx.model.now();
  }

  kindOf(path: string): FrontRequestKind {
    if (path === "/metrics") return "metrics";
    // Both run a generation through the scheduler: they are probes, not liveness reads.
    if (path === "/health" || path === "/health_generate") return "completion";
    if (path === "/v1/models" || path === "/get_model_info") return "models";
    if (path === "/generate" || path === "/v1/completions" || path === "/v1/chat/completions") return "completion";
    return "other";
  }

  newProcess(): void {
    this.parked.drop();
    this.warmupUntil = this.now + (this.ctx.opts.warmupSeconds ?? 1) * 1000;
    this.endpointsSeen.clear();
    this.healthProbes = { requests: 0, promptTokens: 0, generationTokens: 0 };
    this.realtime = { prefill: 0, decode: 0 };
    this.ttft = new Histogram(TTFT_BUCKETS);
    this.itl = new Histogram(ITL_BUCKETS);
    this.e2e = new Histogram(E2E_BUCKETS);
    this.queueTime = new Histogram(QUEUE_BUCKETS);
    this.promptHist = new Histogram(TOKEN_BUCKETS);
    this.generationHist = new Histogram(TOKEN_BUCKETS);
    this.logged = { running: 0, queue: 0, usedTokens: 0, tokenUsage: 0, genThroughput: 0, at: this.ctx.model.simNow(), decodePasses: 0, prefillPasses: 0, generationTokens: 0, promptTokens: 0, admitted: 0 };
  }

  // ---- the scheduler's log points -------------------------------------------------------------

  private core() {
    let decodePasses = 0;
    let prefillPasses = 0;
    let generationTokens = 0;
    let promptTokens = 0;
    let admitted = 0;
    let frozen = false;
    for (const e of this.ctx.model.engines) {
      admitted += e.stats.queueTime.count;
      decodePasses += e.stats.forwardPasses - e.stats.prefillPasses;
      prefillPasses += e.stats.prefillPasses;
      generationTokens += e.stats.generationTokens;
      promptTokens += e.stats.promptTokens;
      frozen ||= e.isFrozen;
    }
    return { ...this.ctx.model.totals(), decodePasses, prefillPasses, generationTokens, promptTokens, admitted, frozen };
  }

  /**
   * Replay the log points the scheduler passed since the last look. A hung scheduler logs nothing,
   * so its gauges keep what they last said.
   */
  private catchUp(): void {
    this.ctx.model.advance();
    const c = this.core();
    if (c.frozen) return;
    const t = this.ctx.model.simNow();
    const cfg = this.ctx.model.opts.engine;
    const capacity = cfg.kvCacheBlocks * cfg.blockSize;
    const write = (genThroughput: number, running = c.running) => {
      this.logged = {
        running,
        queue: c.waiting,
        usedTokens: Math.round(c.kvCacheUsage * capacity),
        tokenUsage: Math.round(c.kvCacheUsage * 100) / 100,
        genThroughput,
        at: t,
        decodePasses: c.decodePasses,
        prefillPasses: c.prefillPasses,
        generationTokens: c.generationTokens,
        promptTokens: c.promptTokens,
        admitted: c.admitted,
      };
    };
    const l = this.logged;
    const decodeLogs = Math.floor(c.decodePasses / DECODE_LOG_INTERVAL) - Math.floor(l.decodePasses / DECODE_LOG_INTERVAL);
    if (decodeLogs > 0) {
      const gap = Math.max(1e-9, t - l.at);
      this.realtime.decode += c.generationTokens - l.generationTokens;
      this.realtime.prefill += c.promptTokens - l.promptTokens;
      write((c.generationTokens - l.generationTokens) / gap);
    } else if (c.admitted > l.admitted || c.prefillPasses > l.prefillPasses) {
      // log_prefill_stats runs when a prefill batch is formed: its #running-req is the decode batch
      // the new requests join, not counting them, and it leaves gen_throughput alone. So an idle
      // server that takes work keeps saying 0 running until its first decode log, 40 passes later.
      this.realtime.prefill += c.promptTokens - l.promptTokens;
      write(l.genThroughput, Math.max(0, c.running - (c.admitted - l.admitted)));
    } else if (c.running === 0 && t - l.at > IDLE_LOG_SECONDS) {
      write(0);
    }
  }

  // ---- HTTP -----------------------------------------------------------------------------------

  handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    return serveRoute(res, () => this.route(req, res, path, method), (err) =>
      err instanceof BadRequest ? sglError(err.message, err.status) : new EngineHttpError(500, { object: "error", message: (err as Error).message, type: "InternalServerError", param: null, code: 500 }),
    );
  }

  private async route(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    this.catchUp();
    const get = method === "GET" || method === "HEAD";
    if (get && (path === "/health" || path === "/health_generate")) return this.health(res);
    if (get && path === "/metrics") {
      if (this.ctx.model.mode === "no-metrics") return sendJson(res, 404, { detail: "Not Found" });
      const body = this.renderMetrics();
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (get && path === "/get_model_info") return sendJson(res, 200, { model_path: this.ctx.modelName, tokenizer_path: this.ctx.modelName, is_generation: true, preferred_sampling_params: null, weight_version: "default", has_image_understanding: false, has_audio_understanding: false, model_type: "llama", architectures: ["LlamaForCausalLM"] });
    if (get && path === "/get_server_info") return this.throughScheduler(res, () => sendJson(res, 200, this.serverInfo()));
    if (get && path === "/v1/models") {
      const cfg = this.ctx.model.opts.engine;
      return sendJson(res, 200, { object: "list", data: [{ id: this.ctx.modelName, object: "model", created: Math.floor(this.now / 1000), owned_by: "sglang", root: this.ctx.modelName, parent: null, max_model_len: cfg.maxModelLen }] });
    }
    if (method === "POST" && (path === "/generate" || path === "/v1/completions" || path === "/v1/chat/completions")) return this.generate(req, res, path);
    sendJson(res, 404, { detail: "Not Found" });
  }

  /** A round trip to the scheduler process: a hung scheduler never answers it. */
  private throughScheduler(res: ServerResponse, answer: () => void): void {
    this.parked.answerWhen(!this.ctx.model.engines.some((e) => e.isFrozen), res, answer);
  }

  private serverInfo(): unknown {
    const cfg = this.ctx.model.opts.engine;
    return {
      model_path: this.ctx.modelName,
      served_model_name: this.ctx.modelName,
      tp_size: 1,
      dp_size: this.ctx.model.engines.length,
      max_running_requests: cfg.maxNumSeqs,
      context_length: cfg.maxModelLen,
      enable_metrics: this.ctx.model.mode !== "no-metrics",
      decode_log_interval: DECODE_LOG_INTERVAL,
      max_total_num_tokens: cfg.kvCacheBlocks * cfg.blockSize,
      internal_states: [{ last_gen_throughput: this.logged.genThroughput, avg_spec_accept_length: null }],
      version: SGLANG_VERSION,
    };
  }

  /** /health and /health_generate: a one-token request into the scheduler, as SGLang sends it. */
  private async health(res: ServerResponse): Promise<void> {
    if (this.now < this.warmupUntil) return void res.writeHead(503, { "content-length": 0 }).end();
    const passes = () => this.core().decodePasses + this.core().prefillPasses;
    const before = passes();
    let finished = false;
    const probe = this.held.hold(res, "/health_generate", { promptTokens: 1, maxTokens: 1 }, {
      onFinish: (_h, r) => {
        finished = true;
        // GenerateReqInput(log_metrics=False): the health check is kept out of the counters.
        if (r.finishReason !== "abort") {
          this.healthProbes.requests++;
          this.healthProbes.promptTokens += r.promptTokens;
          this.healthProbes.generationTokens += r.generated;
        }
      },
    });
    const deadline = this.now + (this.ctx.opts.healthCheckTimeoutSeconds ?? 20) * 1000;
    while (!res.destroyed) {
      await delay(1000);
      this.ctx.model.advance();
      // Any output from the scheduler since the probe was sent proves the loop is alive.
      if (finished || passes() > before) break;
      if (this.now >= deadline) break;
    }
    if (res.destroyed) return;
    const ok = finished || passes() > before;
    this.held.cancel(probe);
    res.writeHead(ok ? 200 : 503, { "content-length": 0 }).end();
  }

  private async generate(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const cfg = this.ctx.model.opts.engine;
    const body = await readJsonObject(req, (m) => sglError(m));
    const native = path === "/generate";
    const oai = native ? null : parseCompletionAsk(body, path === "/v1/chat/completions", cfg.maxModelLen);
    let promptTokens: number;
    let maxTokens: number;
    let stopAfter: number | null;
    let stream: boolean;
    if (oai) ({ promptTokens, maxTokens, stopAfter, stream } = oai);
    else {
      const text = typeof body.text === "string" ? body.text : body.input_ids !== undefined ? JSON.stringify(body.input_ids) : undefined;
      if (text === undefined) throw sglError("Either text or input_ids should be provided.");
      const sp = (body.sampling_params && typeof body.sampling_params === "object" ? body.sampling_params : {}) as Record<string, unknown>;
      promptTokens = positiveIntField(body, "sim_prompt_tokens", sglError) ?? estimateTokens(text);
      maxTokens = positiveIntField(sp, "max_new_tokens", sglError) ?? 128;
      stopAfter = positiveIntField(body, "sim_output_tokens", sglError) ?? null;
      stream = body.stream === true;
    }
    if (res.destroyed) return;
    this.endpointsSeen.add(path);
    const id = `${this.nextId++}`;
    const meta = { id, created: Math.floor(this.now / 1000), model: this.ctx.modelName };
    const arrived = this.ctx.model.simNow();
    if (stream) {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
      res.flushHeaders();
    }
    const metaInfo = (r: { promptTokens: number; generated: number; finishReason: string | null }) => ({
      id,
      finish_reason: r.finishReason === null ? null : r.finishReason === "stop" ? { type: "stop", matched: 128009 } : { type: "length", length: r.generated },
      prompt_tokens: r.promptTokens,
      completion_tokens: r.generated,
      cached_tokens: 0,
      e2e_latency: this.ctx.model.simNow() - arrived,
    });
    this.held.hold(res, path, { promptTokens, maxTokens, stopAfter }, {
      onTokens: (h, from, to) => {
        // The scheduler sends a streamed request's output every token, a non-streamed one's every
        // DEFAULT_FORCE_STREAM_INTERVAL (50) tokens; the tokenizer manager observes what arrives.
        const flushed = stream ? to : Math.floor(to / FORCE_STREAM_INTERVAL) * FORCE_STREAM_INTERVAL;
        const seen = this.seenTokens.get(h.sub.request) ?? 0;
        if (flushed > seen) {
          this.observeChunk(h.sub.request, arrived, seen, flushed);
          this.seenTokens.set(h.sub.request, flushed);
        }
        if (!stream) return;
        if (oai) return void res.write(streamChunk(oai, meta, from, to, null));
        res.write(`data: ${JSON.stringify({ text: tokensText(0, to), meta_info: metaInfo({ promptTokens, generated: to, finishReason: null }), index: 0 })}\n\n`);
      },
      onFinish: (h, r) => {
        this.observeChunk(r, arrived, this.seenTokens.get(r) ?? 0, r.generated);
        this.observeFinished(r, arrived);
        if (oai) {
          if (!stream) return sendJson(res, 200, completionBody(oai, meta, r));
          res.write(streamChunk(oai, meta, h.sent, r.generated, r.finishReason ?? "length"));
          res.end(STREAM_DONE);
          return;
        }
        const final = { text: tokensText(0, r.generated), meta_info: metaInfo(r), index: 0 };
        if (!stream) return sendJson(res, 200, final);
        res.end(`data: ${JSON.stringify(final)}\n\n${STREAM_DONE}`);
      },
    });
  }

  /** TokenizerManager: the histograms of a finished request (aborted ones are not counted). */
  /**
   * The tokenizer manager's collect_metrics for one output from the scheduler: TTFT at the first,
   * then inter-token latency for the new tokens. So ITL's _count moves during a long generation
   * (every token when streamed, every 50 otherwise), while the finished-request counters do not.
   */
  private observeChunk(r: EngineRequest, arrived: number, from: number, to: number): void {
    const now = this.ctx.model.simNow();
    const last = this.lastChunkAt.get(r) ?? r.firstTokenAt ?? now;
    if (from === 0 && to > 0) this.ttft.observe((r.firstTokenAt ?? now) - arrived);
    const fresh = to - Math.max(from, 1);
    if (fresh > 0) this.itl.observe(Math.max(0, now - last) / fresh, fresh);
    if (r.status === "finished") this.lastChunkAt.delete(r);
    else this.lastChunkAt.set(r, now);
  }

  private observeFinished(r: EngineRequest, arrived: number): void {
    this.lastChunkAt.delete(r);
    this.seenTokens.delete(r);
    if (r.finishReason === "abort") return;
    const end = r.finishedAt ?? this.ctx.model.simNow();
    this.e2e.observe(end - arrived);
    if (r.scheduledAt !== null) this.queueTime.observe(Math.max(0, r.scheduledAt - r.arrivedAt));
    this.promptHist.observe(r.promptTokens);
    this.generationHist.observe(r.generated);
  }

  /** The exposition in the order and label sets of the real v0.5.10 scrape. */
  renderMetrics(): string {
    const x = new Exposition();
    const model = this.ctx.modelName;
    const sched: Labels = { model_name: model, tp_rank: "0" };
    const tok: Labels = { model_name: model };
    const l = this.logged;
    const cfg = this.ctx.model.opts.engine;
    const gauge = (name: string, help: string, value: number, labels: Labels = sched) => {
      x.family(`sglang:${name}`, "gauge", help);
      x.sample(`sglang:${name}`, labels, value);
    };
    const counter = (name: string, help: string, value: number) => {
      x.family(`sglang:${name}`, "counter", help);
      x.sample(`sglang:${name}`, sched, value);
    };
    const histogram = (name: string, help: string, h: Histogram) => {
      const full = `sglang:${name}`;
      x.family(full, "histogram", help);
      for (const [le, n] of h.cumulative()) x.sample(`${full}_bucket`, { ...tok, le: formatValue(le) }, n);
      x.sample(`${full}_count`, tok, h.count);
      x.sample(`${full}_sum`, tok, h.sum);
    };
    // The HTTP middleware's gauge is live, unlike the scheduler's: every request in the core came
    // over HTTP in a real server; the simulator's background load is counted as /v1/completions.
    const active = this.held.byEndpoint();
    const t = this.ctx.model.totals();
    const background = Math.max(0, t.running + t.waiting - this.held.size);
    if (background > 0) this.endpointsSeen.add("/v1/completions");
    active.set("/v1/completions", (active.get("/v1/completions") ?? 0) + background);
    if (this.endpointsSeen.size) {
      x.family("sglang:http_requests_active", "gauge", "Number of currently active HTTP requests");
      for (const e of this.endpointsSeen) x.sample("sglang:http_requests_active", { endpoint: e, method: "POST" }, active.get(e) ?? 0);
    }
    gauge("num_running_reqs", "The number of running requests.", l.running);
    gauge("num_queue_reqs", "The number of requests in the waiting queue.", l.queue);
    gauge("num_used_tokens", "The number of used tokens.", l.usedTokens);
    gauge("token_usage", "The token usage.", l.tokenUsage);
    gauge("cache_hit_rate", "The prefix cache hit rate.", 0);
    gauge("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", cfg.kvCacheBlocks * cfg.blockSize);
    gauge("gen_throughput", "The generation throughput (token/s).", l.genThroughput);
    gauge("utilization", "The utilization.", l.running / Math.max(1, cfg.maxNumSeqs));
    gauge("is_cuda_graph", "Whether CUDA graph execution is active.", l.running > 0 ? 1 : 0);
    // observe_one_finished_request: counted when a request ends, whoever sent it.
    const core = finishedInCore(this.ctx.model);
    const hp = this.healthProbes;
    const done = { requests: core.requests - hp.requests, promptTokens: core.promptTokens - hp.promptTokens, generationTokens: core.generationTokens - hp.generationTokens };
    counter("prompt_tokens_total", "Number of prefill tokens processed.", done.promptTokens);
    counter("generation_tokens_total", "Number of generation tokens processed.", done.generationTokens);
    counter("cached_tokens_total", "Number of cached prompt tokens.", 0);
    counter("num_requests_total", "Number of requests processed.", done.requests);
    gauge("num_retracted_reqs", "The number of currently retracted requests.", 0);
    gauge("spec_accept_length", "Average speculative decoding acceptance length.", 0);
    gauge("spec_accept_rate", "Average speculative decoding acceptance rate.", 0);
    gauge("engine_startup_time", "Time taken for the engine to start.", 42.7);
    gauge("engine_load_weights_time", "Time taken to load model weights.", 31.2);
    if (this.ctx.opts.progressCounters) {
      const c = this.core();
      x.family("sglang:cuda_graph_passes_total", "counter", "Total number of forward passes categorized by CUDA graph.");
      x.sample("sglang:cuda_graph_passes_total", { ...sched, mode: "decode_cuda_graph" }, c.decodePasses);
      x.family("sglang:realtime_tokens_total", "counter", "Total number of tokens processed (updated on each log interval). mode: prefill_compute, prefill_cache, decode.");
      x.sample("sglang:realtime_tokens_total", { ...sched, mode: "prefill_compute" }, this.realtime.prefill);
      x.sample("sglang:realtime_tokens_total", { ...sched, mode: "prefill_cache" }, 0);
      x.sample("sglang:realtime_tokens_total", { ...sched, mode: "decode" }, this.realtime.decode);
    }
    histogram("time_to_first_token_seconds", "Time to first token in seconds.", this.ttft);
    histogram("inter_token_latency_seconds", "Inter-token latency in seconds.", this.itl);
    histogram("e2e_request_latency_seconds", "End-to-end request latency in seconds.", this.e2e);
    histogram("queue_time_seconds", "Request queue time in seconds.", this.queueTime);
    histogram("prompt_tokens_histogram", "Prompt tokens per request.", this.promptHist);
    histogram("generation_tokens_histogram", "Generation tokens per request.", this.generationHist);
    return x.text();
  }
}
