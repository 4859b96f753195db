import type { EngineKind, EngineMetrics } from "./engine";
import type { VllmLatency } from "./latency";
import type { FetchOutcome } from "./fetch";
import type { BackendState, Health } from "./states";

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
  /** The probe timed out while stepwatch's own event loop was this late (ms): it says nothing about the engine (lib/check/late.ts). */
  watcherLateMs?: number;
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
  /**
   * A request of this read timed out while stepwatch's own event loop was this late past the
   * deadline (ms, lib/net/http.ts LATE_DEADLINE_MS): the read is kept and shown, never judged
   * (lib/check/late.ts).
   */
  watcherLateMs?: number;
  /**
   * vLLM's cumulative latency histograms, finish reasons and preemptions from the same /metrics
   * body (lib/metrics/vllm-latency.ts). Kept in memory for the next read's deltas, not stored in
   * the sample's reading JSON (the per-interval figures are stored in columns instead).
   */
  latency?: VllmLatency;
  /**
   * The exposition's body as read (cut at MAX_RAW_BODY_CHARS, lib/core/evidence.ts), only when the
   * read was asked to keep it (ReadOptions.keepBody: the watcher, for evidence bundles). The watcher
   * takes it off the reading at once (lib/watcher/monitors.ts): it is never stored with a sample
   * nor judged.
   */
  rawBody?: string;
}

export interface Thresholds {
  stuckAfterSeconds: number;
  idleProbeSeconds: number;
  recoveryTimeoutSeconds: number;
  /** A refusing (down) backend gets a restart recommendation only after this long: it may be loading weights. */
  startupGraceSeconds?: number;
}

/** The one home of the thresholds' defaults: the config's DEFAULTS and the CLI both take them from here. */
export const DEFAULT_THRESHOLDS = {
  stuckAfterSeconds: 120,
  idleProbeSeconds: 60,
  recoveryTimeoutSeconds: 900,
  startupGraceSeconds: 600,
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

/**
 * The id of every rule that leaves a reason, kebab-case, one per distinct rule: tests assert the id,
 * people read the text. docs/states.md names each id beside its rule (a test holds the two to one
 * list). Grouped by the rule numbers of docs/states.md.
 */
export const RULES = [
  // 1. the probe, and probes that cannot succeed (a configuration problem)
  "probe-none",
  "probe-auth",
  "metrics-auth",
  "probe-no-endpoint",
  // 2. idle
  "probe-answered",
  "not-probed",
  "idle-loop-answered",
  // 3. busy
  "progress",
  "no-change-expected",
  // 4. stalled / stuck (and llama.cpp's blocked engine loop)
  "work-arrived",
  "no-progress",
  "queued-not-scheduled",
  "no-progress-stalled",
  "no-progress-stuck",
  "progress-unreadable",
  "no-judgeable-figure",
  "loop-blocked",
  "loop-blocked-stalled",
  "loop-blocked-stuck",
  // 5. idle and the probe fails
  "probe-failed-once",
  "probe-failed-stuck",
  // 6. starting
  "new-process",
  "starting-no-progress",
  "starting-probe-failed",
  "loading",
  // 7. down, and a slow /metrics that is not
  "down-refused",
  "down-grace",
  "down-past-grace",
  "down-timeout",
  "metrics-timeout",
  // 8. sleeping
  "sleeping",
  // 9. deferred waiting
  "deferred-only",
  // 10. data parallel: one line per engine, and the sums
  "dp-stuck",
  "dp-stalled",
  "dp-unreadable",
  "dp-progress",
  "dp-work-arrived",
  "dp-all-progress",
  "dp-total",
  // 11. no metrics
  "no-metrics",
  "no-metrics-alive",
  "no-metrics-unreachable",
  // 12. unknown
  "first-read",
  "one-failed-read",
  "cannot-judge",
  // 13. restarting
  "restart-recovered",
  "restart-waiting",
  // 14. seen late
  "watcher-late",
  // proxies (lib/check/proxy.ts)
  "proxy-up",
  "proxy-failed",
  "proxy-one-miss",
  "proxy-down",
  // outside the classifier: nothing read yet (the fleet, a restart's evidence), the CLI's widened
  // --wait, a restart action that failed (its notification), a crash loop (a flag beside the state,
  // lib/core/crash-loop.ts: its notification) and a row stored before reasons had ids
  "not-read-yet",
  "check-wait-widened",
  "restart-action-failed",
  "restart-outcome-unknown",
  "crash-loop",
  "unclassified",
] as const;
export type RuleId = (typeof RULES)[number];

/** One line of a verdict's evidence: the rule that fired (for code and tests) and its words (for people). */
export interface Reason {
  rule: RuleId;
  text: string;
}

export function reason(rule: RuleId, text: string): Reason {
  return { rule, text };
}

const RULE_SET: ReadonlySet<string> = new Set(RULES);

/**
 * Reasons as read back from a stored row (a transition, a restart's evidence, a notification): rows
 * written before reasons had ids hold plain strings, which become `unclassified`; anything else
 * that is not a reason (a hand-edited row) is dropped, never thrown on.
 */
export function normaliseReasons(x: unknown): Reason[] {
  if (!Array.isArray(x)) return [];
  const out: Reason[] = [];
  for (const r of x) {
    if (typeof r === "string") out.push({ rule: "unclassified", text: r });
    else if (r && typeof r === "object" && typeof (r as Reason).text === "string") {
      const rule = (r as Reason).rule;
      out.push({ rule: typeof rule === "string" && RULE_SET.has(rule) ? rule : "unclassified", text: (r as Reason).text });
    }
  }
  return out;
}

/** The reasons' words, for a person: one line per reason joined by `sep`. */
export function reasonText(reasons: readonly Reason[], sep = "; "): string {
  return reasons.map((r) => r.text).join(sep);
}

export interface Verdict {
  state: BackendState;
  health: Health;
  healthy: boolean;
  restartRecommended: boolean;
  /** The evidence, one reason per rule that fired: its rule id and a line a person can read. */
  reasons: Reason[];
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
  /** As Reading.watcherLateMs: its timeout was seen late, so it is not judged. */
  watcherLateMs?: number;
}
