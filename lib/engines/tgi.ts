/**
 * Hugging Face text-generation-inference. Read from backends/v3/src/backend.rs and queue.rs
 * (huggingface/text-generation-inference @ db931fc, 3.3.6-dev0) and the real (truncated) scrape in
 * tests/fixtures/real-metrics; see docs/engines.md.
 *
 * Progress is `tgi_batch_inference_count{method="prefill"|"decode"}`, incremented at the start of
 * every forward call (a forward that never returns stops it), with `_success` as a second signal.
 * Request counters move when a request ends. Counters carry no `_total` suffix
 * (metrics-exporter-prometheus). No start-time metric: a restart shows as counters going down.
 */
import type { EngineAdapter } from "./adapter";
import { optional, required } from "./series";
import type { EngineMetrics } from "../core/engine";

export const TGI_PREFIX = "tgi_";

export const tgiAdapter: EngineAdapter = {
  kind: "tgi",
  prefix: TGI_PREFIX,
  // Each also as `<name>_total` (count() below tries both; the filter keeps a family's _total).
  families: new Set(["tgi_request_count", "tgi_batch_current_size", "tgi_queue_size", "tgi_batch_inference_count", "tgi_batch_inference_success", "tgi_request_success"]),
  rules: { minStuckWindowSeconds: 0, livenessPath: "/info", probe: "tgi-generate", metricsFlag: null },
  // TGI shows a metric only once it was recorded: before its first request /metrics is empty, and
  // its /info (static, no slot) says whether this is TGI.
  reads: { metricsPath: "/metrics", whenEmpty: { path: "/info", maxBytes: 256 * 1024, parse: (body) => parseTgiInfo(body) } },
  extract(index) {
    const warnings: string[] = [];
    const count = (name: string) => optional(index, name, "count", "sum", warnings) ?? optional(index, `${name}_total`, "count", "sum", warnings);
    // metrics-exporter-prometheus shows a gauge only once it was set: tgi_queue_size on the first
    // request queued (queue.rs), tgi_batch_current_size on the first batch (backend.rs). A server
    // that never counted a request (tgi_request_count, server.rs, on every request) has had no load:
    // its absent gauges are 0. Once a request was counted, an absent gauge is no reading.
    const fresh = !count("tgi_request_count");
    const gauge = (name: string) => (fresh && !index.has(name) ? { value: 0 } : required(index, name));
    const running = gauge("tgi_batch_current_size");
    if ("error" in running) return { metrics: null, warnings, error: `TGI ${running.error}` };
    const waiting = gauge("tgi_queue_size");
    if ("error" in waiting) return { metrics: null, warnings, error: `TGI ${waiting.error}` };
    const started = count("tgi_batch_inference_count");
    const succeeded = count("tgi_batch_inference_success");
    const metrics: EngineMetrics = {
      processStartTime: null,
      running: running.value,
      waiting: waiting.value,
      // Forward calls started; when only _success is exposed, those.
      steps: started ?? succeeded,
      promptTokens: null,
      generationTokens: null,
      finishedRequests: count("tgi_request_success"),
      kvCacheUsage: null,
      models: [],
      evidence: ["steps"],
      // batch_inference_count: at the start of every forward call; request_success: at a request's end.
      cadence: { steps: "step", finishedRequests: "request-end" },
    };
    return { metrics, warnings };
  },
};

/** GET /info of TGI -> the model id (for the card and the probe). */
export function parseTgiInfo(body: string): { model: string | null; version: string | null } | null {
  try {
    const j = JSON.parse(body) as Record<string, unknown>;
    if (!j || typeof j !== "object" || typeof j.model_id !== "string") return null;
    return { model: j.model_id, version: typeof j.version === "string" ? j.version : null };
  } catch {
    return null;
  }
}
