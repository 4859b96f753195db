/**
 * One simulated model server over real HTTP (node:http): the process around an engine. It owns the
 * socket, the port, the lifecycle (restart, crash, recover), the admin API under /_sim/ (admin.ts)
 * and the received log, and hands every other request to the engine's front (sim/engines/: vLLM
 * by default, or llama.cpp, SGLang, TGI, Ollama).
 *
 * Restart and crash really close the listening socket (connection refused, as while vLLM loads its
 * weights) and reopen on the same port. Everything a test needs to prove stepwatch's rule "a check
 * must not use what it protects" is recorded: every request, with the load at the moment it came.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { DEFAULT_ENGINE_CONFIG, type EngineConfig, type RequestSpec } from "./engine";
import { VllmSimModel } from "./model";
import { LIVE_MODES, SIM_MODES, type LiveMode, type SimMode } from "./modes";
import { ADMIN_PREFIX, handleAdmin } from "./admin";
import { answerError } from "./reply";
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
  /** --api-key. vLLM: /v1/* needs "Authorization: Bearer <apiKey>" (/metrics and /health need none); llama.cpp: every route but /health (Bearer or X-Api-Key). */
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
  /** Knobs of the other engines (llama.cpp's sleep, SGLang's newer counters...); vLLM's are the options above. */
  engineOptions?: FrontOptions;
}


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

/**
 * The front's knobs: the engine's own (engineOptions) and vLLM's, which are top-level options
 * (they came before the other engines did).
 */
function frontOptions(opts: SimulatorOptions): FrontOptions {
  const out: FrontOptions = { ...opts.engineOptions };
  if (opts.apiKey !== undefined) out.apiKey = opts.apiKey;
  if (opts.pooling !== undefined) out.pooling = opts.pooling;
  if (opts.sleepMode !== undefined) out.sleepMode = opts.sleepMode;
  if (opts.slowMetricsSeconds !== undefined) out.slowMetricsSeconds = opts.slowMetricsSeconds;
  return out;
}

class SimulatorImpl implements Simulator {
  readonly host: string;
  readonly modelName: string;
  readonly model: VllmSimModel;
  readonly engine: EngineKind;
  /** The engine's own routes and exposition. */
  private readonly front: EngineFront;
  port: number;
  private server: http.Server | null = null;
  /** "loading" until the first listen, like a vLLM process that is still loading its weights. */
  private currentPhase: SimPhase = "loading";
  private phaseTimer: NodeJS.Timeout | null = null;
  private listeningWaiters: Array<() => void> = [];
  private log: ReceivedRequest[] = [];
  private readonly weightsLoadSeconds: number;
  private readonly logLimit: number;
  private readonly keepAliveMs: number;

  constructor(opts: SimulatorOptions) {
    this.host = opts.host ?? "127.0.0.1";
    this.port = opts.port ?? 0;
    this.weightsLoadSeconds = opts.weightsLoadSeconds ?? 180;
    this.logLimit = opts.logLimit ?? 10_000;
    this.keepAliveMs = (opts.httpKeepAliveSeconds ?? 5) * 1000;
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
      multiApiServer: opts.multiApiServer ?? false,
      ...(opts.clock && { clock: opts.clock }),
    });
    this.modelName = this.model.opts.modelName;
    this.front = createFront(this.engine, { model: this.model, modelName: this.modelName, opts: frontOptions(opts) });
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
   * Close the listening socket: stop accepting first, as a process that is going away does; then
   * the front answers what it holds (a restart's last words, e.g. vLLM's shutdown 500) or drops it
   * (a crash); then every connection left is cut.
   */
  private async shutdown(kind: "restart" | "crash" | "close"): Promise<void> {
    const server = this.server;
    this.server = null;
    const closed = server && new Promise<void>((resolve) => server.close(() => resolve()));
    await this.front.shutdown(kind);
    if (!server) return;
    server.closeAllConnections();
    await closed;
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
    const listensWhileLoading = this.front.listensWhileLoading;
    this.front.newProcess(listensWhileLoading ? seconds : 0);
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
    this.front.newProcess(0);
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
    // A front that does not have a mode says so, which is not to say the mode is not one of FrontMode:
    // ask through a plain string so the "no" does not narrow `mode` below.
    const asked: string = mode;
    if (this.front.handlesMode(asked)) return this.front.setMode(asked, opts);
    if (!(LIVE_MODES as readonly string[]).includes(mode)) {
      // Engines that refuse while they load (vLLM, SGLang, TGI): loading is a restart.
      if (mode === "loading") return this.restart({ weightsLoadSeconds: opts.forSeconds });
      // Without a front of its own, a blocked loop looks like any hang from outside.
      if (mode === "blocked") return this.setMode("hang", opts);
      throw new Error(`simulator mode "${String(mode)}" does not exist for ${this.engine}; one of ${SIM_MODES.join(", ")}`);
    }
    this.model.setMode(mode as LiveMode, opts);
    this.front.onLiveMode(mode as LiveMode);
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
      exposesProcessStartTime: this.front.exposesProcessStartTime,
      generation: this.model.generation,
      received: this.log.length,
      completionsReceivedWhileBusy: this.completionsReceivedWhileBusy().length,
      httpInFlight: this.front.inFlight(),
      engine: this.engine,
      engineState: this.front.state(),
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
    // The admin API is this server's, whatever the engine; every other path is the engine's to name.
    const kind: RequestKind = path.startsWith(ADMIN_PREFIX) ? "admin" : this.front.kindOf(path);
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
      await this.front.handle(req, res, path, method);
    } catch (err) {
      // The admin API's errors (a front answers its own, in its engine's shape).
      answerError(res, err);
    }
  }
}

/** Start one simulated server (vLLM unless `engine` says otherwise); resolves when it listens. */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const sim = new SimulatorImpl(opts);
  await sim.start();
  return sim;
}
