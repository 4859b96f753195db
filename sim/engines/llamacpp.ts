/**
 * llama.cpp's llama-server (tools/server, the server-context.cpp builds of Dec 2025 - Aug 2026) over
 * the shared engine core. Each behaviour below is what stepwatch's llama.cpp adapter must survive;
 * the source lines are in docs/engines.md ("Simulator").
 *
 * - /metrics only with --metrics (mode "no-metrics": 501 "Start it with `--metrics`"). Every value
 *   goes through a C++ double and `ostream <<`: six significant digits, so a counter past 1e6 prints
 *   as "1.23457e+06" and small increments are invisible until the sixth digit turns.
 * - n_decode_total counts every llama_decode() call, prompt chunks included (the progress signal);
 *   prompt_tokens_total moves when a prompt is done, tokens_predicted_total when a request ends.
 * - No start-time metric: each /metrics answer carries `Process-Start-Time-Unix`, which despite
 *   its name is ggml_time_us() at start, CLOCK_MONOTONIC microseconds (since boot on Linux): it
 *   changes with every process, it is not a unix time.
 * - The port opens before the model loads: meanwhile every route answers 503 "Loading model"
 *   except /models, /v1/models, /api/tags ("/" gets an HTML 503 page).
 * - --sleep-idle-seconds: asleep, /health and /props (is_sleeping) answer at once; every other
 *   route is a task that wakes the server and reloads the model first, /metrics included until
 *   #27376 (then /metrics is answered from a cache). Each wake is recorded in `wokenBy`.
 * - /metrics and /slots are tasks on the same loop as decoding: when the loop is blocked inside a
 *   device call ("blocked") they never answer, while /health and /props still do. (b10573 with its
 *   main thread stopped shows this, or frozen answers: mode "hang".)
 * - --api-key (option apiKey): every route but /health and /v1/health answers 401 "Invalid API
 *   Key", /metrics and /props included; `Authorization: Bearer K` and `X-Api-Key: K` both pass.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LiveMode } from "../model";
import { BadRequest, parseCompletionAsk, type CompletionAsk } from "../openai";
import { EngineHttpError, HeldFront, serveRoute, delay, estimateTokens, positiveIntField, readJsonObject, sendJson, sendText, tokensText } from "./held";
import type { EngineFront, FrontContext, FrontMode, FrontRequestKind, FrontState } from "./types";

const BUILD_INFO = "b7502-4ad7c0a4";
/** The host booted three days before the simulator started: CLOCK_MONOTONIC's origin. */
const HOST_UPTIME_MS = 3 * 24 * 3600 * 1000;
const LOADING_EXEMPT = new Set(["/models", "/v1/models", "/api/tags"]);
const COMPLETION_PATHS = new Set(["/completion", "/completions", "/v1/completions", "/chat/completions", "/v1/chat/completions"]);

/** llama.cpp's error body (format_error_response in server-common.cpp). */
type ErrorType = "invalid_request_error" | "not_found_error" | "not_supported_error" | "unavailable_error" | "server_error";
const ERROR_CODES: Record<ErrorType, number> = {
  invalid_request_error: 400,
  not_found_error: 404,
  not_supported_error: 501,
  unavailable_error: 503,
  server_error: 500,
};
function llamaError(message: string, type: ErrorType): EngineHttpError {
  const code = ERROR_CODES[type];
  return new EngineHttpError(code, { error: { code, message, type } });
}
const bad = (message: string) => llamaError(message, "invalid_request_error");

/**
 * `std::ostream << double` with the default precision (6), i.e. printf("%g"): the format of every
 * value in llama.cpp's /metrics (they pass through a double even when counted as uint64).
 */
export function cppDouble(d: number): string {
  if (Number.isNaN(d)) return "nan";
  if (!Number.isFinite(d)) return d > 0 ? "inf" : "-inf";
  if (d === 0) return "0";
  const exp = Math.floor(Math.log10(Math.abs(Number(d.toPrecision(6)))));
  if (exp < -4 || exp >= 6) {
    const [m, e] = d.toExponential(5).split("e");
    const mantissa = m.includes(".") ? m.replace(/0+$/, "").replace(/\.$/, "") : m;
    const n = Number(e);
    return `${mantissa}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }
  const fixed = d.toFixed(Math.max(0, 5 - exp));
  return fixed.includes(".") ? fixed.replace(/0+$/, "").replace(/\.$/, "") : fixed;
}

/** HELP, TYPE, value per family, as llama-server writes them (add_items / all_metrics_def). */
function renderItems(items: Array<[name: string, help: string, type: "counter" | "gauge", value: number]>): string {
  let out = "";
  for (const [name, help, type, value] of items) out += `# HELP llamacpp:${name} ${help}\n# TYPE llamacpp:${name} ${type}\nllamacpp:${name} ${cppDouble(value)}\n`;
  return out;
}

interface Totals {
  promptTokens: number;
  promptSeconds: number;
  predicted: number;
  predictedSeconds: number;
  decodes: number;
  busySlots: number;
}

interface LlamaAsk {
  native: boolean;
  oai: CompletionAsk | null;
  stream: boolean;
  promptTokens: number;
  maxTokens: number;
  stopAfter: number | null;
}

/** On SIGTERM llama-server stops its HTTP server and exits: open requests see the connection end (HeldFront.shutdown). */
export class LlamaCppFront extends HeldFront implements EngineFront {
  readonly kind = "llamacpp" as const;
  readonly listensWhileLoading = true;
  readonly exposesProcessStartTime = false;
  private sleeping = false;
  private waking: Promise<void> | null = null;
  private blocked = false;
  private loadingUntil: number | null = null;
  private lastTaskAt: number;
  private readonly wokenBy: FrontState["wokenBy"] = [];
  private readonly bootMs: number;
  private tStartUs = 0;
  private nTokensMax = 0;
  /** Totals at the previous /metrics read: the two throughput gauges average over that window. */
  private bucket: Totals;
  /** What /metrics shows while asleep in the builds that do not wake for it. */
  private cachedMetrics = "";
  private nextId = 1;

  constructor(private readonly ctx: FrontContext) {
    super(ctx.model);
    this.bootMs = ctx.model.now() - HOST_UPTIME_MS;
    this.lastTaskAt = ctx.model.now();
    this.bucket = this.totals();
    this.newProcess(0);
  }

  private get now(): number {
    return this.ctx.model.now();
  }

  private get slotCtx(): number {
    const cfg = this.ctx.model.opts.engine;
    return Math.floor(cfg.maxModelLen / Math.max(1, cfg.maxNumSeqs));
  }

  private get metricsWake(): boolean {
    // to_metrics() came after #27376, which answers /metrics from a cache while asleep.
    return this.ctx.opts.metricsWakeFromSleep ?? !this.ctx.opts.toMetrics;
  }

  kindOf(path: string): FrontRequestKind {
    if (path === "/metrics") return "metrics";
    if (path === "/health" || path === "/v1/health") return "health";
    if (path === "/models" || path === "/v1/models") return "models";
    if (COMPLETION_PATHS.has(path)) return "completion";
    return "other";
  }

  newProcess(loadSeconds: number): void {
    this.parked.drop();
    this.sleeping = false;
    this.waking = null;
    this.blocked = false;
    this.loadingUntil = loadSeconds > 0 ? this.now + loadSeconds * 1000 : null;
    this.lastTaskAt = this.now;
    this.tStartUs = Math.floor((this.now - this.bootMs) * 1000);
    this.nTokensMax = 0;
    this.bucket = { promptTokens: 0, promptSeconds: 0, predicted: 0, predictedSeconds: 0, decodes: 0, busySlots: 0 };
    this.cachedMetrics = "";
  }

  handlesMode(mode: string): mode is FrontMode {
    return mode === "sleep" || mode === "loading" || mode === "blocked";
  }

  setMode(mode: FrontMode, opts: { forSeconds?: number }): void {
    if (mode === "loading") {
      this.loadingUntil = this.now + (opts.forSeconds ?? 20) * 1000;
      return;
    }
    if (mode === "blocked") {
      this.ctx.model.setMode("hang");
      this.blocked = true;
      return;
    }
    const t = this.ctx.model.totals();
    if (t.running + t.waiting > 0) throw new Error(`llama.cpp sleeps only when idle: ${t.running} running, ${t.waiting} waiting`);
    this.goToSleep();
  }

  onLiveMode(mode: LiveMode): void {
    if (mode !== "normal") return;
    this.sleeping = false;
    this.loadingUntil = null;
    // The loop is free again: the tasks it was holding are served in order.
    this.blocked = false;
    this.parked.resume();
  }

  state(): FrontState {
    this.maybeSleep();
    return {
      engine: this.kind,
      sleeping: this.sleeping,
      loadingUntil: this.isLoading() ? this.loadingUntil : null,
      wokenBy: [...this.wokenBy],
      processStartHeader: String(this.tStartUs),
    };
  }

  // ---- state machine --------------------------------------------------------------------------

  private isLoading(): boolean {
    if (this.loadingUntil === null) return false;
    if (this.now < this.loadingUntil) return true;
    this.loadingUntil = null;
    this.lastTaskAt = this.now;
    return false;
  }

  private busy(): boolean {
    const t = this.ctx.model.totals();
    return t.running + t.waiting + this.held.size > 0;
  }

  /** The idle watchdog of server_queue: asleep once no task came for sleep_idle_seconds. */
  private maybeSleep(): void {
    const idle = this.ctx.opts.sleepIdleSeconds;
    if (idle === undefined || this.sleeping || this.isLoading()) return;
    if (this.busy()) {
      this.lastTaskAt = this.now;
      return;
    }
    if (this.now - this.lastTaskAt >= idle * 1000) this.goToSleep();
  }

  private goToSleep(): void {
    this.cachedMetrics = this.renderMetrics(true);
    this.sleeping = true;
  }

  /** A task arrived: wake first if asleep (the model reloads while the request waits). */
  private async task(req: IncomingMessage, path: string): Promise<void> {
    if (this.sleeping) {
      this.wokenBy.push({ method: req.method ?? "GET", path, at: this.now });
      this.waking ??= delay((this.ctx.opts.wakeSeconds ?? 2) * 1000).then(() => {
        this.sleeping = false;
        this.waking = null;
      });
      await this.waking;
    }
    this.lastTaskAt = this.now;
  }

  // ---- HTTP -----------------------------------------------------------------------------------

  handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    return serveRoute(res, () => this.route(req, res, path, method), (err) =>
      err instanceof BadRequest ? bad(err.message) : llamaError((err as Error).message, "server_error"),
    );
  }

  private async route(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    this.maybeSleep();
    if (this.isLoading() && !LOADING_EXEMPT.has(path)) {
      if (path === "/") return sendText(res, 503, "<html><body>Loading model...</body></html>", "text/html; charset=utf-8");
      throw llamaError("Loading model", "unavailable_error");
    }
    const get = method === "GET" || method === "HEAD";
    if (get && (path === "/health" || path === "/v1/health")) return sendJson(res, 200, { status: "ok" });
    // --api-key is cpp-httplib middleware that runs before any route (so before the
    // "Start it with --metrics" 501): every route but /health answers 401, /metrics and /props
    // included (real b10573; /health is public so a load balancer can check it).
    if (this.ctx.opts.apiKey !== undefined && !this.keyAccepted(req)) return this.refuseKey(res);
    if (get && path === "/props") return sendJson(res, 200, this.props());
    if (get && path === "/metrics") return this.metrics(req, res, path);
    if (get && path === "/slots") {
      await this.task(req, path);
      return this.throughLoop(res, () => sendJson(res, 200, this.slots()));
    }
    if (get && (path === "/models" || path === "/v1/models")) {
      if (this.metricsWake) await this.task(req, path);
      return sendJson(res, 200, this.models());
    }
    if (method === "POST" && COMPLETION_PATHS.has(path)) return this.completion(req, res, path);
    throw llamaError("File Not Found", "not_found_error");
  }

  /** Both headers the real server accepts for --api-key (`Authorization: Bearer K`, `X-Api-Key: K`). */
  private keyAccepted(req: IncomingMessage): boolean {
    const key = this.ctx.opts.apiKey;
    return req.headers.authorization === `Bearer ${key}` || req.headers["x-api-key"] === key;
  }

  /** The 401 of the key middleware: its own key order (message, type, code) and the connection closed. */
  private refuseKey(res: ServerResponse): void {
    const body = JSON.stringify({ error: { message: "Invalid API Key", type: "authentication_error", code: 401 } });
    res.writeHead(401, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close" });
    res.end(body);
  }

  /** Answer now, or park the answer while the loop is blocked. */
  private throughLoop(res: ServerResponse, answer: () => void): void {
    this.parked.answerWhen(!this.blocked, res, answer);
  }

  private async metrics(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (this.ctx.model.mode === "no-metrics") throw llamaError("This server does not support metrics endpoint. Start it with `--metrics`", "not_supported_error");
    const headers = { "Process-Start-Time-Unix": String(this.tStartUs) };
    if (this.sleeping && !this.metricsWake) return sendText(res, 200, this.cachedMetrics, "text/plain; version=0.0.4", headers);
    // Since #27376 a metrics task is the one task that does not restart the idle countdown
    // (server_queue: task_resets_idle_timer), checked on the real b10573; before it, it did.
    if (this.metricsWake) await this.task(req, path);
    this.throughLoop(res, () => sendText(res, 200, this.renderMetrics(false), "text/plain; version=0.0.4", headers));
  }

  private totals(): Totals {
    const cfg = this.ctx.model.opts.engine;
    const out: Totals = { promptTokens: 0, promptSeconds: 0, predicted: 0, predictedSeconds: 0, decodes: 0, busySlots: 0 };
    for (const e of this.ctx.model.engines) {
      const s = e.stats;
      out.promptTokens += s.promptTokens;
      out.promptSeconds += s.promptTokens / cfg.prefillTokensPerSecond;
      // on_prediction() runs when a slot is released after its last token; a cancelled task is not counted.
      out.predicted += s.requestGenerationTokens.sum;
      out.predictedSeconds += s.decodeTime.sum;
      out.decodes += s.forwardPasses;
      out.busySlots += s.busySlotPasses;
    }
    return out;
  }

  /** The exposition of server_task_result_metrics (counters, then gauges; HELP, TYPE, value). */
  private renderMetrics(asleep: boolean): string {
    this.ctx.model.advance();
    const t = this.totals();
    const core = this.ctx.model.totals();
    this.nTokensMax = Math.max(this.nTokensMax, this.longestSequence());
    const b = this.bucket;
    const rate = (n: number, s: number) => (n > 0 && s > 0 ? n / s : 0);
    const promptRate = asleep ? 0 : rate(t.promptTokens - b.promptTokens, t.promptSeconds - b.promptSeconds);
    const predictedRate = asleep ? 0 : rate(t.predicted - b.predicted, t.predictedSeconds - b.predictedSeconds);
    if (!asleep) this.bucket = t; // metrics_reset_bucket: the gauges average over the window between two reads
    const processing = asleep ? 0 : core.running;
    const deferred = asleep ? 0 : core.waiting;
    const busyPerDecode = t.busySlots / Math.max(1, t.decodes);
    if (this.ctx.opts.toMetrics) {
      // server_task_result_metrics::to_metrics() (server-task.cpp, later 2026): new help texts, the
      // cached-prompt and speculative counters, n_busy_slots_per_decode typed as a gauge.
      return renderItems([
        ["prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens", "counter", t.promptTokens],
        ["prompt_tokens_cached_total", "Number of prompt tokens reused from the cache", "counter", 0],
        ["prompt_seconds_total", "Total time spent processing prompts", "counter", t.promptSeconds],
        ["tokens_predicted_total", "Number of generation tokens processed", "counter", t.predicted],
        ["tokens_predicted_seconds_total", "Total time spent generating tokens", "counter", t.predictedSeconds],
        ["n_decode_total", "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding", "counter", t.decodes],
        ["n_tokens_max", "Largest observed sequence length (prompt + generation)", "counter", this.nTokensMax],
        ["spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated", "counter", 0],
        ["spec_decode_num_accepted_tokens_total", "Speculative: Total draft tokens accepted by the target model", "counter", 0],
        ["spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps", "counter", 0],
        ["prompt_tokens_seconds", "Average prompt throughput in tokens/s", "gauge", promptRate],
        ["predicted_tokens_seconds", "Average generation throughput in tokens/s", "gauge", predictedRate],
        ["requests_processing", "Number of requests processing", "gauge", processing],
        ["requests_deferred", "Number of requests deferred", "gauge", deferred],
        ["n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", "gauge", busyPerDecode],
      ]);
    }
    return renderItems([
      ["prompt_tokens_total", "Number of prompt tokens processed.", "counter", t.promptTokens],
      ["prompt_seconds_total", "Prompt process time", "counter", t.promptSeconds],
      ["tokens_predicted_total", "Number of generation tokens processed.", "counter", t.predicted],
      ["tokens_predicted_seconds_total", "Predict process time", "counter", t.predictedSeconds],
      ["n_decode_total", "Total number of llama_decode() calls", "counter", t.decodes],
      ["n_tokens_max", "Largest observed n_tokens.", "counter", this.nTokensMax],
      ["n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", "counter", busyPerDecode],
      ["prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "gauge", promptRate],
      ["predicted_tokens_seconds", "Average generation throughput in tokens/s.", "gauge", predictedRate],
      ["requests_processing", "Number of requests processing.", "gauge", processing],
      ["requests_deferred", "Number of requests deferred.", "gauge", deferred],
    ]);
  }

  /** The longest sequence among the requests answered over HTTP (background load is not seen here). */
  private longestSequence(): number {
    let max = 0;
    for (const h of this.held.list()) max = Math.max(max, h.sub.request.prefilled + h.sub.request.generated);
    return max;
  }

  private props(): unknown {
    const cfg = this.ctx.model.opts.engine;
    return {
      default_generation_settings: {
        id: 0,
        id_task: -1,
        n_ctx: this.slotCtx,
        speculative: false,
        is_processing: false,
        params: { n_predict: -1, seed: 4294967295, temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05, stream: true },
        prompt: "",
      },
      total_slots: cfg.maxNumSeqs,
      model_path: `/models/${this.ctx.modelName}.gguf`,
      modalities: { vision: false, audio: false },
      chat_template: "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}",
      bos_token: "<|begin_of_text|>",
      eos_token: "<|eot_id|>",
      build_info: BUILD_INFO,
      is_sleeping: this.sleeping,
      endpoint_slots: true,
      endpoint_props: false,
      endpoint_metrics: this.ctx.model.mode !== "no-metrics",
    };
  }

  private slots(): unknown {
    const cfg = this.ctx.model.opts.engine;
    const running = this.ctx.model.totals().running;
    return Array.from({ length: cfg.maxNumSeqs }, (_, id) => ({ id, id_task: id < running ? id : -1, n_ctx: this.slotCtx, speculative: false, is_processing: id < running }));
  }

  private models(): unknown {
    const created = Math.floor(this.now / 1000);
    const meta = this.isLoading() ? null : { vocab_type: 2, n_vocab: 128256, n_ctx_train: 131072, n_embd: 8192, n_params: 70553706496, size: 42520395776 };
    return {
      models: [{ name: this.ctx.modelName, model: this.ctx.modelName, modified_at: "", size: "", digest: "", type: "model", description: "", tags: [""], capabilities: ["completion"], parameters: "", details: { parent_model: "", format: "gguf", family: "", families: [""], parameter_size: "", quantization_level: "" } }],
      object: "list",
      data: [{ id: this.ctx.modelName, object: "model", created, owned_by: "llamacpp", meta }],
    };
  }

  private parseAsk(body: Record<string, unknown>, path: string): LlamaAsk {
    const cfg = this.ctx.model.opts.engine;
    if (path === "/completion" || path === "/completions") {
      if (body.prompt === undefined) throw bad('"prompt" is required');
      const text = typeof body.prompt === "string" ? body.prompt : JSON.stringify(body.prompt);
      const promptTokens = positiveIntField(body, "sim_prompt_tokens", bad) ?? estimateTokens(text);
      // n_predict -1 (the default) generates until EOS or the slot's context is full.
      const n = body.n_predict ?? body.max_tokens;
      const maxTokens = typeof n === "number" && Number.isInteger(n) && n > 0 ? n : Math.max(1, this.slotCtx - promptTokens);
      const stopAfter = positiveIntField(body, "sim_output_tokens", bad) ?? null;
      return { native: true, oai: null, stream: body.stream === true, promptTokens, maxTokens, stopAfter };
    }
    const chat = path.endsWith("chat/completions");
    const oai = parseCompletionAsk(body, chat, cfg.maxModelLen);
    return { native: false, oai, stream: oai.stream, promptTokens: oai.promptTokens, maxTokens: oai.maxTokens, stopAfter: oai.stopAfter };
  }

  private async completion(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const ask = this.parseAsk(await readJsonObject(req, bad), path);
    await this.task(req, path);
    if (res.destroyed) return;
    if (ask.promptTokens >= this.slotCtx)
      throw bad(`the request exceeds the available context size, try increasing it (n_prompt_tokens ${ask.promptTokens}, n_ctx ${this.slotCtx})`);
    const id = `cmpl-${this.nextId++}`;
    const created = Math.floor(this.now / 1000);
    const chat = ask.oai?.chat ?? false;
    const oaiChunk = (text: string, finish: string | null) =>
      chat
        ? { choices: [{ finish_reason: finish, index: 0, delta: finish ? {} : { content: text } }], created, id, model: this.ctx.modelName, system_fingerprint: BUILD_INFO, object: "chat.completion.chunk" }
        : { choices: [{ text, index: 0, logprobs: null, finish_reason: finish }], created, model: this.ctx.modelName, system_fingerprint: BUILD_INFO, object: "text_completion", id };
    if (ask.stream) {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      res.flushHeaders();
    }
    this.held.hold(res, path, { promptTokens: ask.promptTokens, maxTokens: ask.maxTokens, stopAfter: ask.stopAfter }, {
      onTokens: ask.stream
        ? (_h, from, to) => {
            const text = tokensText(from, to);
            const body = ask.native ? { index: 0, content: text, tokens: [], stop: false, id_slot: -1, tokens_predicted: to, tokens_evaluated: ask.promptTokens } : oaiChunk(text, null);
            res.write(`data: ${JSON.stringify(body)}\n\n`);
          }
        : undefined,
      onFinish: (h, r) => {
        const stopType = r.finishReason === "stop" ? "eos" : "limit";
        const finish = r.finishReason === "stop" ? "stop" : "length";
        const timings = { prompt_n: r.promptTokens, prompt_ms: 0, predicted_n: r.generated, predicted_ms: 0 };
        const usage = { completion_tokens: r.generated, prompt_tokens: r.promptTokens, total_tokens: r.promptTokens + r.generated };
        if (ask.native) {
          const final = { index: 0, content: ask.stream ? tokensText(h.sent, r.generated) : tokensText(0, r.generated), tokens: [], id_slot: 0, stop: true, model: this.ctx.modelName, tokens_predicted: r.generated, tokens_evaluated: r.promptTokens, stop_type: stopType, stopping_word: "", tokens_cached: r.promptTokens + r.generated, timings };
          if (!ask.stream) return sendJson(res, 200, final);
          res.end(`data: ${JSON.stringify(final)}\n\n`);
          return;
        }
        if (ask.stream) {
          res.end(`data: ${JSON.stringify({ ...oaiChunk(tokensText(h.sent, r.generated), finish), usage, timings })}\n\ndata: [DONE]\n\n`);
          return;
        }
        const text = tokensText(0, r.generated);
        const choice = chat ? { finish_reason: finish, index: 0, message: { role: "assistant", content: text } } : { text, index: 0, logprobs: null, finish_reason: finish };
        sendJson(res, 200, { choices: [choice], created, model: this.ctx.modelName, system_fingerprint: BUILD_INFO, object: chat ? "chat.completion" : "text_completion", usage, id, timings });
      },
    });
  }
}
