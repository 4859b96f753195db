/**
 * From a parsed /metrics body to the few vLLM numbers stepwatch judges a backend by (VllmMetrics).
 *
 * Every family is summed over ALL its label sets: a data-parallel server exposes one series per
 * `engine`, and the served `model_name` may differ between series; looking at engine="0" alone would
 * call a server idle while engine 1 is full.
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
 */
import { capList } from "../check/caps";
import { parsePrometheus, type ParseResult, type Sample } from "./prometheus";
import { extractVllmLatency, type VllmLatency } from "./vllm-latency";

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

export interface VllmExtraction {
  metrics: VllmMetrics | null;
  /** Why metrics is null (absent when metrics is set, or when the body simply has no vLLM series). */
  error?: string;
  /** Values that were present but unusable and were treated as missing, one line each. */
  warnings: string[];
}

const VLLM_PREFIX = "vllm:";

/**
 * prometheus_client exposes a `<family>_created` gauge (a creation timestamp) next to every counter,
 * histogram and summary. It is not a reading and must never be summed into one.
 */
const isCreated = (name: string) => name.endsWith("_created");

type Check = "count" | "fraction" | "timestamp";

/**
 * Counts stop at 2^53: past it a float cannot show "+1", so a counter there could never show
 * progress (a false "stuck"), and two engines at 1e308 would sum to Infinity.
 */
const MAX_COUNT = Number.MAX_SAFE_INTEGER;

const VALID: Record<Check, (v: number) => boolean> = {
  count: (v) => Number.isFinite(v) && v >= 0 && v <= MAX_COUNT,
  fraction: (v) => Number.isFinite(v) && v >= 0 && v <= 1,
  timestamp: (v) => Number.isFinite(v) && v > 0,
};

const EXPECTED: Record<Check, string> = {
  count: "a finite number >= 0 (at most 2^53)",
  fraction: "a fraction in 0..1",
  timestamp: "a positive unix time",
};

/** The samples of one series name, from an index built once per body. */
type Index = Map<string, Sample[]>;

function buildIndex(samples: Sample[]): Index {
  const index: Index = new Map();
  for (const s of samples) {
    if (isCreated(s.name)) continue;
    const list = index.get(s.name);
    if (list) list.push(s);
    else index.set(s.name, [s]);
  }
  return index;
}

const showSample = (s: Sample) => {
  const labels = Object.entries(s.labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
  return `${s.name}${labels ? `{${labels}}` : ""} = ${s.value}`;
};

/**
 * Combines every series of `name`: "absent" when there is none, "invalid" (with why) when any
 * series fails `check`, otherwise the sum, mean or max.
 */
function combine(
  index: Index,
  name: string,
  check: Check,
  how: "sum" | "mean" | "max",
): { kind: "absent" } | { kind: "invalid"; why: string } | { kind: "ok"; value: number } {
  const series = index.get(name);
  if (!series || series.length === 0) return { kind: "absent" };
  let total = 0;
  let max = -Infinity;
  for (const s of series) {
    if (!VALID[check](s.value)) {
      const others = series.length > 1 ? ` (${series.length} series; one bad series spoils the family)` : "";
      return { kind: "invalid", why: `${showSample(s)} is not ${EXPECTED[check]}${others}` };
    }
    total += s.value;
    if (s.value > max) max = s.value;
  }
  if (check === "count" && total > MAX_COUNT) {
    return { kind: "invalid", why: `the ${series.length} series of ${name} add up past 2^53` };
  }
  const value = how === "sum" ? total : how === "mean" ? total / series.length : max;
  return { kind: "ok", value };
}

/** An optional field: null when absent or unusable (the latter with a warning). */
function optional(
  index: Index,
  name: string,
  check: Check,
  how: "sum" | "mean" | "max",
  warnings: string[],
): number | null {
  const r = combine(index, name, check, how);
  if (r.kind === "ok") return r.value;
  if (r.kind === "invalid") warnings.push(`${name} ignored: ${r.why}`);
  return null;
}

/** Like extractVllm, with the reasons: why there are no metrics, and which values were ignored. */
export function extractVllmDetailed(result: ParseResult): VllmExtraction {
  const warnings: string[] = [];
  const index = buildIndex(result.samples);

  const models = new Set<string>();
  let vllmSeries = 0;
  for (const [name, series] of index) {
    if (!name.startsWith(VLLM_PREFIX)) continue;
    vllmSeries += series.length;
    for (const s of series) {
      const model = s.labels.model_name;
      if (model !== undefined) models.add(model);
    }
  }
  if (vllmSeries === 0) return { metrics: null, warnings };

  // The load gauges decide whether stepwatch may send a request: required, never defaulted to 0.
  const load: Record<"running" | "waiting", number> = { running: 0, waiting: 0 };
  for (const [field, name] of [
    ["running", "vllm:num_requests_running"],
    ["waiting", "vllm:num_requests_waiting"],
  ] as const) {
    const r = combine(index, name, "count", "sum");
    if (r.kind === "absent") {
      return { metrics: null, warnings, error: `vLLM metrics without ${name}: cannot tell a busy server from an idle one` };
    }
    if (r.kind === "invalid") {
      return { metrics: null, warnings, error: `unusable ${name}: ${r.why}; cannot tell a busy server from an idle one` };
    }
    load[field] = r.value;
  }

  // kv usage is a 0..1 fraction per engine: the server-wide figure is the mean (8 engines at 50% are
  // half full, not 400%). vLLM V1 renamed gpu_cache_usage_perc to kv_cache_usage_perc; some bodies
  // (Datadog's mixed fixture) carry both, and the newer name wins.
  let kvCacheUsage = optional(index, "vllm:kv_cache_usage_perc", "fraction", "mean", warnings);
  if (kvCacheUsage === null) kvCacheUsage = optional(index, "vllm:gpu_cache_usage_perc", "fraction", "mean", warnings);

  const metrics: VllmMetrics = {
    // One process normally exposes one start time; if several appear, the newest process is the one
    // whose restart matters. Absent under multiprocess API servers (prometheus_client multiproc mode).
    processStartTime: optional(index, "process_start_time_seconds", "timestamp", "max", warnings),
    running: load.running,
    waiting: load.waiting,
    // Engine steps: the histogram's _count, one observation per engine step: unlike output
    // tokens it also advances while a long prompt is being read.
    steps: optional(index, "vllm:iteration_tokens_total_count", "count", "sum", warnings),
    promptTokens: optional(index, "vllm:prompt_tokens_total", "count", "sum", warnings),
    generationTokens: optional(index, "vllm:generation_tokens_total", "count", "sum", warnings),
    finishedRequests: optional(index, "vllm:request_success_total", "count", "sum", warnings),
    kvCacheUsage,
    // Bounded (lib/check/caps): a hostile exposition with 30,000 model_name labels stays small.
    models: capList([...models].sort()),
  };
  return { metrics, warnings };
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
  /** The latency histograms and counters of the same body (nothing here decides a state). */
  latency?: VllmLatency;
}

const quote = (s: string) => `'${s.length > 40 ? `${s.slice(0, 40)}...` : s}'`;

/**
 * Body of GET /metrics -> vLLM numbers. A body where unparseable lines outnumber samples (an HTML
 * error page, JSON, a truncated binary) is "not Prometheus text", not a server with no load.
 */
export function parseVllmMetrics(text: string): VllmParse {
  const parsed = parsePrometheus(text);
  const sampleCount = parsed.samples.length;
  const errorCount = parsed.errorCount;
  const first = parsed.errors[0];
  const firstError = first ? ` (first: line ${first.line} ${quote(first.text)}: ${first.message})` : "";
  const base = { sampleCount, errorCount };

  if (sampleCount === 0 && errorCount === 0) {
    const error = text.trim() === "" ? "empty /metrics body" : "not Prometheus text: no samples, only comments";
    return { ...base, metrics: null, warnings: [], error };
  }
  if (sampleCount === 0 || errorCount > sampleCount) {
    const lines = sampleCount + errorCount;
    return {
      ...base,
      metrics: null,
      warnings: [],
      error: `not Prometheus text: ${errorCount} of ${lines} lines unparseable${firstError}`,
    };
  }

  const extraction = extractVllmDetailed(parsed);
  const warnings = [...extraction.warnings];
  if (errorCount > 0) warnings.unshift(`${errorCount} unparseable line${errorCount === 1 ? "" : "s"} skipped${firstError}`);
  if (extraction.metrics === null && extraction.error === undefined) {
    return {
      ...base,
      metrics: null,
      warnings,
      error: `no vLLM metrics (found ${sampleCount} series, none named vllm:*)`,
    };
  }
  const latency = extraction.metrics ? { latency: extractVllmLatency(parsed) } : {};
  return { ...base, metrics: extraction.metrics, warnings, ...latency, ...(extraction.error ? { error: extraction.error } : {}) };
}
