import type { VllmMetrics } from "../metrics/vllm";
import type { VllmLatency } from "../metrics/vllm-latency";
import type { FetchOutcome } from "../net/http";
import type { BackendState, Health } from "./states";

export interface ProbeResult {
  ok: boolean;
  at: number;
  latencyMs: number;
  status?: number;
  error?: string;
}

export interface Reading {
  /** When the read started (ms since epoch). */
  at: number;
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
  metrics: VllmMetrics | null;
  /** The server answered /metrics but it is not vLLM's (404, HTML, another exporter). */
  noMetrics?: boolean;
  /** GET /health, asked only when /metrics failed at the connection level. */
  health?: { outcome: FetchOutcome; status?: number };
  /** GET /v1/models, asked only when /metrics is not vLLM's: liveness for a no-metrics server. */
  models?: { outcome: FetchOutcome; status?: number; ids: string[] };
  /** The idle probe, when one was sent with this read. */
  probe?: ProbeResult;
  /** Bytes read from the backend for this reading (all requests together). */
  bytes?: number;
  /**
   * vLLM's cumulative latency histograms, finish reasons and preemptions from the same /metrics
   * body (lib/metrics/vllm-latency.ts). Kept in memory for the next read's deltas, not stored in
   * the sample's reading JSON (the per-interval figures are stored in columns instead).
   */
  latency?: VllmLatency;
}

export interface Thresholds {
  stuckAfterSeconds: number;
  idleProbeSeconds: number;
  recoveryTimeoutSeconds: number;
}

/** The one home of the thresholds' defaults: the config's DEFAULTS and the CLI both take them from here. */
export const DEFAULT_THRESHOLDS = {
  stuckAfterSeconds: 120,
  idleProbeSeconds: 60,
  recoveryTimeoutSeconds: 900,
} as const satisfies Thresholds;

/**
 * The figures a backend is shown and stored by: its gauges (from the reading) and its rates (from
 * the verdict). One type for the fleet row, the history point, the CLI result and the sample row.
 */
export interface Figures {
  running: number | null;
  waiting: number | null;
  stepsPerSecond: number | null;
  generationTokensPerSecond: number | null;
  promptTokensPerSecond: number | null;
  kvCacheUsage: number | null;
}

/** The figures of a reading and the verdict drawn from it (all null when there is neither). */
export function figuresOf(reading: Pick<Reading, "metrics"> | null, verdict: Pick<Verdict, "rates"> | null): Figures {
  const m = reading?.metrics ?? null;
  return {
    running: m?.running ?? null,
    waiting: m?.waiting ?? null,
    stepsPerSecond: verdict?.rates.stepsPerSecond ?? null,
    generationTokensPerSecond: verdict?.rates.generationTokensPerSecond ?? null,
    promptTokensPerSecond: verdict?.rates.promptTokensPerSecond ?? null,
    kvCacheUsage: m?.kvCacheUsage ?? null,
  };
}

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
