import type { EngineKind, EngineMetrics } from "../engines/types";
import type { BackendState, Health } from "./states";

/** What vLLM's own /metrics says, summed over every label set (one series per data-parallel engine). */
export interface VllmMetrics {
  /** process_start_time_seconds (unix seconds); null when vLLM runs several API servers. */
  processStartTime: number | null;
  running: number;
  waiting: number;
  /** Engine steps: the _count of vllm:iteration_tokens_total. null when the family is absent. */
  steps: number | null;
  promptTokens: number | null;
  generationTokens: number | null;
  /** vllm:request_success_total summed over finished_reason. */
  finishedRequests: number | null;
  /** 0..1, from vllm:kv_cache_usage_perc or the older vllm:gpu_cache_usage_perc. */
  kvCacheUsage: number | null;
  /** Served model names seen in the model_name label. */
  models: string[];
}

/**
 * How a fetch ended. Connection-level failures are kept apart because "down" is decided from
 * them (refused/reset on two reads), while a timeout only means "slow" until stuckAfterSeconds.
 */
export type FetchOutcome =
  | "ok"
  | "refused" // ECONNREFUSED: nothing listens (vLLM loading weights, or dead)
  | "reset" // connection reset / closed mid-answer
  | "timeout" // connect, headers or body timeout
  | "http-error" // answered with a non-2xx status
  | "too-large" // the body passed the size cap
  | "error"; // anything else (DNS, TLS, redirect refused...)

/** Which request the idle probe sends (config `probe`; "auto" picks by engine and learns from 404/405). */
export const PROBE_CHOICES = ["auto", "completions", "chat", "embeddings", "none"] as const;
export type ProbeChoice = (typeof PROBE_CHOICES)[number];
/** The probes there are: OpenAI completions/chat/embeddings, and TGI's native 1-token generate. */
export type ProbeKind = "completions" | "chat" | "embeddings" | "generate";

export interface ProbeResult {
  ok: boolean;
  at: number;
  latencyMs: number;
  status?: number;
  error?: string;
  /** The request that gave this result (absent in readings stored before probes had kinds: completions). */
  kind?: ProbeKind;
  /** The probe tried first when it answered 404/405 and this one is the fallback. */
  fallbackFrom?: ProbeKind;
  /**
   * Why this probe could never have succeeded, so its failure says nothing about the engine:
   * "auth" (401/403: the configured API key is missing or wrong), "no-endpoint" (404/405 on every
   * probe there is: set `probe` in the config).
   */
  cannotSucceed?: "auth" | "no-endpoint";
}

export interface Reading {
  /** When the read started (ms since epoch). */
  at: number;
  /** The engine that answered (configured, or detected from its answers); absent when not known. */
  engine?: EngineKind;
  /** Put to sleep on purpose (vLLM engine_sleep_state, llama.cpp /props is_sleeping): never probed, never stuck. */
  asleep?: boolean;
  /** It answers but is loading its model (llama.cpp 503 "Loading model"): starting, not down. */
  loading?: boolean;
  latencyMs: number;
  /** Outcome of GET /metrics. */
  outcome: FetchOutcome;
  status?: number;
  /** Human-readable cause when outcome is not ok, or when the body is not vLLM metrics. */
  error?: string;
  /**
   * Parsed vLLM metrics; null when the fetch failed, the body did not parse, or it held no
   * vLLM series (then `noMetrics` is true).
   */
  metrics: EngineMetrics | null;
  /** The server answered /metrics but it is not vLLM's (404, HTML, another exporter). */
  noMetrics?: boolean;
  /** GET /health, asked only when /metrics failed at the connection level or timed out. */
  health?: { outcome: FetchOutcome; status?: number };
  /** Liveness of a server without load metrics: GET /v1/models (Ollama: /api/version, with /api/ps's models). */
  models?: { outcome: FetchOutcome; status?: number; ids: string[] };
  /** The idle probe, when one was sent with this read. */
  probe?: ProbeResult;
  /** Bytes read from the backend for this reading (all requests together). */
  bytes?: number;
}

export interface Thresholds {
  stuckAfterSeconds: number;
  idleProbeSeconds: number;
  recoveryTimeoutSeconds: number;
  /** A refusing (down) backend gets a restart recommendation only after this long: it may be loading weights. */
  startupGraceSeconds?: number;
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  stuckAfterSeconds: 120,
  idleProbeSeconds: 60,
  recoveryTimeoutSeconds: 900,
  startupGraceSeconds: 600,
};

export interface Rates {
  stepsPerSecond: number | null;
  generationTokensPerSecond: number | null;
  promptTokensPerSecond: number | null;
}

/** A restart confirmed from stepwatch and not yet resolved. */
export interface PendingRestart {
  requestedAt: number;
  /** The process start time seen last before the restart was asked for (null when not exposed). */
  processStartTime: number | null;
}

export interface Verdict {
  state: BackendState;
  health: Health;
  healthy: boolean;
  restartRecommended: boolean;
  /** Human-readable evidence, one line per rule that fired. */
  reasons: string[];
  /** A configuration problem that keeps stepwatch from judging (the probe needs the API key), in words. */
  configProblem?: string;
  rates: Rates;
  /** For a pending restart: a new process was seen and is serving. */
  recovered?: boolean;
  /** The readings the verdict was decided from (oldest first). */
  basis: Reading[];
}

export interface ProxyReading {
  at: number;
  latencyMs: number;
  outcome: FetchOutcome;
  status?: number;
  error?: string;
  models: string[];
}
