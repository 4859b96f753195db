/**
 * The simulated vLLM server over real HTTP (node:http): /metrics, /health, /v1/models,
 * /v1/completions, /v1/chat/completions (streaming too), and an admin API under /_sim/ (admin.ts).
 *
 * Restart and crash really close the listening socket (connection refused, as while vLLM loads its
 * weights) and reopen on the same port. Everything a test needs to prove stepwatch's rule "a check
 * must not use what it protects" is recorded: every request, with the load at the moment it came.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { DEFAULT_ENGINE_CONFIG, type EngineConfig, type RequestSpec } from "./engine";
import { renderMetricsBody } from "./metrics";
import { LIVE_MODES, SIM_MODES, VllmSimModel, type LiveMode, type SimMode, type SubmittedRequest } from "./model";
import {
  BadRequest,
  STREAM_DONE,
  completionBody,
  errorBody,
  parseCompletionAsk,
  streamChunk,
  type CompletionAsk,
  type ResponseMeta,
} from "./openai";
import { subscribeTick } from "./ticker";
import { ADMIN_PREFIX, handleAdmin } from "./admin";
import { HttpError, readJson, sendJson } from "./reply";
import { ENGINE_CONFIG_DEFAULTS, createFront, type EngineFront, type EngineKind, type FrontOptions } from "./engines";
import type { LoadSpec, ReceivedRequest, RequestKind, SimPhase, SimState, Simulator } from "./types";

// The handle's words live in types.ts (the admin API needs them without the server); importable from here.
export type { LoadSpec, ReceivedRequest, RequestKind, SimPhase, SimState, Simulator } from "./types";

export interface SimulatorOptions {
  /** 0 (default) = an ephemeral port, kept across restarts. */
  port?: number;
  host?: string;
  modelName?: string;
  /** Data-parallel ranks (one metrics series each). */
  engines?: number;
  maxNumSeqs?: number;
  singleRequestTokensPerSecond?: number;
  totalTokensPerSecondAtLimit?: number;
  prefillTokensPerSecond?: number;
  chunkSize?: number;
  blockSize?: number;
  kvCacheBlocks?: number;
  maxModelLen?: number;
  /** Wall seconds nothing listens after a restart (default 180: ~19 GB of weights on a GB10). */
  weightsLoadSeconds?: number;
  /** Engine seconds per wall second. Does not shorten weightsLoadSeconds. */
  timeScale?: number;
  /** vLLM with several API server processes: no process_start_time_seconds. */
  multiApiServer?: boolean;
  /** When set, /v1/* needs "Authorization: Bearer <apiKey>" (vLLM --api-key; /metrics and /health need none). */
  apiKey?: string;
  /**
   * A pooling (embedding) model: no completion routes (404, as vLLM registers none for it), and
   * POST /v1/embeddings answers. Default false: a generative model, where /v1/embeddings is 404.
   */
  pooling?: boolean;
  /** vLLM sleep mode endpoints (/sleep, /wake_up, /is_sleeping; VLLM_SERVER_DEV_MODE=1 --enable-sleep-mode). Default true. */
  sleepMode?: boolean;
  /** In mode "slow-metrics", how long /metrics takes to answer (default 60 s). */
  slowMetricsSeconds?: number;
  /** Wall clock, ms since epoch. */
  clock?: () => number;
  /** Most requests kept in the received log (oldest dropped first). */
  logLimit?: number;
  /**
   * How long an idle HTTP keep-alive connection stays open, in seconds (default 5: node's default,
   * and uvicorn's, so vLLM's unless VLLM_HTTP_TIMEOUT_KEEP_ALIVE says otherwise). Not Ollama's
   * OLLAMA_KEEP_ALIVE (engineOptions.keepAliveSeconds), which unloads a model.
   */
  httpKeepAliveSeconds?: number;
  /** Which engine's endpoints and exposition to speak (default vLLM); see sim/engines/. */
  engine?: EngineKind;
  /** Knobs of the non-vLLM engines (llama.cpp's sleep, SGLang's newer counters...). */
  engineOptions?: FrontOptions;
}


interface InFlight {
  sub: SubmittedRequest;
  ask: CompletionAsk;
  meta: ResponseMeta;
  handler: string;
  res: ServerResponse;
  /** Output tokens already streamed. */
  sent: number;
  done: boolean;
}

const SHUTDOWN_MESSAGE = "cannot schedule new futures after shutdown";

function listen(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      server.off("listening", onListening);
      reject(err);
    };
    const onListening = () => {
      server.off("error", onError);
      resolve((server.address() as AddressInfo).port);
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(port, host);
  });
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A socket's idle keep-alive timer (see keepIdleConnection). */
const IDLE = Symbol("idle keep-alive timer");

function kindOf(path: string): RequestKind {
  if (path === "/metrics") return "metrics";
  if (path === "/health") return "health";
  if (path === "/v1/models") return "models";
  // Every request that takes a slot (a probe of any kind).
  if (path === "/v1/completions" || path === "/v1/chat/completions" || path === "/v1/embeddings" || path === "/generate") return "completion";
  if (path.startsWith(ADMIN_PREFIX)) return "admin";
  return "other";
}

class SimulatorImpl implements Simulator {
  readonly host: string;
  readonly modelName: string;
  readonly model: VllmSimModel;
  readonly engine: EngineKind;
  /** The engine's own routes and exposition; null for vLLM (this class's own handlers). */
  private readonly front: EngineFront | null;
  port: number;
  private server: http.Server | null = null;
  /** "loading" until the first listen, like a vLLM process that is still loading its weights. */
  private currentPhase: SimPhase = "loading";
  private readonly inflight = new Set<InFlight>();
  private unsubscribe: (() => void) | null = null;
  private phaseTimer: NodeJS.Timeout | null = null;
  private listeningWaiters: Array<() => void> = [];
  private log: ReceivedRequest[] = [];
  private nextId = 1;
  private readonly weightsLoadSeconds: number;
  private readonly apiKey: string | undefined;
  private readonly logLimit: number;
  private readonly multiApiServer: boolean;
  private readonly keepAliveMs: number;
  private readonly pooling: boolean;
  private readonly sleepMode: boolean;
  private readonly slowMetricsSeconds: number;
  /** Requests that came while the engine sleeps: they pend (neither fail nor wake it) until /wake_up. */
  private parked: Array<() => void> = [];

  constructor(opts: SimulatorOptions) {
    this.host = opts.host ?? "127.0.0.1";
    this.port = opts.port ?? 0;
    this.weightsLoadSeconds = opts.weightsLoadSeconds ?? 180;
    this.apiKey = opts.apiKey;
    this.logLimit = opts.logLimit ?? 10_000;
    this.multiApiServer = opts.multiApiServer ?? false;
    this.keepAliveMs = (opts.httpKeepAliveSeconds ?? 5) * 1000;
    this.pooling = opts.pooling ?? false;
    this.sleepMode = opts.sleepMode ?? true;
    this.slowMetricsSeconds = opts.slowMetricsSeconds ?? 60;
    this.engine = opts.engine ?? "vllm";
    const engine: EngineConfig = { ...DEFAULT_ENGINE_CONFIG, ...ENGINE_CONFIG_DEFAULTS[this.engine] };
    for (const key of Object.keys(engine) as Array<keyof EngineConfig>) {
      const v = opts[key];
      if (v !== undefined) engine[key] = v;
    }
    this.model = new VllmSimModel({
      ...(opts.modelName !== undefined && { modelName: opts.modelName }),
      engines: opts.engines ?? 1,
      engine,
      timeScale: opts.timeScale ?? 1,
      multiApiServer: this.multiApiServer,
      ...(opts.clock && { clock: opts.clock }),
    });
    this.modelName = this.model.opts.modelName;
    this.front = createFront(this.engine, { model: this.model, modelName: this.modelName, opts: opts.engineOptions ?? {} });
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  phase(): SimPhase {
    return this.currentPhase;
  }

  mode(): LiveMode {
    return this.model.mode;
  }

  async start(): Promise<void> {
    await this.openListener();
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  private async openListener(): Promise<void> {
    // No request/headers deadlines: a queued completion may wait for minutes, as on a loaded vLLM.
    // With no deadline to enforce, node:http's per-server checking timer is slowed to a crawl
    // (a thousand simulated backends share one process).
    const server = http.createServer(
      { requestTimeout: 0, headersTimeout: 0, connectionsCheckingInterval: 600_000 },
      (req, res) => void this.handle(req, res),
    );
    // Idle connections are closed by keepIdleConnection, as the engines' servers do; node's own
    // keep-alive timeout closes them a second later than it says (node 20: keepAliveTimeout + 1 s).
    server.keepAliveTimeout = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        this.port = await listen(server, this.port, this.host);
        break;
      } catch (err) {
        // Reopening on the same port can race the kernel releasing it: retry briefly.
        if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE" || this.port === 0 || attempt >= 50) throw err;
        await delay(100);
      }
    }
    if (this.currentPhase === "closed") {
      // close() was called while we were opening
      server.close();
      return;
    }
    this.server = server;
    this.currentPhase = "listening";
    const waiters = this.listeningWaiters;
    this.listeningWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Close the listening socket. A restart answers every in-flight completion with vLLM's shutdown
   * 500 first; a crash just drops the connections.
   */
  private async shutdown(kind: "restart" | "crash" | "close"): Promise<void> {
    const server = this.server;
    this.server = null;
    const flights = [...this.inflight];
    this.inflight.clear();
    this.parked = []; // their connections close below
    this.stopTicking();
    await this.front?.shutdown(kind);
    if (!server) {
      for (const f of flights) f.res.destroy();
      return;
    }
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    if (kind === "restart") {
      const flushed = flights.map((f) => this.fail500(f));
      await Promise.race([Promise.all(flushed), delay(1000)]);
    } else {
      for (const f of flights) {
        f.done = true;
        f.res.destroy();
      }
    }
    server.closeAllConnections();
    await closed;
  }

  private fail500(f: InFlight): Promise<void> {
    f.done = true;
    return new Promise((resolve) => {
      f.res.once("finish", resolve);
      f.res.once("close", resolve);
      if (f.res.headersSent) {
        // A stream cannot change its status any more: end it with an error event, as vLLM does.
        f.res.end(`data: ${JSON.stringify({ error: errorBody(SHUTDOWN_MESSAGE, "InternalServerError", 500) })}\n\n`);
      } else {
        sendJson(f.res, 500, { error: SHUTDOWN_MESSAGE }, { connection: "close" });
      }
    });
  }

  private clearPhaseTimer(): void {
    if (this.phaseTimer) clearTimeout(this.phaseTimer);
    this.phaseTimer = null;
  }

  private assertOpen(): void {
    if (this.currentPhase === "closed") throw new Error(`simulator ${this.url} is closed`);
  }

  async restart(opts: { weightsLoadSeconds?: number } = {}): Promise<void> {
    this.assertOpen();
    const seconds = opts.weightsLoadSeconds ?? this.weightsLoadSeconds;
    this.clearPhaseTimer();
    this.currentPhase = "loading";
    await this.shutdown("restart");
    if (this.phase() !== "loading") return; // closed meanwhile
    const keepNoMetrics = this.model.mode === "no-metrics";
    // The new process starts now, then loads its weights: nothing listens meanwhile.
    this.model.startNewProcess();
    if (keepNoMetrics) this.model.setMode("no-metrics"); // a server without metrics stays one
    // llama.cpp binds its port before it loads the model (503 meanwhile); vLLM, SGLang, TGI do not.
    const listensWhileLoading = this.front?.listensWhileLoading ?? false;
    this.front?.newProcess(listensWhileLoading ? seconds : 0);
    this.phaseTimer = setTimeout(
      () => {
        this.phaseTimer = null;
        this.openListener().catch((err) => console.error(`[sim] ${this.url} could not listen again:`, err));
      },
      listensWhileLoading ? 0 : seconds * 1000,
    );
  }

  async crash(opts: { forSeconds?: number } = {}): Promise<void> {
    this.assertOpen();
    this.clearPhaseTimer();
    this.currentPhase = "crashed";
    await this.shutdown("crash");
    if (this.phase() !== "crashed") return;
    if (opts.forSeconds !== undefined) {
      this.phaseTimer = setTimeout(() => {
        this.phaseTimer = null;
        this.recover().catch((err) => console.error(`[sim] ${this.url} could not recover:`, err));
      }, opts.forSeconds * 1000);
    }
  }

  async recover(): Promise<void> {
    this.assertOpen();
    if (this.currentPhase === "listening") return;
    this.clearPhaseTimer();
    const keepNoMetrics = this.model.mode === "no-metrics";
    this.model.startNewProcess();
    if (keepNoMetrics) this.model.setMode("no-metrics");
    this.front?.newProcess(0);
    await this.openListener();
  }

  whenListening(): Promise<void> {
    if (this.currentPhase === "listening") return Promise.resolve();
    if (this.currentPhase === "closed") return Promise.reject(new Error(`simulator ${this.url} is closed`));
    return new Promise((resolve) => this.listeningWaiters.push(resolve));
  }

  async setMode(mode: SimMode, opts: { waiting?: number; forSeconds?: number; weightsLoadSeconds?: number } = {}): Promise<void> {
    if (mode === "restart") return this.restart(opts);
    if (mode === "crash") return this.crash(opts);
    if (this.front?.handlesMode(mode)) return this.front.setMode(mode, opts);
    if (!(LIVE_MODES as readonly string[]).includes(mode)) {
      // Engines that refuse while they load (vLLM, SGLang, TGI): loading is a restart.
      if (mode === "loading") return this.restart({ weightsLoadSeconds: opts.forSeconds });
      // Without a front of its own, a blocked loop looks like any hang from outside.
      if (mode === "blocked") return this.setMode("hang", opts);
      throw new Error(`simulator mode "${String(mode)}" does not exist for ${this.engine}; one of ${SIM_MODES.join(", ")}`);
    }
    this.model.setMode(mode as LiveMode, opts);
    this.front?.onLiveMode(mode as LiveMode);
  }

  load(spec: LoadSpec): number {
    if (this.currentPhase !== "listening") throw new Error(`simulator ${this.url} is ${this.currentPhase}: it cannot take requests`);
    const n = Math.max(0, Math.floor(spec.requests));
    const req: RequestSpec = {
      promptTokens: spec.promptTokens ?? 1000,
      maxTokens: spec.maxTokens ?? 1000,
      stopAfter: spec.outputTokens ?? null,
    };
    for (let i = 0; i < n; i++) this.model.submit(req);
    return n;
  }

  state(): SimState {
    this.model.advance();
    const t = this.model.totals();
    return {
      url: this.url,
      port: this.port,
      modelName: this.modelName,
      phase: this.currentPhase,
      mode: this.model.mode,
      running: t.running,
      waiting: t.waiting,
      kvCacheUsage: t.kvCacheUsage,
      counters: { steps: t.steps, promptTokens: t.promptTokens, generationTokens: t.generationTokens, finished: t.finished },
      processStartTime: this.model.processStartTime,
      exposesProcessStartTime: !this.multiApiServer && this.front === null,
      generation: this.model.generation,
      received: this.log.length,
      completionsReceivedWhileBusy: this.completionsReceivedWhileBusy().length,
      httpInFlight: this.inflight.size + (this.front?.inFlight() ?? 0),
      engine: this.engine,
      engineState: this.front?.state() ?? null,
    };
  }

  received(): ReceivedRequest[] {
    return [...this.log];
  }

  completionsReceivedWhileBusy(): ReceivedRequest[] {
    return this.log.filter((r) => r.completion && (r.running > 0 || r.waiting > 0));
  }

  resetLog(): void {
    this.log = [];
  }

  async close(): Promise<void> {
    if (this.currentPhase === "closed") return;
    this.currentPhase = "closed";
    this.clearPhaseTimer();
    this.listeningWaiters = [];
    await this.shutdown("close");
  }

  // ---- HTTP -----------------------------------------------------------------------------------

  private record(req: IncomingMessage, path: string): void {
    const t = this.model.totals();
    const kind = this.front?.kindOf(path) ?? kindOf(path);
    this.log.push({
      method: req.method ?? "GET",
      path,
      at: this.model.now(),
      kind,
      completion: kind === "completion",
      running: t.running,
      waiting: t.waiting,
      mode: this.model.mode,
    });
    // Drop the oldest tenth at once so a long benchmark keeps bounded memory without O(n) per request.
    if (this.log.length > this.logLimit) this.log.splice(0, Math.ceil(this.logLimit / 10));
  }

  /**
   * An idle keep-alive connection is closed `httpKeepAliveSeconds` after its last answer, as
   * uvicorn (vLLM, SGLang) does: its timer starts when an answer is complete and stops when the
   * next request comes. uvicorn, hyper (TGI) and Go's net/http (Ollama) do not announce it; only
   * llama.cpp's cpp-httplib sends a `Keep-Alive: timeout=N` hint, which clients may trust.
   */
  private keepIdleConnection(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket as import("node:net").Socket & { [IDLE]?: NodeJS.Timeout };
    clearTimeout(socket[IDLE]);
    if (this.engine === "llamacpp") res.setHeader("keep-alive", `timeout=${Math.floor(this.keepAliveMs / 1000)}`);
    res.once("finish", () => {
      if (socket.destroyed) return;
      socket[IDLE] = setTimeout(() => socket.destroy(), this.keepAliveMs).unref();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The scrape path as is: a plain "/metrics" is its own pathname, no URL to parse (hundreds a second in a benchmark fleet).
    const path = req.url === "/metrics" ? req.url : new URL(req.url ?? "/", "http://sim").pathname;
    const method = req.method ?? "GET";
    this.model.advance();
    this.record(req, path);
    this.keepIdleConnection(req, res);
    try {
      if (path.startsWith(ADMIN_PREFIX)) return await handleAdmin(this, { weightsLoadSeconds: this.weightsLoadSeconds }, req, res, path, method);
      if (this.front) return await this.front.handle(req, res, path, method);
      if (path === "/metrics") return this.handleMetrics(res, method);
      if (path === "/health") return this.routeGet(res, method, () => res.writeHead(200, { "content-length": 0 }).end());
      if (path === "/version") return this.routeGet(res, method, () => sendJson(res, 200, { version: "0.29.0" }));
      if (this.sleepMode && (path === "/sleep" || path === "/wake_up" || path === "/is_sleeping")) return this.handleSleep(req, res, path, method);
      if (path.startsWith("/v1/")) return await this.handleOpenAi(req, res, path, method);
      sendJson(res, 404, { detail: "Not Found" });
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof BadRequest) sendJson(res, err.status, errorBody(err.message, err.type, err.status));
      else if (err instanceof HttpError) sendJson(res, err.status, { error: err.message });
      else sendJson(res, 500, { error: `simulator error: ${(err as Error).message}` });
    }
  }

  private routeGet(res: ServerResponse, method: string, answer: () => void): void {
    if (method !== "GET" && method !== "HEAD") return sendJson(res, 405, { detail: "Method Not Allowed" });
    answer();
  }

  /**
   * vLLM's sleep mode (checked against 0.29 and docs/features/sleep_mode.md): POST /sleep?level=1|2,
   * POST /wake_up, GET /is_sleeping. /health keeps answering 200; requests that come meanwhile pend.
   */
  private handleSleep(req: IncomingMessage, res: ServerResponse, path: string, method: string): void {
    if (path === "/is_sleeping") return this.routeGet(res, method, () => sendJson(res, 200, { is_sleeping: this.model.sleepLevel > 0 }));
    if (method !== "POST") return sendJson(res, 405, { detail: "Method Not Allowed" });
    if (path === "/sleep") {
      const level = new URL(req.url ?? "/", "http://sim").searchParams.get("level") ?? "1";
      if (level !== "1" && level !== "2") return sendJson(res, 400, { error: `level must be 1 or 2, got ${level}` });
      this.model.sleep(level === "2" ? 2 : 1);
      return void res.writeHead(200, { "content-length": 0 }).end();
    }
    this.wake();
    res.writeHead(200, { "content-length": 0 }).end();
  }

  /** Wake the engines and submit what pended meanwhile. */
  wake(): void {
    this.model.wake();
    const parked = this.parked;
    this.parked = [];
    for (const go of parked) go();
  }

  private handleMetrics(res: ServerResponse, method: string): void {
    this.routeGet(res, method, () => {
      if (this.model.mode === "slow-metrics") {
        // An API server too busy to answer /metrics in time (a huge tokenization, a blocked event
        // loop), while /health answers at once.
        const timer = setTimeout(() => {
          if (res.destroyed) return;
          const body = renderMetricsBody(this.model, { openConnections: this.inflight.size });
          res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": body.length });
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
      const body = renderMetricsBody(this.model, { openConnections: this.inflight.size });
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": body.length });
      res.end(body);
    });
  }

  private async handleOpenAi(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    if (this.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return sendJson(res, 401, { error: "Unauthorized" });
    }
    if (path === "/v1/models") {
      this.model.recordHttp(path, method, 200);
      return this.routeGet(res, method, () =>
        sendJson(res, 200, {
          object: "list",
          data: [
            {
              id: this.modelName,
              object: "model",
              created: Math.floor(this.model.processStartTime),
              owned_by: "vllm",
              root: this.modelName,
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
    if (!chat && path !== "/v1/completions") return sendJson(res, 404, { detail: "Not Found" });
    // A pooling model has no completion routes at all (vLLM registers them only for generate).
    if (this.pooling) return sendJson(res, 404, { detail: "Not Found" });
    if (method !== "POST") return sendJson(res, 405, { detail: "Method Not Allowed" });
    let ask: CompletionAsk;
    try {
      ask = parseCompletionAsk(await readJson(req), chat, this.model.opts.engine.maxModelLen);
      if (ask.model !== undefined && ask.model !== this.modelName)
        throw new BadRequest(`The model \`${ask.model}\` does not exist.`, 404, "NotFoundError");
    } catch (err) {
      if (err instanceof BadRequest) this.model.recordHttp(path, method, err.status);
      throw err;
    }
    if (res.destroyed || req.socket.destroyed) return; // the client left while we read its body
    if (this.model.sleepLevel > 0) {
      // Asleep: the request pends until /wake_up; it neither fails nor wakes the engine.
      this.parked.push(() => {
        if (!res.destroyed) this.startCompletion(ask, chat, path, res);
      });
      return;
    }
    this.startCompletion(ask, chat, path, res);
  }

  private startCompletion(ask: CompletionAsk, chat: boolean, path: string, res: ServerResponse): void {
    const sub = this.model.submit({ promptTokens: ask.promptTokens, maxTokens: ask.maxTokens, stopAfter: ask.stopAfter });
    const f: InFlight = {
      sub,
      ask,
      handler: path,
      res,
      sent: 0,
      done: false,
      meta: { id: `${chat ? "chatcmpl" : "cmpl"}-sim${this.nextId++}`, created: Math.floor(this.model.now() / 1000), model: this.modelName },
    };
    this.inflight.add(f);
    // The client hung up (a probe's timeout): free the slot, as vLLM aborts the request.
    res.on("close", () => {
      if (f.done) return;
      f.done = true;
      this.inflight.delete(f);
      this.model.abort(f.sub);
    });
    if (ask.stream) {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
      res.flushHeaders();
    }
    this.startTicking();
  }

  /**
   * POST /v1/embeddings: a pooling model answers with one vector (the prompt is one prefill, done at
   * once unless the engine is hung or asleep, then it pends); a generative model has no such route.
   */
  private async handleEmbeddings(req: IncomingMessage, res: ServerResponse, method: string): Promise<void> {
    if (!this.pooling) return sendJson(res, 404, { detail: "Not Found" });
    if (method !== "POST") return sendJson(res, 405, { detail: "Method Not Allowed" });
    const body = (await readJson(req)) as { input?: unknown; model?: unknown };
    if (typeof body.input !== "string" && !Array.isArray(body.input)) throw new BadRequest("input is required");
    if (body.model !== undefined && body.model !== this.modelName) throw new BadRequest(`The model \`${String(body.model)}\` does not exist.`, 404, "NotFoundError");
    const answer = () => {
      if (res.destroyed) return;
      this.model.recordHttp("/v1/embeddings", "POST", 200);
      sendJson(res, 200, {
        id: `embd-sim${this.nextId++}`,
        object: "list",
        created: Math.floor(this.model.now() / 1000),
        model: this.modelName,
        data: [{ index: 0, object: "embedding", embedding: [0.0123, -0.0456, 0.0789, 0.1011] }],
        usage: { prompt_tokens: 1, total_tokens: 1, completion_tokens: 0, prompt_tokens_details: null },
      });
    };
    if (this.model.sleepLevel > 0) return void this.parked.push(answer);
    // A hung engine never runs the prefill: the request pends until the client gives up.
    if (this.model.mode === "hang" || this.model.mode === "waiting-hang" || this.model.mode === "wedged") return;
    answer();
  }

  private startTicking(): void {
    if (!this.unsubscribe) this.unsubscribe = subscribeTick(() => this.onTick());
  }

  private stopTicking(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /** Push streamed tokens and answer finished requests; unsubscribe once nobody waits. */
  private onTick(): void {
    this.model.advance();
    for (const f of [...this.inflight]) {
      const r = f.sub.request;
      if (f.ask.stream && r.generated > f.sent && !(r.status === "finished")) {
        f.res.write(streamChunk(f.ask, f.meta, f.sent, r.generated, null));
        f.sent = r.generated;
      }
      if (r.status === "finished") this.answer(f);
    }
    if (this.inflight.size === 0) this.stopTicking();
  }

  private answer(f: InFlight): void {
    f.done = true;
    this.inflight.delete(f);
    const r = f.sub.request;
    this.model.recordHttp(f.handler, "POST", 200);
    if (!f.ask.stream) return sendJson(f.res, 200, completionBody(f.ask, f.meta, r));
    f.res.write(streamChunk(f.ask, f.meta, f.sent, r.generated, r.finishReason ?? "length"));
    f.res.end(STREAM_DONE);
  }
}

/** Start one simulated vLLM server; resolves when it listens. */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const sim = new SimulatorImpl(opts);
  await sim.start();
  return sim;
}
