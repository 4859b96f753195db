/**
 * Hugging Face text-generation-inference's router (router/src/server.rs, backends/v3/src/backend.rs;
 * 3.3.x, the repository's head in Jan 2026; the real scrape is
 * tests/fixtures/real-metrics/tgi-datadog-truncated.prom) over the shared engine core.
 *
 * - The exposition is metrics-exporter-prometheus's: integers without ".0", a blank line after
 *   each family, no HELP for the families TGI never describes (tgi_batch_concat,
 *   tgi_request_failure), histograms without configured buckets rendered as summaries
 *   (tgi_request_skipped_tokens), and a family appears only once it was first recorded.
 * - Progress: tgi_batch_inference_count{method} is incremented *before* each prefill/decode call
 *   and tgi_batch_inference_success after it returns, so a call that never returns (a hang) shows
 *   as count = success + 1, both flat. tgi_request_success moves only when a request ends.
 * - tgi_batch_current_size / tgi_queue_size are the running batch and the queue.
 * - No process metrics: a restart shows as counters going down. While the shards load, the router
 *   is not started: the port refuses (the server's restart behaviour).
 * - /health asks the shards over gRPC; the shard's event loop is blocked by the hung forward pass,
 *   so in a hang /health does not answer either.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Histogram } from "../histogram";
import { BadRequest, STREAM_DONE, completionBody, parseCompletionAsk, streamChunk } from "../openai";
import { EngineHttpError, ModelessFront, serveRoute, finishedInCore, estimateTokens, positiveIntField, readJsonObject, sendJson, tokensText } from "./held";
import type { EngineFront, FrontContext, FrontRequestKind } from "./types";

export const TGI_VERSION = "3.3.6";
const GENERATE_PATHS = new Set(["/", "/generate", "/generate_stream", "/v1/completions", "/v1/chat/completions"]);

const validation = (message: string) => new EngineHttpError(422, { error: `Input validation error: ${message}`, error_type: "validation" });

/** Rust's `{}` for f64 as metrics-exporter-prometheus prints it: "0", "1509", "245.91743839099996". */
function rust(d: number): string {
  if (d === Infinity) return "+Inf";
  return String(d);
}

/** The router's bucket layouts (server.rs): 35 geometric duration buckets and 100 linear token buckets. */
function durationBuckets(): number[] {
  const out: number[] = [];
  let value = 0.0001;
  for (let i = 0; i < 35; i++) {
    value *= 1.5;
    out.push(value);
  }
  return out;
}
function linearBuckets(max: number): number[] {
  return Array.from({ length: 100 }, (_, x) => (max / 100) * (x + 1));
}

export class TgiFront extends ModelessFront implements EngineFront {
  readonly kind = "tgi" as const;
  readonly listensWhileLoading = false;
  readonly exposesProcessStartTime = false;
  // Per process (metrics-rs registers a series on first use).
  /** Requests rejected before they reached the queue (tgi_request_count counts them too). */
  private validationFailures = 0;
  private nextId = 1;
  private touched = new Set<string>();
  private inputLength!: Histogram;
  private maxNewTokens!: Histogram;
  private generatedTokens!: Histogram;
  private inferenceDuration!: Histogram;
  private requestDuration!: Histogram;
  private queueDuration!: Histogram;

  constructor(private readonly ctx: FrontContext) {
    super(ctx.model, "TGI");
    this.newProcess();
  }

  private get maxTotalTokens(): number {
    return this.ctx.model.opts.engine.maxModelLen;
  }

  kindOf(path: string): FrontRequestKind {
    if (path === "/metrics") return "metrics";
    if (path === "/health" || path === "/ping") return "health";
    if (path === "/info" || path === "/v1/models") return "models";
    if (GENERATE_PATHS.has(path) && path !== "/") return "completion";
    return "other";
  }

  newProcess(): void {
    this.parked.drop();
    this.validationFailures = 0;
    this.touched = new Set();
    const d = durationBuckets();
    this.inputLength = new Histogram(linearBuckets(this.maxTotalTokens - 1));
    this.maxNewTokens = new Histogram(linearBuckets(this.maxTotalTokens));
    this.generatedTokens = new Histogram(linearBuckets(this.maxTotalTokens));
    this.inferenceDuration = new Histogram(d);
    this.requestDuration = new Histogram(d);
    this.queueDuration = new Histogram(d);
  }

  handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    return serveRoute(res, () => this.route(req, res, path, method), (err) => {
      if (!(err instanceof BadRequest)) return new EngineHttpError(500, { error: (err as Error).message, error_type: "generation" });
      this.validationFailures++;
      return validation(err.message);
    });
  }

  private frozen(): boolean {
    return this.ctx.model.engines.some((e) => e.isFrozen);
  }

  private async route(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    this.ctx.model.advance();
    const get = method === "GET" || method === "HEAD";
    if (get && (path === "/health" || path === "/ping" || path === "/")) {
      return this.parked.answerWhen(!this.frozen(), res, () => void res.writeHead(200, { "content-length": 0 }).end());
    }
    if (get && path === "/metrics") {
      const body = this.renderMetrics();
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (get && path === "/info") return sendJson(res, 200, this.info());
    if (get && path === "/v1/models") return sendJson(res, 200, { object: "list", data: [{ id: this.ctx.modelName, object: "model", created: 0, owned_by: this.ctx.modelName }] });
    if (method === "POST" && GENERATE_PATHS.has(path)) return this.generate(req, res, path);
    res.writeHead(404, { "content-length": 0 }).end();
  }

  private info(): unknown {
    return {
      model_id: this.ctx.modelName,
      model_sha: "e985a63cdc139290c5f700ff1929f0b5942cced2",
      model_pipeline_tag: "text-generation",
      max_concurrent_requests: 128,
      max_best_of: 2,
      max_stop_sequences: 4,
      max_input_tokens: this.maxTotalTokens - 1,
      max_total_tokens: this.maxTotalTokens,
      validation_workers: 2,
      max_client_batch_size: 4,
      router: "text-generation-router",
      version: TGI_VERSION,
      sha: null,
      docker_label: null,
    };
  }

  private async generate(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const body = await readJsonObject(req, (m) => {
      this.validationFailures++;
      return validation(m);
    });
    const oai = path.startsWith("/v1/") ? parseCompletionAsk(body, path === "/v1/chat/completions", this.maxTotalTokens) : null;
    let promptTokens: number;
    let maxTokens: number;
    let stopAfter: number | null;
    let stream: boolean;
    if (oai) ({ promptTokens, maxTokens, stopAfter, stream } = oai);
    else {
      const fail = (m: string) => {
        this.validationFailures++;
        return validation(m);
      };
      if (typeof body.inputs !== "string" || body.inputs === "") throw fail("`inputs` cannot be empty");
      const params = (body.parameters && typeof body.parameters === "object" ? body.parameters : {}) as Record<string, unknown>;
      promptTokens = positiveIntField(body, "sim_prompt_tokens", fail) ?? estimateTokens(body.inputs);
      maxTokens = positiveIntField(params, "max_new_tokens", fail) ?? Math.max(1, this.maxTotalTokens - promptTokens);
      if (promptTokens + maxTokens > this.maxTotalTokens)
        throw fail(`\`inputs\` tokens + \`max_new_tokens\` must be <= ${this.maxTotalTokens}. Given: ${promptTokens} \`inputs\` tokens and ${maxTokens} \`max_new_tokens\``);
      stopAfter = positiveIntField(body, "sim_output_tokens", fail) ?? null;
      stream = path === "/generate_stream" || (path === "/" && body.stream === true);
    }
    if (res.destroyed) return;
    this.inputLength.observe(promptTokens);
    this.maxNewTokens.observe(maxTokens);
    this.touched.add("input").add("queue");
    const arrived = this.ctx.model.simNow();
    const meta = { id: "", created: Math.floor(this.ctx.model.now() / 1000), model: this.ctx.modelName };
    if (stream) {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      res.flushHeaders();
    }
    this.held.hold(res, path, { promptTokens, maxTokens, stopAfter }, {
      onTokens: stream
        ? (_h, from, to) => {
            if (oai) return void res.write(streamChunk(oai, meta, from, to, null));
            for (let i = from; i < to; i++) res.write(`data:${JSON.stringify({ index: i + 1, token: { id: 1000 + i, text: tokensText(i, i + 1), logprob: -0.1, special: false }, generated_text: null, details: null })}\n\n`);
          }
        : undefined,
      onFinish: (h, r) => {
        const end = r.finishedAt ?? this.ctx.model.simNow();
        this.requestDuration.observe(end - arrived);
        if (r.scheduledAt !== null) {
          this.queueDuration.observe(Math.max(0, r.scheduledAt - arrived));
          this.inferenceDuration.observe(end - r.scheduledAt);
        }
        this.generatedTokens.observe(r.generated);
        const finish = r.finishReason === "stop" ? "eos_token" : "length";
        if (oai) {
          if (!stream) return sendJson(res, 200, completionBody(oai, { ...meta, id: `chatcmpl-${this.nextId++}` }, r));
          res.write(streamChunk(oai, meta, h.sent, r.generated, r.finishReason ?? "length"));
          res.end(STREAM_DONE);
          return;
        }
        const text = tokensText(0, r.generated);
        const details = { finish_reason: finish, generated_tokens: r.generated, seed: null };
        if (!stream) return sendJson(res, 200, { generated_text: text, ...(typeof (body.parameters as Record<string, unknown> | undefined)?.details === "boolean" && (body.parameters as Record<string, unknown>).details ? { details } : {}) });
        let tail = "";
        for (let i = h.sent; i < r.generated - 1; i++) tail += `data:${JSON.stringify({ index: i + 1, token: { id: 1000 + i, text: tokensText(i, i + 1), logprob: -0.1, special: false }, generated_text: null, details: null })}\n\n`;
        const last = r.generated - 1;
        tail += `data:${JSON.stringify({ index: last + 1, token: { id: 1000 + last, text: tokensText(last, last + 1), logprob: -0.1, special: false }, generated_text: text, details })}\n\n`;
        res.end(tail);
      },
    });
  }

  /** The families in the real scrape's order, each only once it has been recorded in this process. */
  renderMetrics(): string {
    let decodePasses = 0;
    let prefillPasses = 0;
    let tokenSteps = 0;
    for (const e of this.ctx.model.engines) {
      decodePasses += e.stats.forwardPasses - e.stats.prefillPasses;
      prefillPasses += e.stats.prefillPasses;
      tokenSteps += e.stats.generationTokens;
    }
    const t = this.ctx.model.totals();
    // Every request went through the queue before its first prefill.
    if (prefillPasses > 0) this.touched.add("batch").add("queue");
    // A forward call that never returned: counted, not succeeded. It is the decode of a running batch.
    const stuckDecode = this.frozen() && t.running > 0 ? 1 : 0;
    const out: string[] = [];
    const family = (name: string, type: string, help: string | null, lines: string[]) => {
      out.push(`${help === null ? "" : `# HELP ${name} ${help}\n`}# TYPE ${name} ${type}\n${lines.join("\n")}\n`);
    };
    const histogram = (name: string, help: string, h: Histogram) => {
      const lines = h.cumulative().map(([le, n]) => `${name}_bucket{le="${rust(le)}"} ${n}`);
      lines.push(`${name}_sum ${rust(h.sum)}`, `${name}_count ${h.count}`);
      family(name, "histogram", help, lines);
    };
    // server.rs: tgi_request_count at each request's entry, tgi_request_success when one ends.
    const core = finishedInCore(this.ctx.model);
    const requestCount = core.received + this.validationFailures;
    if (core.requests > 0) family("tgi_request_success", "counter", "Number of successful requests", [`tgi_request_success ${core.requests}`]);
    if (prefillPasses > 1) family("tgi_batch_concat", "counter", null, [`tgi_batch_concat{reason="chunking"} ${prefillPasses - 1}`]);
    if (requestCount > 0) family("tgi_request_count", "counter", "Total number of requests", [`tgi_request_count ${requestCount}`]);
    if (this.validationFailures > 0) family("tgi_request_failure", "counter", null, [`tgi_request_failure{err="validation"} ${this.validationFailures}`]);
    if (this.touched.has("batch")) {
      family("tgi_batch_inference_success", "counter", "Number of successful inference calls per method (prefill or decode)", [
        `tgi_batch_inference_success{method="prefill"} ${prefillPasses}`,
        `tgi_batch_inference_success{method="decode"} ${decodePasses}`,
      ]);
      family("tgi_batch_inference_count", "counter", "Inference calls per method (prefill or decode)", [
        `tgi_batch_inference_count{method="decode"} ${decodePasses + stuckDecode}`,
        `tgi_batch_inference_count{method="prefill"} ${prefillPasses}`,
      ]);
    }
    if (this.touched.has("queue")) family("tgi_queue_size", "gauge", "Current queue size", [`tgi_queue_size ${t.waiting}`]);
    if (this.touched.has("batch")) {
      const cfg = this.ctx.model.opts.engine;
      family("tgi_batch_current_max_tokens", "gauge", "Maximum tokens for the current batch", [`tgi_batch_current_max_tokens ${Math.round(t.kvCacheUsage * cfg.kvCacheBlocks * cfg.blockSize)}`]);
      family("tgi_batch_current_size", "gauge", "Current batch size", [`tgi_batch_current_size ${t.running}`]);
    }
    if (this.touched.has("input")) {
      histogram("tgi_request_input_length", "Input token length per request", this.inputLength);
      histogram("tgi_request_max_new_tokens", "Maximum new tokens per request", this.maxNewTokens);
    }
    if (this.inferenceDuration.count > 0) histogram("tgi_request_inference_duration", "Request inference duration", this.inferenceDuration);
    if (tokenSteps > 0) {
      const q = ["0", "0.5", "0.9", "0.95", "0.99", "0.999", "1"].map((x) => `tgi_request_skipped_tokens{quantile="${x}"} 0`);
      q.push("tgi_request_skipped_tokens_sum 0", `tgi_request_skipped_tokens_count ${tokenSteps}`);
      family("tgi_request_skipped_tokens", "summary", "Speculated tokens per request", q);
    }
    if (this.requestDuration.count > 0) {
      histogram("tgi_request_duration", "End-to-end request duration", this.requestDuration);
      histogram("tgi_request_queue_duration", "Request queue duration", this.queueDuration);
      histogram("tgi_request_generated_tokens", "Generated tokens per request", this.generatedTokens);
    }
    return out.join("\n");
  }
}
