/**
 * Render a simulated server's /metrics body in vLLM V1's exposition (modelled on a real 0.29 scrape:
 * tests/fixtures/real-metrics/vllm-0.29.0-inferstack.prom). Pure: the caller advances the model first.
 *
 * Why a layout: a benchmark fleet answers hundreds of /metrics a second from one process on the
 * cores the watcher is measured on, and almost all of a ~35 KB body is the same for every answer
 * of a server of one shape (HELP and TYPE lines, names, label sets, constant samples). The
 * exposition is therefore built once per shape as static text with value slots in between, and an
 * answer only writes the values into it (tests/unit/sim-render.test.ts holds the bytes to the
 * renderer this replaced).
 */
import type { Engine } from "./engine";
import { FINISH_REASONS } from "./engine";
import { formatLabels, formatValue, type Labels, type MetricType } from "./format";
import type { Histogram } from "./histogram";
import type { VllmSimModel } from "./model";

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

/** What one answer's values are computed from. */
interface RenderContext {
  engines: Engine[];
  uptime: number;
  openConnections: number;
  /** Texts fixed for the life of one process: its start time and the counters' `_created` values. */
  process: ProcessTexts;
}
type Value = (c: RenderContext) => number;

/** A sample whose value changes, or a histogram's buckets, _count and _sum; `text` precedes the value. */
type Slot = { text: string; value: (c: RenderContext) => string } | { texts: string[]; histogram: (c: RenderContext) => Histogram };

/**
 * process_start_time_seconds and the `_created` values (start + 1.5, + i * 1e-4 for the i-th series
 * of a family), formatted once per process: they are floats in the 1e9s, the dearest to format.
 */
interface ProcessTexts {
  processStartTime: number;
  start: string;
  created: string[];
}
const processTexts = new WeakMap<VllmSimModel, ProcessTexts>();
function processTextsOf(model: VllmSimModel): ProcessTexts {
  const start = model.processStartTime;
  let texts = processTexts.get(model);
  if (texts?.processStartTime !== start) {
    // Counters are created when the engine comes up, shortly after the process starts.
    const created = start + 1.5;
    const series = Math.max(3, model.engines.length * FINISH_REASONS.length);
    texts = { processStartTime: start, start: formatValue(start), created: Array.from({ length: series }, (_, i) => formatValue(created + i * 1e-4)) };
    processTexts.set(model, texts);
  }
  return texts;
}

interface Layout {
  slots: Slot[];
  /** Static text after the last slot. */
  tail: string;
  /** Every static text is ASCII (a model name may not be): the body's UTF-8 is then its latin1. */
  ascii: boolean;
}

const NON_ASCII = /[^\x00-\x7f]/;

/**
 * Builds a layout by the calls the Python client's exposition is written with: static text is
 * accumulated until a sample whose value changes, which closes it as that slot's leading text.
 */
class LayoutBuilder {
  private readonly slots: Slot[] = [];
  private text = "";

  family(name: string, type: MetricType, help: string): void {
    this.text += `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;
  }

  /** A sample whose value is the same in every answer of this shape. */
  fixed(name: string, labels: Labels, value: number): void {
    this.text += `${name}${formatLabels(labels)} ${formatValue(value)}\n`;
  }

  sample(name: string, labels: Labels, value: Value): void {
    this.sampleText(name, labels, (c) => formatValue(value(c)));
  }

  /** A sample whose value the caller formats. */
  sampleText(name: string, labels: Labels, value: (c: RenderContext) => string): void {
    this.slots.push({ text: `${this.text}${name}${formatLabels(labels)} `, value });
    this.text = "\n";
  }

  /** `name`_bucket per bound (le as the Python client prints it), then _count and _sum. */
  histogram(name: string, labels: Labels, bounds: readonly number[], histogram: (c: RenderContext) => Histogram): void {
    const texts = [...bounds, Infinity].map((b, i) => `${i === 0 ? this.text : "\n"}${name}_bucket${formatLabels({ ...labels, le: formatValue(b) })} `);
    texts.push(`\n${name}_count${formatLabels(labels)} `, `\n${name}_sum${formatLabels(labels)} `);
    this.slots.push({ texts, histogram });
    this.text = "\n";
  }

  done(): Layout {
    const texts = [this.text, ...this.slots.flatMap((s) => ("text" in s ? [s.text] : s.texts))];
    return { slots: this.slots, tail: this.text, ascii: !texts.some((t) => NON_ASCII.test(t)) };
  }
}

function buildLayout(model: VllmSimModel): Layout {
  const x = new LayoutBuilder();
  const { modelName, multiApiServer, engine: cfg } = model.opts;
  const engineLabels = (i: number): Labels => ({ engine: String(i), model_name: modelName });
  const engineCount = model.engines.length;
  const each = <T>(f: (i: number) => T): T[] => Array.from({ length: engineCount }, (_, i) => f(i));
  /** A counter family and, unless multiprocess, its `_created` gauge family. */
  const counter = (base: string, help: string, samples: Array<[Labels, Value]>, withCreated = true) => {
    x.family(`${base}_total`, "counter", help);
    for (const [l, v] of samples) x.sample(`${base}_total`, l, v);
    if (multiApiServer || !withCreated) return;
    x.family(`${base}_created`, "gauge", help);
    samples.forEach(([l], i) => x.sampleText(`${base}_created`, l, (c) => c.process.created[i]));
  };
  const gauge = (name: string, help: string, samples: Array<[Labels, Value]>) => {
    x.family(name, "gauge", help);
    for (const [l, v] of samples) x.sample(name, l, v);
  };
  const perEngine = (f: (e: Engine) => number): Array<[Labels, Value]> => each((i) => [engineLabels(i), (c) => f(c.engines[i])]);

  // Multiprocess mode (several API servers) has neither the process nor the platform collector.
  if (!multiApiServer) {
    const gens = ["0", "1", "2"];
    // The GC collector is a custom collector: no _created families, as in a real scrape.
    counter("python_gc_objects_collected", "Objects collected during gc", gens.map((g, i) => [{ generation: g }, (c) => Math.floor((40000 + c.uptime * 3) / (i * 6 + 1))]), false);
    x.family("python_gc_objects_uncollectable_total", "counter", "Uncollectable objects found during GC");
    for (const g of gens) x.fixed("python_gc_objects_uncollectable_total", { generation: g }, 0);
    counter("python_gc_collections", "Number of times this generation was collected", gens.map((g, i) => [{ generation: g }, (c) => Math.floor((2000 + c.uptime) / (i * 10 + 1))]), false);
    x.family("python_info", "gauge", "Python platform information");
    x.fixed("python_info", { implementation: "CPython", major: "3", minor: "12", patchlevel: "13", version: "3.12.13" }, 1);
    x.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    x.fixed("process_virtual_memory_bytes", {}, 2.3467474944e10);
    x.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    x.fixed("process_resident_memory_bytes", {}, 3.145728e9);
    x.family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
    x.sampleText("process_start_time_seconds", {}, (c) => c.process.start);
    x.family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
    x.sample("process_cpu_seconds_total", {}, (c) => Math.round((20 + c.uptime * 0.35) * 100) / 100);
    gauge("process_open_fds", "Number of open file descriptors.", [[{}, (c) => 55 + c.openConnections]]);
    x.family("process_max_fds", "gauge", "Maximum number of open file descriptors.");
    x.fixed("process_max_fds", {}, 1048576);
  }

  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", perEngine((e) => e.numRunning));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", perEngine((e) => e.numWaiting));
  gauge(
    "vllm:num_requests_waiting_by_reason",
    "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
    each((i): Array<[Labels, Value]> => [
      [{ ...engineLabels(i), reason: "capacity" }, (c) => c.engines[i].numWaiting - c.engines[i].numDeferred],
      [{ ...engineLabels(i), reason: "deferred" }, (c) => c.engines[i].numDeferred],
    ]).flat(),
  );
  gauge(
    "vllm:engine_sleep_state",
    "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
    each((i): Array<[Labels, Value]> => [
      [{ ...engineLabels(i), sleep_state: "awake" }, (c) => (c.engines[i].sleepLevel === 0 ? 1 : 0)],
      [{ ...engineLabels(i), sleep_state: "weights_offloaded" }, (c) => (c.engines[i].sleepLevel === 1 ? 1 : 0)],
      [{ ...engineLabels(i), sleep_state: "discard_all" }, (c) => (c.engines[i].sleepLevel === 2 ? 1 : 0)],
    ]).flat(),
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
    each((i) => FINISH_REASONS.map((r): [Labels, Value] => [{ ...engineLabels(i), finished_reason: r }, (c) => c.engines[i].stats.finished[r]])).flat(),
  );

  for (const [name, help, pick] of HISTOGRAMS) {
    x.family(name, "histogram", help);
    model.engines.forEach((e, i) => x.histogram(name, engineLabels(i), pick(e).bounds, (c) => pick(c.engines[i])));
    if (multiApiServer) continue;
    x.family(`${name}_created`, "gauge", help);
    for (let i = 0; i < engineCount; i++) x.sampleText(`${name}_created`, engineLabels(i), (c) => c.process.created[0]);
  }

  x.family("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  for (let i = 0; i < engineCount; i++) {
    const labels: Labels = {
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
    };
    x.fixed("vllm:cache_config_info", labels, 1);
  }
  return x.done();
}

/**
 * Layouts by shape: everything a layout's static text depends on. Shared by every simulated server
 * of that shape (a fleet of 1000 identical backends keeps one).
 */
const layouts = new Map<string, Layout>();
function layoutOf(model: VllmSimModel): Layout {
  const { modelName, multiApiServer, engine: cfg } = model.opts;
  // The histograms' bounds follow from maxModelLen (sim/engine.ts EngineStats).
  const key = JSON.stringify([modelName, multiApiServer, model.engines.length, cfg.blockSize, cfg.kvCacheBlocks, cfg.maxModelLen]);
  let layout = layouts.get(key);
  if (!layout) {
    layout = buildLayout(model);
    if (layouts.size > 1000) layouts.clear(); // bound it if shapes keep changing
    layouts.set(key, layout);
  }
  return layout;
}

export function renderMetrics(model: VllmSimModel, extra: { openConnections?: number } = {}): string {
  return render(model, extra).text;
}

/**
 * The same exposition as bytes, for the HTTP answer: an ASCII body (every body unless the model
 * name is not) is copied as latin1 instead of encoded as UTF-8, the same bytes at a fraction of the
 * cost, and node writes a Buffer without encoding it again.
 */
/** The `name[]` values of a request URL, as prometheus_client reads them; undefined when none is given (everything). */
export function sampleNamesOf(url: string | undefined): ReadonlySet<string> | undefined {
  const names = new URL(url ?? "/", "http://sim").searchParams.getAll("name[]");
  return names.length > 0 ? new Set(names) : undefined;
}

/**
 * What prometheus_client's `name[]` filter leaves of an exposition: the samples whose exact name was
 * asked for, each under its family's HELP and TYPE (a family with none left is dropped whole). The
 * order is kept (the real one's is a Python set's; a reader must not rely on either).
 */
export function filterExposition(body: Buffer, names: ReadonlySet<string>): Buffer {
  const out: string[] = [];
  let comments: string[] = [];
  for (const line of body.toString("latin1").split("\n")) {
    if (line === "") continue;
    if (line.startsWith("#")) {
      // A new family's HELP starts its comments afresh.
      if (line.startsWith("# HELP ")) comments = [];
      comments.push(line);
      continue;
    }
    const end = line.search(/[{ ]/);
    if (!names.has(end < 0 ? line : line.slice(0, end))) continue;
    out.push(...comments, line);
    comments = [];
  }
  return Buffer.from(out.length > 0 ? `${out.join("\n")}\n` : "", "latin1");
}

export function renderMetricsBody(model: VllmSimModel, extra: { openConnections?: number } = {}): Buffer {
  const { text, ascii } = render(model, extra);
  return Buffer.from(text, ascii ? "latin1" : "utf8");
}

function render(model: VllmSimModel, extra: { openConnections?: number }): { text: string; ascii: boolean } {
  const c: RenderContext = {
    engines: model.engines,
    uptime: Math.max(0, model.now() / 1000 - model.processStartTime),
    openConnections: extra.openConnections ?? 0,
    process: processTextsOf(model),
  };
  const layout = layoutOf(model);
  let out = "";
  for (const slot of layout.slots) {
    if ("value" in slot) {
      out += slot.text + slot.value(c);
      continue;
    }
    const h = slot.histogram(c);
    const counts = h.bucketCounts;
    const texts = slot.texts;
    let acc = 0;
    for (let b = 0; b < counts.length; b++) {
      acc += counts[b];
      out += texts[b] + formatValue(acc);
    }
    out += texts[counts.length] + formatValue(h.count) + texts[counts.length + 1] + formatValue(h.sum);
  }
  out += layout.tail;

  // http_requests_total: its series come and go with the requests served, so it is written as is.
  let ascii = layout.ascii;
  if (model.httpRequests.size) {
    const help = "Total number of requests by method, status and handler.";
    out += `# HELP http_requests_total ${help}\n# TYPE http_requests_total counter\n`;
    for (const h of model.httpRequests.values()) out += `http_requests_total${formatLabels({ handler: h.handler, method: h.method, status: h.status })} ${formatValue(h.count)}\n`;
    if (!model.opts.multiApiServer) {
      out += `# HELP http_requests_created ${help}\n# TYPE http_requests_created gauge\n`;
      for (const h of model.httpRequests.values()) out += `http_requests_created${formatLabels({ handler: h.handler, method: h.method, status: h.status })} ${formatValue(h.created)}\n`;
    }
    for (const h of model.httpRequests.values()) ascii &&= !NON_ASCII.test(h.handler + h.method + h.status);
  }
  return { text: out, ascii };
}
