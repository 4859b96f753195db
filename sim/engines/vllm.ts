/**
 * vLLM's OpenAI-compatible API server (0.29) over the shared engine core: /metrics (its exposition
 * is sim/metrics.ts), /health, /version, the sleep mode endpoints, /v1/models, /v1/completions,
 * /v1/chat/completions (streaming too) and /v1/embeddings for a pooling model.
 *
 * - The run-time modes are the core's (sim/model.ts); two are this server's own: "slow-metrics"
 *   (/metrics answers late, /health at once) and "no-metrics" (/metrics is another app's 404).
 * - A restart answers every in-flight completion with vLLM's shutdown 500 (a stream ends with an
 *   error event); a crash just drops the connections.
 * - Asleep (POST /sleep), requests pend: they neither fail nor wake the engine until /wake_up.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { filterExposition, renderMetricsBody, sampleNamesOf } from "../metrics";
import { BadRequest, STREAM_DONE, completionBody, errorBody, parseCompletionAsk, streamChunk, type CompletionAsk, type ResponseMeta } from "../openai";
import { answerError, readJson, sendJson } from "../reply";
import { HeldRequests, Parked, type Held } from "./held";
import type { EngineFront, FrontContext, FrontMode, FrontRequestKind } from "./types";

export const VLLM_VERSION = "0.29.0";
const SHUTDOWN_MESSAGE = "cannot schedule new futures after shutdown";
const NOT_FOUND = { detail: "Not Found" };
const METHOD_NOT_ALLOWED = { detail: "Method Not Allowed" };
const EXPOSITION = "text/plain; version=0.0.4; charset=utf-8";

export class VllmFront implements EngineFront {
  readonly kind = "vllm" as const;
  readonly listensWhileLoading = false;
  /** One API server process has its process_* families; several (multiprocess metrics) have none. */
  readonly exposesProcessStartTime: boolean;
  /** In-flight completions, answered when the core finishes them (and counted in /metrics). */
  private readonly held: HeldRequests;
  /** Requests that came while the engine sleeps: they pend until /wake_up (not counted in flight). */
  private readonly asleep = new Parked();
  private nextId = 1;
  private readonly pooling: boolean;
  private readonly sleepMode: boolean;
  private readonly slowMetricsSeconds: number;

  constructor(private readonly ctx: FrontContext) {
    this.held = new HeldRequests(ctx.model);
    this.exposesProcessStartTime = !ctx.model.opts.multiApiServer;
    this.pooling = ctx.opts.pooling ?? false;
    this.sleepMode = ctx.opts.sleepMode ?? true;
    this.slowMetricsSeconds = ctx.opts.slowMetricsSeconds ?? 60;
  }

  private get model() {
    return this.ctx.model;
  }

  kindOf(path: string): FrontRequestKind {
    if (path === "/metrics" || path === "/metrics/") return "metrics";
    if (path === "/health") return "health";
    if (path === "/v1/models") return "models";
    // Every request that takes a slot (a probe of any kind).
    if (path === "/v1/completions" || path === "/v1/chat/completions" || path === "/v1/embeddings" || path === "/generate") return "completion";
    return "other";
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    try {
      await this.route(req, res, path, method);
    } catch (err) {
      answerError(res, err);
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    if (path === "/metrics") return this.handleMetrics(res, method);
    // vLLM >= 0.8.3: an exact /metrics is prometheus_fastapi_instrumentator's route (the query is
    // ignored); /metrics/ is prometheus_client's app mounted behind it, which honours name[].
    if (path === "/metrics/") return this.handleMetrics(res, method, sampleNamesOf(req.url));
    if (path === "/health") return routeGet(res, method, () => res.writeHead(200, { "content-length": 0 }).end());
    if (path === "/version") return routeGet(res, method, () => sendJson(res, 200, { version: VLLM_VERSION }));
    if (this.sleepMode && (path === "/sleep" || path === "/wake_up" || path === "/is_sleeping")) return this.handleSleep(req, res, path, method);
    if (path.startsWith("/v1/")) return await this.handleOpenAi(req, res, path, method);
    sendJson(res, 404, NOT_FOUND);
  }

  // ---- lifecycle (the server's) ---------------------------------------------------------------

  /** vLLM keeps nothing of its own across processes: the core's counters start again. */
  newProcess(): void {}

  handlesMode(_mode: string): _mode is FrontMode {
    return false;
  }

  setMode(mode: FrontMode): void {
    throw new Error(`vLLM has no "${mode}" mode`);
  }

  onLiveMode(): void {}

  async shutdown(kind: "restart" | "crash" | "close"): Promise<void> {
    this.asleep.drop();
    await this.held.release(kind === "restart" ? (h) => this.fail500(h) : undefined);
  }

  private fail500(h: Held): void {
    if (h.res.headersSent) {
      // A stream cannot change its status any more: end it with an error event, as vLLM does.
      h.res.end(`data: ${JSON.stringify({ error: errorBody(SHUTDOWN_MESSAGE, "InternalServerError", 500) })}\n\n`);
    } else {
      sendJson(h.res, 500, { error: SHUTDOWN_MESSAGE }, { connection: "close" });
    }
  }

  inFlight(): number {
    return this.held.size;
  }

  /** vLLM adds nothing to the simulator's state. */
  state(): null {
    return null;
  }

  // ---- routes ---------------------------------------------------------------------------------

  /**
   * vLLM's sleep mode (checked against 0.29 and docs/features/sleep_mode.md): POST /sleep?level=1|2,
   * POST /wake_up, GET /is_sleeping. /health keeps answering 200; requests that come meanwhile pend.
   */
  private handleSleep(req: IncomingMessage, res: ServerResponse, path: string, method: string): void {
    if (path === "/is_sleeping") return routeGet(res, method, () => sendJson(res, 200, { is_sleeping: this.model.sleepLevel > 0 }));
    if (method !== "POST") return sendJson(res, 405, METHOD_NOT_ALLOWED);
    if (path === "/sleep") {
      const level = new URL(req.url ?? "/", "http://sim").searchParams.get("level") ?? "1";
      if (level !== "1" && level !== "2") return sendJson(res, 400, { error: `level must be 1 or 2, got ${level}` });
      this.model.sleep(level === "2" ? 2 : 1);
      return void res.writeHead(200, { "content-length": 0 }).end();
    }
    // Wake the engines, then submit what pended meanwhile.
    this.model.wake();
    this.asleep.resume();
    res.writeHead(200, { "content-length": 0 }).end();
  }

  /** `names`: the samples asked for on /metrics/ (prometheus_client's filter), undefined for everything. */
  private handleMetrics(res: ServerResponse, method: string, names?: ReadonlySet<string>): void {
    routeGet(res, method, () => {
      if (this.model.mode === "slow-metrics") {
        // An API server too busy to answer /metrics in time (a huge tokenization, a blocked event
        // loop), while /health answers at once.
        const timer = setTimeout(() => {
          if (res.destroyed) return;
          const body = renderMetricsBody(this.model, { openConnections: this.held.size });
          res.writeHead(200, { "content-type": EXPOSITION, "content-length": body.length });
          res.end(body);
        }, this.slowMetricsSeconds * 1000);
        res.on("close", () => clearTimeout(timer));
        return;
      }
      if (this.model.mode === "no-metrics") {
        // What a server without vLLM's metrics answers: another app's HTML 404.
        const html = "<html>\n<head><title>404 Not Found</title></head>\n<body>\n<center><h1>404 Not Found</h1></center>\n</body>\n</html>\n";
        res.writeHead(404, { "content-type": "text/html; charset=utf-8", "content-length": Buffer.byteLength(html) });
        res.end(html);
        return;
      }
      let body = renderMetricsBody(this.model, { openConnections: this.held.size });
      // Several API servers are prometheus_client's multiprocess mode, whose collector has no
      // names: a filtered answer is an empty 200 (prometheus_client < 0.25, or without
      // support_collectors_without_names).
      if (names) body = this.exposesProcessStartTime ? filterExposition(body, names) : Buffer.alloc(0);
      res.writeHead(200, { "content-type": EXPOSITION, "content-length": body.length });
      res.end(body);
    });
  }

  private async handleOpenAi(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    const apiKey = this.ctx.opts.apiKey;
    if (apiKey !== undefined && req.headers.authorization !== `Bearer ${apiKey}`) {
      return sendJson(res, 401, { error: "Unauthorized" });
    }
    const modelName = this.ctx.modelName;
    if (path === "/v1/models") {
      this.model.recordHttp(path, method, 200);
      return routeGet(res, method, () =>
        sendJson(res, 200, {
          object: "list",
          data: [
            {
              id: modelName,
              object: "model",
              created: Math.floor(this.model.processStartTime),
              owned_by: "vllm",
              root: modelName,
              parent: null,
              max_model_len: this.model.opts.engine.maxModelLen,
              permission: [],
            },
          ],
        }),
      );
    }
    if (path === "/v1/embeddings") return this.handleEmbeddings(req, res, method);
    const chat = path === "/v1/chat/completions";
    if (!chat && path !== "/v1/completions") return sendJson(res, 404, NOT_FOUND);
    // A pooling model has no completion routes at all (vLLM registers them only for generate).
    if (this.pooling) return sendJson(res, 404, NOT_FOUND);
    if (method !== "POST") return sendJson(res, 405, METHOD_NOT_ALLOWED);
    let ask: CompletionAsk;
    try {
      ask = parseCompletionAsk(await readJson(req), chat, this.model.opts.engine.maxModelLen);
      if (ask.model !== undefined && ask.model !== modelName)
        throw new BadRequest(`The model \`${ask.model}\` does not exist.`, 404, "NotFoundError");
    } catch (err) {
      if (err instanceof BadRequest) this.model.recordHttp(path, method, err.status);
      throw err;
    }
    if (res.destroyed || req.socket.destroyed) return; // the client left while we read its body
    // Asleep: the request pends until /wake_up; it neither fails nor wakes the engine.
    this.asleep.answerWhen(this.model.sleepLevel === 0, res, () => this.startCompletion(ask, chat, path, res));
  }

  private startCompletion(ask: CompletionAsk, chat: boolean, path: string, res: ServerResponse): void {
    const meta: ResponseMeta = { id: `${chat ? "chatcmpl" : "cmpl"}-sim${this.nextId++}`, created: Math.floor(this.model.now() / 1000), model: this.ctx.modelName };
    // Held until the core finishes it; a client that hangs up (a probe's timeout) frees the slot, as vLLM aborts the request.
    this.held.hold(
      res,
      path,
      { promptTokens: ask.promptTokens, maxTokens: ask.maxTokens, stopAfter: ask.stopAfter },
      {
        ...(ask.stream && { onTokens: (_h: Held, from: number, to: number) => void res.write(streamChunk(ask, meta, from, to, null)) }),
        onFinish: (h, r) => {
          this.model.recordHttp(path, "POST", 200);
          if (!ask.stream) return sendJson(res, 200, completionBody(ask, meta, r));
          res.write(streamChunk(ask, meta, h.sent, r.generated, r.finishReason ?? "length"));
          res.end(STREAM_DONE);
        },
      },
    );
    if (ask.stream) {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
      res.flushHeaders();
    }
  }

  /**
   * POST /v1/embeddings: a pooling model answers with one vector (the prompt is one prefill, done at
   * once unless the engine is hung or asleep, then it pends); a generative model has no such route.
   */
  private async handleEmbeddings(req: IncomingMessage, res: ServerResponse, method: string): Promise<void> {
    if (!this.pooling) return sendJson(res, 404, NOT_FOUND);
    if (method !== "POST") return sendJson(res, 405, METHOD_NOT_ALLOWED);
    const modelName = this.ctx.modelName;
    const body = (await readJson(req)) as { input?: unknown; model?: unknown };
    if (typeof body.input !== "string" && !Array.isArray(body.input)) throw new BadRequest("input is required");
    if (body.model !== undefined && body.model !== modelName) throw new BadRequest(`The model \`${String(body.model)}\` does not exist.`, 404, "NotFoundError");
    const answer = () => {
      if (res.destroyed) return;
      this.model.recordHttp("/v1/embeddings", "POST", 200);
      sendJson(res, 200, {
        id: `embd-sim${this.nextId++}`,
        object: "list",
        created: Math.floor(this.model.now() / 1000),
        model: modelName,
        data: [{ index: 0, object: "embedding", embedding: [0.0123, -0.0456, 0.0789, 0.1011] }],
        usage: { prompt_tokens: 1, total_tokens: 1, completion_tokens: 0, prompt_tokens_details: null },
      });
    };
    if (this.model.sleepLevel > 0) return this.asleep.answerWhen(false, res, answer);
    // A hung engine never runs the prefill: the request pends until the client gives up.
    if (this.model.mode === "hang" || this.model.mode === "waiting-hang" || this.model.mode === "wedged") return;
    answer();
  }
}

/** GET (or HEAD) only, else FastAPI's 405. */
function routeGet(res: ServerResponse, method: string, answer: () => void): void {
  if (method !== "GET" && method !== "HEAD") return sendJson(res, 405, METHOD_NOT_ALLOWED);
  answer();
}
