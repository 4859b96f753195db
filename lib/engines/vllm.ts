/**
 * vLLM's adapter: from a parsed /metrics body to the figures stepwatch judges a backend by. Checked
 * against the real V1 scrapes in tests/fixtures/real-metrics (0.29.0 and an unstated nightly) and
 * vllm/v1/metrics/loggers.py; see docs/engines.md.
 *
 * Every family is summed over ALL its label sets: a data-parallel server exposes one series per
 * `engine`, and the served `model_name` may differ between series; looking at engine="0" alone would
 * call a server idle while engine 1 is full. With two or more engines each one's figures are kept
 * too (`engines`), because one wedged engine hides behind the others' progress in the sums.
 *
 * The one design rule: an unusable number must never make a busy server look idle, because "idle" is
 * when stepwatch sends a request of its own, and on a busy server that request would queue behind the
 * load it is judging (the incident stepwatch was built after). So:
 * - `running` and `waiting` are required. If vllm:num_requests_running or vllm:num_requests_waiting is
 *   absent, or any of its series is NaN, infinite or negative, there are NO metrics (null, with an
 *   error naming the family), never a 0. Summing only the valid engines would also be wrong (engine 1
 *   NaN + engine 0 idle = "idle"), so one bad series spoils the whole family. Without metrics the
 *   caller has nothing to call "idle" from.
 * - The counters (steps, tokens, finished requests) and kv usage become null the same way (one bad
 *   series spoils the family), with a warning. Dropping just the bad engine would make the sum jump
 *   between reads, which a comparison of two reads would take for progress or for a counter reset;
 *   null means "cannot tell", as it already does for a family the server does not expose.
 *
 * What is not progress (checked on 0.29): `request_success_total{finished_reason="abort"|"error"}`
 * (clients giving up on a wedged engine), so `finishedRequests` leaves them out; and a KV-cache change
 * while `num_preemptions_total` rises (the classifier reads `preemptions`).
 */
import { MAX_ENGINE_SLICES, MAX_NAME } from "../core/caps";
import type { EngineAdapter } from "./adapter";
import { readExposition } from "./exposition";
import { buildIndex, combine, hasPrefix, labelValues, optional, type Index, type Pick } from "./series";
import { detach, type ParseResult } from "../metrics/prometheus";
import { extractVllmLatency, LATENCY_FAMILIES, LATENCY_HISTOGRAMS } from "../metrics/vllm-latency";
import type { EngineMetrics, EngineSlice } from "../core/engine";

/** What vLLM's own /metrics says (the engine-neutral shape; kept under its first name). */
export type VllmMetrics = EngineMetrics;

export interface VllmExtraction {
  metrics: VllmMetrics | null;
  /** Why metrics is null (absent when metrics is set, or when the body simply has no vLLM series). */
  error?: string;
  /** Values that were present but unusable and were treated as missing, one line each. */
  warnings: string[];
}

export const VLLM_PREFIX = "vllm:";

/**
 * The families this adapter reads, plus the four latency histograms, finish reasons and
 * preemptions that lib/metrics/vllm-latency.ts reads from the same body (the read path parses only
 * these; a 0.29 scrape's other ~60 families, most of them histogram buckets, are skipped on their name).
 */
export const VLLM_FAMILIES: ReadonlySet<string> = new Set([
  "vllm:num_requests_running",
  "vllm:num_requests_waiting",
  "vllm:num_requests_waiting_by_reason",
  "vllm:kv_cache_usage_perc",
  "vllm:gpu_cache_usage_perc",
  "vllm:engine_sleep_state",
  "vllm:iteration_tokens_total_count",
  "vllm:prompt_tokens_total",
  "vllm:generation_tokens_total",
  "vllm:request_success_total",
  "vllm:num_preemptions_total",
  "process_start_time_seconds",
  ...LATENCY_FAMILIES,
]);

/**
 * The sample names of VLLM_FAMILIES, as prometheus_client's `name[]` filter matches them: exact
 * sample names, so a histogram is its `_bucket`, `_count` and `_sum` (a family name alone returns
 * nothing). Old and new names both: an unknown name costs the server nothing.
 */
export const VLLM_SAMPLES: ReadonlySet<string> = new Set(
  [...VLLM_FAMILIES].flatMap((f) => (LATENCY_HISTOGRAMS.includes(f) ? [`${f}_bucket`, `${f}_count`, `${f}_sum`] : [f])),
);

/**
 * VLLM_SAMPLES without the latency histograms' `_bucket`/`_count`/`_sum`: what most reads ask
 * (read.ts asks the histograms once per latencyEverySeconds). Only the dashboard's percentiles come
 * from those histograms; every figure a state is judged by (running, waiting, steps, tokens,
 * finished requests, preemptions, KV usage, sleep, process start) stays in this set.
 */
export const VLLM_LEAN_SAMPLES: ReadonlySet<string> = new Set(
  [...VLLM_SAMPLES].filter((n) => !LATENCY_HISTOGRAMS.some((f) => n === `${f}_bucket` || n === `${f}_count` || n === `${f}_sum`)),
);

const filterPath = (samples: ReadonlySet<string>) => `/metrics/?${[...samples].map((n) => `name[]=${encodeURIComponent(n)}`).join("&")}`;

/**
 * vLLM ≥ 0.8.3 answers an exact `/metrics` from prometheus_fastapi_instrumentator's route, which
 * ignores the query (vllm-project/vllm#53140); `/metrics/` reaches prometheus_client's own app
 * mounted behind it, which renders only the names asked for (≥ 0.23; older ones ignore the query
 * and send everything, which read.ts recognises). About 4x fewer bytes and 2x less server CPU per
 * read; with the lean filter between two reads of the histograms, ~10x fewer bytes on average
 * (bench/read-cost.ts, bench/RESULTS.md section 7).
 */
const FILTERED_PATH = filterPath(VLLM_SAMPLES);

/** Finished requests that are not progress: the client gave up, or the request failed. */
const NOT_PROGRESS = new Set(["abort", "error"]);

/**
 * The figures of the engines `pick` keeps (all of them when it keeps every series): running and
 * waiting required (an error otherwise), the rest optional.
 */
function slice(index: Index, warnings: string[], pick?: Pick): EngineSlice | { error: string } {
  const load: Record<"running" | "waiting", number> = { running: 0, waiting: 0 };
  for (const [field, name] of [
    ["running", "vllm:num_requests_running"],
    ["waiting", "vllm:num_requests_waiting"],
  ] as const) {
    const r = combine(index, name, "count", "sum", pick);
    if (r.kind === "absent") return { error: `vLLM metrics without ${name}: cannot tell a busy server from an idle one` };
    if (r.kind === "invalid") return { error: `unusable ${name}: ${r.why}; cannot tell a busy server from an idle one` };
    load[field] = r.value;
  }
  const and = (p: Pick): Pick => (pick ? (l) => pick(l) && p(l) : p);
  // kv usage is a 0..1 fraction per engine: the server-wide figure is the mean (8 engines at 50% are
  // half full, not 400%). vLLM V1 renamed gpu_cache_usage_perc to kv_cache_usage_perc; some bodies
  // (Datadog's mixed fixture) carry both, and the newer name wins.
  let kvCacheUsage = optional(index, "vllm:kv_cache_usage_perc", "fraction", "mean", warnings, pick);
  if (kvCacheUsage === null) kvCacheUsage = optional(index, "vllm:gpu_cache_usage_perc", "fraction", "mean", warnings, pick);
  // 0.29: num_requests_waiting_by_reason{reason="capacity"|"deferred"}; "Sum of all reasons equals
  // vllm:num_requests_waiting". Only capacity waiting is the engine's to schedule.
  const waitingCapacity = optional(index, "vllm:num_requests_waiting_by_reason", "count", "sum", warnings, and((l) => l.reason === "capacity"));
  // 0.29: engine_sleep_state{sleep_state="awake"} 0 means asleep (any engine asleep: sleeping).
  const awake = index.get("vllm:engine_sleep_state")?.filter((s) => s.labels.sleep_state === "awake" && (!pick || pick(s.labels)));
  const asleep = awake && awake.length > 0 ? awake.some((s) => s.value === 0) : null;
  return {
    running: load.running,
    waiting: load.waiting,
    waitingCapacity,
    // Engine steps: the histogram's _count, one observation per engine step: unlike output
    // tokens it also advances while a long prompt is being read.
    steps: optional(index, "vllm:iteration_tokens_total_count", "count", "sum", warnings, pick),
    promptTokens: optional(index, "vllm:prompt_tokens_total", "count", "sum", warnings, pick),
    generationTokens: optional(index, "vllm:generation_tokens_total", "count", "sum", warnings, pick),
    finishedRequests: optional(index, "vllm:request_success_total", "count", "sum", warnings, and((l) => !NOT_PROGRESS.has(l.finished_reason ?? ""))),
    kvCacheUsage,
    preemptions: optional(index, "vllm:num_preemptions_total", "count", "sum", warnings, pick),
    asleep,
  };
}

function sleepLevel(index: Index): number | null {
  const states = index.get("vllm:engine_sleep_state") ?? [];
  if (states.some((s) => s.labels.sleep_state === "discard_all" && s.value === 1)) return 2;
  if (states.some((s) => s.labels.sleep_state === "weights_offloaded" && s.value === 1)) return 1;
  return null;
}

function extractFromIndex(index: Index): VllmExtraction {
  const warnings: string[] = [];
  const models = new Set<string>();
  let vllmSeries = 0;
  for (const [name, series] of index) {
    if (!name.startsWith(VLLM_PREFIX)) continue;
    vllmSeries += series.length;
    for (const s of series) {
      const model = s.labels.model_name;
      // A copy, not a slice: the Reading (kept in history) must not keep the ~36 KB body alive.
      if (model !== undefined && !models.has(model)) models.add(detach(model));
    }
  }
  if (vllmSeries === 0) return { metrics: null, warnings };

  const whole = slice(index, warnings);
  if ("error" in whole) return { metrics: null, warnings, error: whole.error };

  const metrics: VllmMetrics = {
    // One process normally exposes one start time; if several appear, the newest process is the one
    // whose restart matters. Absent under multiprocess API servers (prometheus_client multiproc mode).
    processStartTime: optional(index, "process_start_time_seconds", "timestamp", "max", warnings),
    ...whole,
    models: [...models].sort(),
    evidence: ["steps", "promptTokens", "generationTokens"],
    // V1 records its token counters from every engine step's IterationStats; request_success at a request's end.
    cadence: { steps: "step", promptTokens: "step", generationTokens: "step", finishedRequests: "request-end" },
  };
  const level = whole.asleep ? sleepLevel(index) : null;
  if (level !== null) metrics.sleepLevel = level;

  // Data parallel: one series per `engine` label. Each engine's figures, judged on their own.
  const ids = labelValues(index, "vllm:num_requests_running", "engine");
  if (ids.length > MAX_ENGINE_SLICES || ids.some((id) => id.length > MAX_NAME)) {
    // A hostile or broken exposition (lib/core/caps.ts): each engine's figures are a pass over the
    // whole body, and each would be stored. Judged on the sums, and said so.
    warnings.push(`per-engine figures not used (${ids.length} engine labels: at most ${MAX_ENGINE_SLICES}, each at most ${MAX_NAME} characters, are judged one by one); the server is judged on the sums`);
  } else if (ids.length >= 2) {
    const engines: Record<string, EngineSlice> = {};
    const ignore: string[] = []; // per-engine warnings repeat the whole body's
    let broken: string | null = null;
    for (const id of ids) {
      const e = slice(index, ignore, (l) => l.engine === id);
      if ("error" in e) {
        broken = `engine ${id}: ${e.error}`;
        break;
      }
      engines[id] = e;
    }
    // An engine without its own load gauges cannot be judged on its own: judge the sums, and say so.
    if (broken) warnings.push(`per-engine figures not used (${broken}); the server is judged on the sums`);
    else metrics.engines = engines;
  }
  return { metrics, warnings };
}

/** Like extractVllm, with the reasons: why there are no metrics, and which values were ignored. */
export function extractVllmDetailed(result: ParseResult): VllmExtraction {
  return extractFromIndex(buildIndex(result));
}

/**
 * The vLLM numbers of a parsed body. null when it has no vLLM series (no "vllm:*" name), and also
 * when vllm:num_requests_running or _waiting is absent or unusable (see the rule at the top);
 * extractVllmDetailed says which.
 */
export function extractVllm(result: ParseResult): VllmMetrics | null {
  return extractVllmDetailed(result).metrics;
}

export interface VllmParse {
  metrics: VllmMetrics | null;
  /** Why metrics is null, for a person: not Prometheus text, no vLLM series, or a missing load gauge. */
  error?: string;
  /** Unusable values treated as missing, and unparseable lines in an otherwise good body. */
  warnings: string[];
  sampleCount: number;
  errorCount: number;
}

/**
 * Body of GET /metrics -> vLLM numbers. A body where unparseable lines outnumber samples (an HTML
 * error page, JSON, a truncated binary) is "not Prometheus text", not a server with no load.
 */
export function parseVllmMetrics(text: string): VllmParse {
  let exp = readExposition(text, VLLM_FAMILIES);
  let extraction = exp.ok ? extractFromIndex(exp.index) : null;
  // No metrics from the families read: the full parse says why, in the words it always used
  // (a body with other vllm:* series only names the missing gauge; junk is junk either way).
  if (!extraction || extraction.metrics === null) {
    exp = readExposition(text);
    extraction = exp.ok ? extractFromIndex(exp.index) : null;
  }
  const base = { sampleCount: exp.sampleCount, errorCount: exp.errorCount };
  if (!exp.ok || !extraction) return { ...base, metrics: null, warnings: [], error: exp.ok ? "no vLLM metrics" : exp.error };
  const warnings = [...exp.warnings, ...extraction.warnings];
  if (extraction.metrics === null && extraction.error === undefined) {
    return { ...base, metrics: null, warnings, error: `no vLLM metrics (found ${exp.sampleCount} series, none named vllm:*)` };
  }
  return { ...base, metrics: extraction.metrics, warnings, ...(extraction.error ? { error: extraction.error } : {}) };
}

export const vllmAdapter: EngineAdapter = {
  kind: "vllm",
  prefix: VLLM_PREFIX,
  families: VLLM_FAMILIES,
  rules: { minStuckWindowSeconds: 0, livenessPath: "/health", probe: "openai", metricsFlag: null },
  reads: {
    metricsPath: "/metrics",
    filtered: {
      path: FILTERED_PATH,
      samples: VLLM_SAMPLES,
      required: ["vllm:num_requests_running", "vllm:num_requests_waiting"],
      lean: { path: filterPath(VLLM_LEAN_SAMPLES), samples: VLLM_LEAN_SAMPLES },
    },
    latency: (index) => extractVllmLatency(index) },
  extract(index) {
    if (!hasPrefix(index, VLLM_PREFIX)) return { metrics: null, warnings: [], error: "no vLLM series" };
    return extractFromIndex(index);
  },
};
