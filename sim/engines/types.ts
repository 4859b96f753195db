/**
 * What the simulator needs from one engine's "front": the HTTP surface and exposition of vLLM,
 * llama.cpp, SGLang, TGI or Ollama, over the shared engine core (sim/model.ts: slots, queue, steps).
 *
 * The server (sim/server.ts) keeps the socket, the lifecycle (restart, crash, recover) and the
 * admin API for every engine; a front only answers the engine's own routes and keeps the counters
 * that engine keeps on top of the core.
 * What each front reproduces, and from which source line, is in docs/engines.md ("Simulator").
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { VllmSimModel } from "../model";
import type { FrontMode, LiveMode } from "../modes";

export const ENGINE_KINDS = ["vllm", "llamacpp", "sglang", "tgi", "ollama"] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];

export { FRONT_MODES, type FrontMode } from "../modes";

/** Kinds of request in the simulator's received log (the server's RequestKind). */
export type FrontRequestKind = "metrics" | "health" | "models" | "completion" | "admin" | "other";

/**
 * Engine-specific knobs; each front reads the ones that are its own. vLLM's are also top-level
 * options of startSimulator (SimulatorOptions, where they are described): they came first.
 */
export interface FrontOptions {
  /** --api-key. vLLM: /v1/* needs "Authorization: Bearer <apiKey>". llama.cpp: every route but /health and /v1/health needs it, as Bearer or X-Api-Key. */
  apiKey?: string;
  /** vLLM: a pooling (embedding) model: /v1/embeddings and no completion routes. Default false. */
  pooling?: boolean;
  /** vLLM: the sleep mode endpoints (/sleep, /wake_up, /is_sleeping). Default true. */
  sleepMode?: boolean;
  /** vLLM: in mode "slow-metrics", how long /metrics takes to answer (default 60 s). */
  slowMetricsSeconds?: number;
  /**
   * llama.cpp --sleep-idle-seconds: sleep by itself after this many seconds without a task
   * (undefined: never, like the default -1). /metrics counts as a task in the versions that wake.
   */
  sleepIdleSeconds?: number;
  /**
   * llama.cpp: does a /metrics read wake a sleeping server? true (default) for builds from #18228
   * (Dec 2025, b74xx) up to #27376 (Aug 2026), where only /health and /props are exempt; false for
   * later builds, which answer /metrics from a cache while asleep.
   */
  metricsWakeFromSleep?: boolean;
  /**
   * llama.cpp: the exposition of server_task_result_metrics::to_metrics() (later 2026 builds: new
   * help texts, prompt_tokens_cached_total, spec_decode_*, n_busy_slots_per_decode as a gauge);
   * implies metricsWakeFromSleep false unless that is set. Default false: the all_metrics_def
   * exposition of the builds between #18228 and #27376.
   */
  toMetrics?: boolean;
  /** Wall seconds a wake-up (model reload) keeps the waking request waiting (default 2). */
  wakeSeconds?: number;
  /**
   * SGLang: expose the per-pass progress counters of newer releases (cuda_graph_passes_total,
   * realtime_tokens_total). false (default) is v0.5.10, the release of the real fixture.
   */
  progressCounters?: boolean;
  /** SGLang: wall seconds /health answers 503 after the port opens (the warmup request). Default 1. */
  warmupSeconds?: number;
  /** SGLang: seconds /health waits for the scheduler before answering 503 (SGLANG_HEALTH_CHECK_TIMEOUT, default 20). */
  healthCheckTimeoutSeconds?: number;
  /** Ollama: OLLAMA_KEEP_ALIVE in seconds (default 300): unloaded ("sleep") that long after the last request. */
  keepAliveSeconds?: number;
  /** Ollama: wall seconds a request waits while an unloaded model loads (default 2). */
  loadSeconds?: number;
}

/** What a front adds to the simulator's state (GET /_sim/state, `engineState`). */
export interface FrontState {
  engine: EngineKind;
  sleeping: boolean;
  /** Answering "Loading model" (llama.cpp) until this wall time (ms), else null. */
  loadingUntil: number | null;
  /**
   * Every request that woke a sleeping server (llama.cpp) or loaded an unloaded model (Ollama):
   * a test asserts stepwatch never appears here.
   */
  wokenBy: Array<{ method: string; path: string; at: number }>;
  /** The engine's own process identity as it exposes it (llama.cpp's header value, else null). */
  processStartHeader: string | null;
}

export interface FrontContext {
  model: VllmSimModel;
  modelName: string;
  opts: FrontOptions;
}

export interface EngineFront {
  readonly kind: EngineKind;
  /** llama.cpp binds its port first and answers 503 while the model loads; the others refuse. */
  readonly listensWhileLoading: boolean;
  /** Whether /metrics carries process_start_time_seconds (the simulator's state says so). */
  readonly exposesProcessStartTime: boolean;
  /** Answer one request outside /_sim/, errors included (in the engine's shape). The model has been advanced to now. */
  handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void>;
  kindOf(path: string): FrontRequestKind;
  /** A new process: the engine's own counters start again; it loads for `loadSeconds` if it listens meanwhile. */
  newProcess(loadSeconds: number): void;
  /** Whether this front implements `mode` itself (else the server applies it to the core). */
  handlesMode(mode: string): mode is FrontMode;
  setMode(mode: FrontMode, opts: { forSeconds?: number }): void;
  /** The server applied a live mode to the core ("normal" also ends sleep and loading). */
  onLiveMode(mode: LiveMode): void;
  /** The socket is about to close: answer (restart) or drop (crash, close) every held request. */
  shutdown(kind: "restart" | "crash" | "close"): Promise<void>;
  /** Requests held open now (the server's httpInFlight). */
  inFlight(): number;
  /** What the engine adds to the simulator's state; null when nothing (vLLM). */
  state(): FrontState | null;
}
