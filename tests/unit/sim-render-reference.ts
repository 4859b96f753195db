/**
 * The oracle of tests/unit/sim-render.test.ts: the simulator's vLLM renderer and float formatting
 * as they were before the render was made cheaper (sim/metrics.ts and sim/format.ts at
 * commit 02deccd), kept verbatim but for the names. The test asserts the new renderer writes the
 * very same bytes for many fixed and random states. Not used by the product; do not "fix" it: any
 * change to the simulator's exposition must be a deliberate change of this file too.
 */
import type { Engine } from "@/sim/engine";
import { FINISH_REASONS } from "@/sim/engine";
import type { Histogram } from "@/sim/histogram";
import type { VllmSimModel } from "@/sim/model";

type Labels = Record<string, string>;
/** Python's repr() of a float: shortest round-trip digits, "1.0" for integers, exponent outside 1e-4..1e16. */
function pythonFloatRepr(d: number): string {
  if (Number.isNaN(d)) return "nan";
  if (!Number.isFinite(d)) return d > 0 ? "inf" : "-inf";
  if (Number.isInteger(d) && Math.abs(d) < 1e16) return d.toFixed(1);
  const [mantissa, expText] = d.toExponential().split("e");
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) {
    const sign = exp < 0 ? "-" : "+";
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  return String(d); // JS and Python agree on fixed notation in this exponent range
}

/**
 * prometheus_client's floatToGoString: Python repr, but Go switches to an exponent sooner, so a
 * positive value with more than 6 digits before the dot is rewritten as "d.ddd" + "e+0" + digits.
 */
export function referenceFormatValue(d: number): string {
  // Fast path for the common case (counts): small non-negative integers print as "N.0".
  if (Number.isInteger(d) && d >= 0 && d < 1e6) return `${d}.0`;
  if (d === Infinity) return "+Inf";
  if (d === -Infinity) return "-Inf";
  if (Number.isNaN(d)) return "NaN";
  const s = pythonFloatRepr(d);
  const dot = s.indexOf(".");
  if (d > 0 && dot > 6) {
    const mantissa = `${s[0]}.${s.slice(1, dot)}${s.slice(dot + 1)}`.replace(/[0.]+$/, "");
    return `${mantissa}e+0${dot - 1}`;
  }
  return s;
}

function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

export function referenceFormatLabels(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return "";
  return `{${keys.map((k) => `${k}="${escapeLabelValue(labels[k])}"`).join(",")}}`;
}

type MetricType = "counter" | "gauge" | "histogram" | "summary";

/** Accumulates exposition lines; one family = HELP + TYPE + its samples, as the Python client writes. */
class Exposition {
  private readonly lines: string[] = [];

  family(name: string, type: MetricType, help: string): this {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Labels, value: number): this {
    this.lines.push(`${name}${referenceFormatLabels(labels)} ${referenceFormatValue(value)}`);
    return this;
  }

  /** A sample whose label set is already formatted (hot loops: histogram buckets of 1000 backends). */
  sampleFormatted(name: string, labelText: string, value: number): this {
    this.lines.push(`${name}${labelText} ${referenceFormatValue(value)}`);
    return this;
  }

  text(): string {
    return this.lines.length ? `${this.lines.join("\n")}\n` : "";
  }
}

const HISTOGRAMS: Array<[name: string, help: string, pick: (e: Engine) => Histogram]> = [
  ["vllm:request_prompt_tokens", "Number of prefill tokens processed.", (e) => e.stats.requestPromptTokens],
  ["vllm:request_generation_tokens", "Number of generation tokens processed.", (e) => e.stats.requestGenerationTokens],
  ["vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", (e) => e.stats.iterationTokens],
  ["vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", (e) => e.stats.requestMaxTokens],
  ["vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", (e) => e.stats.timeToFirstToken],
  ["vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", (e) => e.stats.interTokenLatency],
  ["vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", (e) => e.stats.e2eLatency],
  ["vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", (e) => e.stats.queueTime],
  ["vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", (e) => e.stats.inferenceTime],
  ["vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", (e) => e.stats.prefillTime],
  ["vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", (e) => e.stats.decodeTime],
];

export function referenceRenderMetrics(model: VllmSimModel, extra: { openConnections?: number } = {}): string {
  const x = new Exposition();
  const { modelName, multiApiServer, engine: cfg } = model.opts;
  const engineLabels = (i: number): Labels => ({ engine: String(i), model_name: modelName });
  const start = model.processStartTime;
  const uptime = Math.max(0, model.now() / 1000 - start);
  // Counters are created when the engine comes up, shortly after the process starts.
  const created = start + 1.5;
  const engines = model.engines;

  /** A counter family and, unless multiprocess, its `_created` gauge family. */
  const counter = (base: string, help: string, samples: Array<[Labels, number]>, withCreated = true) => {
    x.family(`${base}_total`, "counter", help);
    for (const [l, v] of samples) x.sample(`${base}_total`, l, v);
    if (multiApiServer || !withCreated) return;
    x.family(`${base}_created`, "gauge", help);
    samples.forEach(([l], i) => x.sample(`${base}_created`, l, created + i * 1e-4));
  };
  const gauge = (name: string, help: string, samples: Array<[Labels, number]>) => {
    x.family(name, "gauge", help);
    for (const [l, v] of samples) x.sample(name, l, v);
  };
  const perEngine = (f: (e: Engine) => number): Array<[Labels, number]> => engines.map((e, i) => [engineLabels(i), f(e)]);

  // Multiprocess mode (several API servers) has neither the process nor the platform collector.
  if (!multiApiServer) {
    const gens = ["0", "1", "2"];
    // The GC collector is a custom collector: no _created families, as in a real scrape.
    counter("python_gc_objects_collected", "Objects collected during gc", gens.map((g, i) => [{ generation: g }, Math.floor((40000 + uptime * 3) / (i * 6 + 1))]), false);
    counter("python_gc_objects_uncollectable", "Uncollectable objects found during GC", gens.map((g) => [{ generation: g }, 0]), false);
    counter("python_gc_collections", "Number of times this generation was collected", gens.map((g, i) => [{ generation: g }, Math.floor((2000 + uptime) / (i * 10 + 1))]), false);
    gauge("python_info", "Python platform information", [[{ implementation: "CPython", major: "3", minor: "12", patchlevel: "13", version: "3.12.13" }, 1]]);
    gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", [[{}, 2.3467474944e10]]);
    gauge("process_resident_memory_bytes", "Resident memory size in bytes.", [[{}, 3.145728e9]]);
    gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", [[{}, start]]);
    x.family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
    x.sample("process_cpu_seconds_total", {}, Math.round((20 + uptime * 0.35) * 100) / 100);
    gauge("process_open_fds", "Number of open file descriptors.", [[{}, 55 + (extra.openConnections ?? 0)]]);
    gauge("process_max_fds", "Maximum number of open file descriptors.", [[{}, 1048576]]);
  }

  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", perEngine((e) => e.numRunning));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", perEngine((e) => e.numWaiting));
  gauge(
    "vllm:num_requests_waiting_by_reason",
    "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
    engines.flatMap((e, i): Array<[Labels, number]> => [
      [{ ...engineLabels(i), reason: "capacity" }, e.numWaiting - e.numDeferred],
      [{ ...engineLabels(i), reason: "deferred" }, e.numDeferred],
    ]),
  );
  gauge(
    "vllm:engine_sleep_state",
    "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
    engines.flatMap((e, i): Array<[Labels, number]> => [
      [{ ...engineLabels(i), sleep_state: "awake" }, e.sleepLevel === 0 ? 1 : 0],
      [{ ...engineLabels(i), sleep_state: "weights_offloaded" }, e.sleepLevel === 1 ? 1 : 0],
      [{ ...engineLabels(i), sleep_state: "discard_all" }, e.sleepLevel === 2 ? 1 : 0],
    ]),
  );
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", perEngine((e) => e.kvCacheUsage));
  counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", perEngine((e) => e.stats.prefixCacheQueries));
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", perEngine(() => 0));
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", perEngine((e) => e.preemptions));
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", perEngine((e) => e.stats.promptTokens));
  counter("vllm:generation_tokens", "Number of generation tokens processed.", perEngine((e) => e.stats.generationTokens));
  counter(
    "vllm:request_success",
    "Count of successfully processed requests.",
    engines.flatMap((e, i) => FINISH_REASONS.map((r): [Labels, number] => [{ ...engineLabels(i), finished_reason: r }, e.stats.finished[r]])),
  );

  for (const [name, help, pick] of HISTOGRAMS) {
    x.family(name, "histogram", help);
    engines.forEach((e, i) => {
      const h = pick(e);
      const bucketLabels = bucketLabelTexts(modelName, i, h.bounds);
      h.cumulative().forEach(([, n], b) => x.sampleFormatted(`${name}_bucket`, bucketLabels[b], n));
      x.sample(`${name}_count`, engineLabels(i), h.count);
      x.sample(`${name}_sum`, engineLabels(i), h.sum);
    });
    if (!multiApiServer) gauge(`${name}_created`, help, perEngine(() => created));
  }

  gauge(
    "vllm:cache_config_info",
    "Information of the LLMEngine CacheConfig",
    engines.map((_, i): [Labels, number] => [
      {
        block_size: String(cfg.blockSize),
        cache_dtype: "auto",
        enable_prefix_caching: "True",
        engine: String(i),
        gpu_memory_utilization: "0.9",
        is_attention_free: "False",
        num_cpu_blocks: "None",
        num_gpu_blocks: String(cfg.kvCacheBlocks),
        num_gpu_blocks_override: "None",
        sliding_window: "None",
      },
      1,
    ]),
  );

  const http = [...model.httpRequests.values()];
  if (http.length) {
    const help = "Total number of requests by method, status and handler.";
    x.family("http_requests_total", "counter", help);
    for (const h of http) x.sample("http_requests_total", { handler: h.handler, method: h.method, status: h.status }, h.count);
    if (!multiApiServer) {
      x.family("http_requests_created", "gauge", help);
      for (const h of http) x.sample("http_requests_created", { handler: h.handler, method: h.method, status: h.status }, h.created);
    }
  }
  return x.text();
}

/**
 * Formatted label sets of one histogram's buckets, `le` printed like the Python client ("1.0",
 * "0.005", "+Inf"). Memoised: they never change, and formatting them on every scrape dominated
 * the render cost with a thousand simulated backends in one process.
 */
const bucketLabelCache = new Map<string, string[]>();
function bucketLabelTexts(modelName: string, engine: number, bounds: readonly number[]): string[] {
  const key = `${modelName}\u0000${engine}\u0000${bounds.join(",")}`;
  let texts = bucketLabelCache.get(key);
  if (!texts) {
    texts = [...bounds, Infinity].map((b) => referenceFormatLabels({ engine: String(engine), le: referenceFormatValue(b), model_name: modelName }));
    if (bucketLabelCache.size > 10_000) bucketLabelCache.clear(); // bound it if names keep changing
    bucketLabelCache.set(key, texts);
  }
  return texts;
}
