/**
 * Ollama's server (server/routes.go, head of Aug 2026) over the shared engine core.
 *
 * - No /metrics at all: gin's plain "404 page not found". Its load cannot be seen from outside,
 *   which is why stepwatch never probes it: a probe would queue behind whatever runs
 *   (OLLAMA_NUM_PARALLEL defaults to 1 here, so one running request fills it).
 * - Liveness: GET / ("Ollama is running"), /api/version. Loaded models: /api/ps, with expires_at
 *   = last use + keep-alive; after that the model is unloaded (mode "sleep") and the next
 *   generation loads it again first (recorded in `wokenBy`). A restarted server has nothing loaded.
 * - /api/generate and /api/chat stream NDJSON by default ("stream" defaults to true).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LiveMode } from "../model";
import { BadRequest, STREAM_DONE, completionBody, parseCompletionAsk, streamChunk } from "../openai";
import { EngineHttpError, HeldRequests, serveRoute, delay, estimateTokens, readJsonObject, sendJson, sendText, tokensText } from "./held";
import type { EngineFront, FrontContext, FrontMode, FrontRequestKind, FrontState } from "./types";

export const OLLAMA_VERSION = "0.13.5";
const DIGEST = "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72";
/** num_ctx's default. */
const NUM_CTX = 4096;
const GENERATE_PATHS = new Set(["/api/generate", "/api/chat", "/v1/completions", "/v1/chat/completions"]);

const ollamaError = (status: number, message: string) => new EngineHttpError(status, { error: message });

export class OllamaFront implements EngineFront {
  readonly kind = "ollama" as const;
  /** `ollama serve` is up in well under a second; models load per request, not at start. */
  readonly listensWhileLoading = true;
  readonly exposesProcessStartTime = false;
  private readonly held: HeldRequests;
  private loaded = false;
  private loading: Promise<void> | null = null;
  private lastUsedAt = 0;
  private readonly wokenBy: FrontState["wokenBy"] = [];

  constructor(private readonly ctx: FrontContext) {
    this.held = new HeldRequests(ctx.model);
    this.loaded = true; // a fresh simulator starts with its model loaded, as a fleet that is in use
    this.lastUsedAt = ctx.model.now();
  }

  private get now(): number {
    return this.ctx.model.now();
  }

  private get keepAliveMs(): number {
    return (this.ctx.opts.keepAliveSeconds ?? 300) * 1000;
  }

  kindOf(path: string): FrontRequestKind {
    if (path === "/metrics") return "metrics";
    if (path === "/" || path === "/api/version") return "health";
    if (path === "/api/ps" || path === "/api/tags" || path === "/v1/models") return "models";
    if (GENERATE_PATHS.has(path)) return "completion";
    return "other";
  }

  newProcess(): void {
    this.loaded = false;
    this.loading = null;
  }

  handlesMode(mode: string): mode is FrontMode {
    return mode === "sleep";
  }

  setMode(): void {
    const t = this.ctx.model.totals();
    if (t.running + t.waiting > 0) throw new Error(`Ollama unloads a model only when idle: ${t.running} running, ${t.waiting} waiting`);
    this.loaded = false;
  }

  onLiveMode(mode: LiveMode): void {
    if (mode === "normal") this.loaded = true;
  }

  async shutdown(): Promise<void> {
    await this.held.release();
  }

  inFlight(): number {
    return this.held.size;
  }

  private isLoaded(): boolean {
    if (!this.loaded) return false;
    const t = this.ctx.model.totals();
    if (t.running + t.waiting + this.held.size > 0) {
      this.lastUsedAt = this.now;
      return true;
    }
    if (this.now - this.lastUsedAt >= this.keepAliveMs) this.loaded = false;
    return this.loaded;
  }

  state(): FrontState {
    return { engine: this.kind, sleeping: !this.isLoaded(), loadingUntil: null, wokenBy: [...this.wokenBy], processStartHeader: null };
  }

  handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    return serveRoute(res, () => this.route(req, res, path, method), (err) =>
      err instanceof BadRequest
        ? new EngineHttpError(400, { error: { message: err.message, type: "invalid_request_error", param: null, code: null } })
        : ollamaError(500, (err as Error).message),
    );
  }

  private async route(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    this.ctx.model.advance();
    const get = method === "GET" || method === "HEAD";
    if (get && path === "/") return sendText(res, 200, "Ollama is running", "text/plain; charset=utf-8");
    if (get && path === "/api/version") return sendJson(res, 200, { version: OLLAMA_VERSION });
    if (get && path === "/api/ps") return sendJson(res, 200, { models: this.isLoaded() ? [this.processModel()] : [] });
    if (get && path === "/api/tags") return sendJson(res, 200, { models: [this.listModel()] });
    if (get && path === "/v1/models") return sendJson(res, 200, { object: "list", data: [{ id: this.ctx.modelName, object: "model", created: Math.floor(this.lastUsedAt / 1000), owned_by: "library" }] });
    if (method === "POST" && GENERATE_PATHS.has(path)) return this.generate(req, res, path);
    sendText(res, 404, "404 page not found", "text/plain");
  }

  private details() {
    return { parent_model: "", format: "gguf", family: "llama", families: ["llama"], parameter_size: "70.6B", quantization_level: "Q4_K_M" };
  }

  private listModel(): unknown {
    return { name: this.ctx.modelName, model: this.ctx.modelName, modified_at: new Date(this.now - 86_400_000).toISOString(), size: 42520413916, digest: DIGEST, details: this.details() };
  }

  private processModel(): unknown {
    return {
      name: this.ctx.modelName,
      model: this.ctx.modelName,
      size: 45194921984,
      digest: DIGEST,
      details: this.details(),
      expires_at: new Date(this.lastUsedAt + this.keepAliveMs).toISOString(),
      size_vram: 45194921984,
      context_length: NUM_CTX,
    };
  }

  /** The scheduler loads the model before the runner takes the request. */
  private async ensureLoaded(req: IncomingMessage, path: string): Promise<void> {
    if (this.isLoaded()) return;
    this.wokenBy.push({ method: req.method ?? "POST", path, at: this.now });
    this.loading ??= delay((this.ctx.opts.loadSeconds ?? 2) * 1000).then(() => {
      this.loaded = true;
      this.loading = null;
      this.lastUsedAt = this.now;
    });
    await this.loading;
  }

  private async generate(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const body = await readJsonObject(req, (m) => ollamaError(400, m));
    const oai = path.startsWith("/v1/") ? parseCompletionAsk(body, path === "/v1/chat/completions", NUM_CTX) : null;
    if (typeof body.model !== "string" || body.model === "") throw ollamaError(400, "model is required");
    if (body.model !== this.ctx.modelName) throw ollamaError(404, `model '${body.model}' not found`);
    const chat = path === "/api/chat";
    const text = chat ? JSON.stringify(body.messages ?? "") : typeof body.prompt === "string" ? body.prompt : "";
    await this.ensureLoaded(req, path);
    if (res.destroyed) return;
    this.lastUsedAt = this.now;
    const createdAt = () => new Date(this.now).toISOString();
    if (!oai && text === "" && !chat) {
      // An empty prompt only loads the model.
      return sendJson(res, 200, { model: this.ctx.modelName, created_at: createdAt(), response: "", done: true, done_reason: "load" });
    }
    const options = (body.options && typeof body.options === "object" ? body.options : {}) as Record<string, unknown>;
    const promptTokens = oai ? oai.promptTokens : typeof body.sim_prompt_tokens === "number" ? body.sim_prompt_tokens : estimateTokens(text);
    // num_predict -1 (the default) generates until the end of the context.
    const numPredict = typeof options.num_predict === "number" && options.num_predict > 0 ? options.num_predict : Math.max(1, NUM_CTX - promptTokens);
    const maxTokens = oai ? oai.maxTokens : numPredict;
    const stopAfter = oai ? oai.stopAfter : typeof body.sim_output_tokens === "number" ? body.sim_output_tokens : null;
    const stream = oai ? oai.stream : body.stream !== false;
    const meta = { id: `cmpl-${Math.floor(this.now)}`, created: Math.floor(this.now / 1000), model: this.ctx.modelName };
    const piece = (from: number, to: number) => (chat ? { message: { role: "assistant", content: tokensText(from, to) } } : { response: tokensText(from, to) });
    if (stream) {
      res.writeHead(200, { "content-type": oai ? "text/event-stream" : "application/x-ndjson" });
      res.flushHeaders();
    }
    this.held.hold(res, path, { promptTokens, maxTokens, stopAfter }, {
      onTokens: stream
        ? (_h, from, to) => {
            if (oai) return void res.write(streamChunk(oai, meta, from, to, null));
            res.write(`${JSON.stringify({ model: this.ctx.modelName, created_at: createdAt(), ...piece(from, to), done: false })}\n`);
          }
        : undefined,
      onFinish: (h, r) => {
        this.lastUsedAt = this.now;
        if (oai) {
          if (!stream) return sendJson(res, 200, completionBody(oai, meta, r));
          res.write(streamChunk(oai, meta, h.sent, r.generated, r.finishReason ?? "length"));
          res.end(STREAM_DONE);
          return;
        }
        const final = {
          model: this.ctx.modelName,
          created_at: createdAt(),
          ...piece(stream ? h.sent : 0, r.generated),
          done: true,
          done_reason: r.finishReason === "stop" ? "stop" : "length",
          total_duration: 0,
          load_duration: 0,
          prompt_eval_count: r.promptTokens,
          eval_count: r.generated,
        };
        if (!stream) return sendJson(res, 200, final);
        res.end(`${JSON.stringify(final)}\n`);
      },
    });
  }
}
