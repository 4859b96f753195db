/**
 * SGLang (--enable-metrics). Read from python/sglang/srt/metrics/collector.py, the scheduler's
 * metrics mixin, and the real v0.5.10.post1 scrape in tests/fixtures/real-metrics; see docs/engines.md.
 *
 * The traps:
 * - `generation_tokens_total` / `prompt_tokens_total` / `num_requests_total` are counted when a
 *   request finishes: flat during one long generation. Progress is `cuda_graph_passes_total` (each
 *   forward pass) or `realtime_tokens_total{mode}`; without either (0.5.10), `gen_throughput` > 0
 *   that changed since the last read.
 * - Every gauge is refreshed only when the scheduler logs (every 40 decode steps, or ~30 s idle),
 *   so `gen_throughput` keeps its last value when nothing logs any more: an unchanged positive
 *   value is not progress. The stuck window is therefore at least 150 s (rules below).
 * - Always multiprocess: no process_start_time_seconds; a restart shows as counters going down.
 * - One series per rank: tensor-parallel ranks of one data-parallel group report the same batch
 *   (the largest is taken), data-parallel groups are added.
 * - Because the scheduler's gauges are written only when it logs, a server that just took work still
 *   says 0 running until its first decode log. `http_requests_active{endpoint}` (kept by the HTTP
 *   server, at once) is live: generation requests in flight beyond what the gauges show count as
 *   waiting, so such a server is never taken for idle (and never probed).
 */
import { detach } from "../metrics/prometheus";
import type { EngineAdapter } from "./adapter";
import { isValid, type Check, type Index } from "./series";
import type { EngineMetrics, EvidenceFigure } from "../core/engine";

export const SGLANG_PREFIX = "sglang:";

/** SGLang's routes that run a generation or an embedding (each in flight is a request of the engine's). */
const GENERATION_ENDPOINTS = /^\/(generate|encode|classify|v1\/(chat\/)?completions|v1\/embeddings|v1\/responses|v1\/rerank)$/;

type Figure = { kind: "absent" } | { kind: "invalid"; why: string } | { kind: "ok"; value: number };

/** Max within a data-parallel group (its tensor-parallel ranks see one batch), then sum or mean over groups. */
function perGroup(index: Index, name: string, check: Check, across: "sum" | "mean", pick?: (l: Record<string, string>) => boolean): Figure {
  const series = (index.get(name) ?? []).filter((s) => !pick || pick(s.labels));
  if (series.length === 0) return { kind: "absent" };
  const groups = new Map<string, number>();
  for (const s of series) {
    if (!isValid(check, s.value)) return { kind: "invalid", why: `${name} = ${s.value} is not usable (one bad series spoils the family)` };
    const g = s.labels.dp_rank ?? "0";
    groups.set(g, Math.max(groups.get(g) ?? -Infinity, s.value));
  }
  let total = 0;
  for (const v of groups.values()) total += v;
  return { kind: "ok", value: across === "sum" ? total : total / groups.size };
}

function opt(f: Figure, name: string, warnings: string[]): number | null {
  if (f.kind === "invalid") warnings.push(`${name} ignored: ${f.why}`);
  return f.kind === "ok" ? f.value : null;
}

export const sglangAdapter: EngineAdapter = {
  kind: "sglang",
  prefix: SGLANG_PREFIX,
  families: new Set([
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:http_requests_active",
    "sglang:cuda_graph_passes_total",
    "sglang:realtime_tokens_total",
    "sglang:prompt_tokens_total",
    "sglang:generation_tokens_total",
    "sglang:num_requests_total",
    "sglang:token_usage",
    "sglang:gen_throughput",
  ]),
  rules: {
    minStuckWindowSeconds: 150,
    livenessPath: "/v1/models",
    probe: "openai",
    metricsFlag: "--enable-metrics",
    // --decode-log-interval's default: the scheduler writes its gauges every 40 decode passes.
    updates: { schedulerLogSteps: 40 },
  },
  reads: { metricsPath: "/metrics" },
  extract(index) {
    const warnings: string[] = [];
    const load: Record<"running" | "waiting", number> = { running: 0, waiting: 0 };
    for (const [field, name] of [
      ["running", "sglang:num_running_reqs"],
      ["waiting", "sglang:num_queue_reqs"],
    ] as const) {
      const f = perGroup(index, name, "count", "sum");
      if (f.kind === "absent") return { metrics: null, warnings, error: `SGLang metrics without ${name}: cannot tell a busy server from an idle one` };
      if (f.kind === "invalid") return { metrics: null, warnings, error: `unusable ${name}: ${f.why}; cannot tell a busy server from an idle one` };
      load[field] = f.value;
    }
    // Requests the HTTP server holds right now, on the generation endpoints (not /metrics, /health...).
    let active = 0;
    for (const a of index.get("sglang:http_requests_active") ?? []) {
      if (isValid("count", a.value) && GENERATION_ENDPOINTS.test(a.labels.endpoint ?? "")) active += a.value;
    }
    if (active > load.running + load.waiting) load.waiting = active - load.running;
    const counter = (name: string, pick?: (l: Record<string, string>) => boolean) => opt(perGroup(index, name, "count", "sum", pick), name, warnings);
    const passes = counter("sglang:cuda_graph_passes_total");
    const realtimePrompt = counter("sglang:realtime_tokens_total", (l) => l.mode === "prefill_compute");
    const realtimeDecode = counter("sglang:realtime_tokens_total", (l) => l.mode === "decode");
    const realtime = realtimePrompt !== null || realtimeDecode !== null;
    const evidence: EvidenceFigure[] = [];
    if (passes !== null) evidence.push("steps");
    if (realtime) evidence.push("promptTokens", "generationTokens");
    if (evidence.length === 0) evidence.push("throughput");
    const models = new Set<string>();
    for (const s of index.get("sglang:num_running_reqs") ?? []) if (s.labels.model_name && !models.has(s.labels.model_name)) models.add(detach(s.labels.model_name)); // a copy: see vllm.ts
    const metrics: EngineMetrics = {
      processStartTime: null,
      running: load.running,
      waiting: load.waiting,
      steps: passes,
      // Without the realtime counters these move only when a request finishes: shown as rates,
      // never evidence (see `evidence`).
      promptTokens: realtime ? realtimePrompt : counter("sglang:prompt_tokens_total"),
      generationTokens: realtime ? realtimeDecode : counter("sglang:generation_tokens_total"),
      finishedRequests: counter("sglang:num_requests_total"),
      kvCacheUsage: opt(perGroup(index, "sglang:token_usage", "fraction", "mean"), "sglang:token_usage", warnings),
      throughput: opt(perGroup(index, "sglang:gen_throughput", "rate", "sum"), "sglang:gen_throughput", warnings),
      models: [...models].sort(),
      evidence,
      // Forward passes on every decode batch (process_batch_result_decode ->
      // increment_decode_cuda_graph_pass); realtime tokens when the scheduler logs (the family's
      // HELP says so); the *_tokens_total / num_requests_total counters when a request finishes.
      cadence: {
        steps: "step",
        promptTokens: realtime ? "scheduler-log" : "request-end",
        generationTokens: realtime ? "scheduler-log" : "request-end",
        finishedRequests: "request-end",
        throughput: "scheduler-log",
      },
    };
    return { metrics, warnings };
  },
};
