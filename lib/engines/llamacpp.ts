/**
 * llama.cpp's server (llama-server --metrics). Read from tools/server/server-task.cpp
 * (server_task_result_metrics::to_metrics) and server-context.cpp; see docs/engines.md.
 *
 * The trap: `tokens_predicted_total` moves only when a slot is released (a request ends) and
 * `prompt_tokens_total` only when a prompt evaluation finishes, so during one long generation both
 * stay flat while the server is busy and healthy. Progress is `n_decode_total`, one per
 * llama_decode() call (prompt chunks and generation steps alike). The token counters are kept for
 * the rates but are never evidence of a hang.
 *
 * No start-time metric: the `Process-Start-Time-Unix` response header of /metrics changes with
 * every process (treated as an opaque token).
 */
import { headerValue, isAnswer, type EngineAdapter } from "./adapter";
import { optional, required } from "./series";
import type { EngineMetrics } from "../core/engine";

export const LLAMACPP_PREFIX = "llamacpp:";
export const LLAMACPP_START_HEADER = "process-start-time-unix";
const LLAMACPP_ASLEEP = "llama.cpp is asleep (/props is_sleeping: true): put to sleep on purpose (--sleep-idle-seconds), so /metrics is not read";
/** llama-server without --metrics answers /metrics 501. */
export const LLAMACPP_NO_METRICS = "llama.cpp without metrics (/metrics answered 501): start llama-server with --metrics";

export const llamacppAdapter: EngineAdapter = {
  kind: "llamacpp",
  prefix: LLAMACPP_PREFIX,
  families: new Set([
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
    "llamacpp:kv_cache_usage_ratio",
    "llamacpp:n_decode_total",
    "llamacpp:prompt_tokens_total",
    "llamacpp:tokens_predicted_total",
    "llamacpp:n_busy_slots_per_decode",
  ]),
  // /metrics is a task on the same loop as decoding (server-context.cpp): a blocked loop never answers it.
  rules: { minStuckWindowSeconds: 0, livenessPath: "/health", probe: "openai", metricsFlag: "--metrics", metricsOnEngineLoop: true, idleProvenByMetrics: true,
    // tokens_predicted_total moves only when a slot is released: the live generation rate is
    // n_decode_total/s × n_busy_slots_per_decode. Every value is printed `<< double` with the
    // stream's default precision (server-task.cpp to_metrics): 6 significant digits.
    updates: { generationFromSteps: true, printedDigits: 6 } },
  reads: {
    metricsPath: "/metrics",
    // /props answers a sleeping llama-server from its cache with is_sleeping, so a sleeping server is
    // shown sleeping at once; neither it nor /metrics wakes it (b10573, docs/engines.md).
    before: {
      path: "/props",
      maxBytes: 1024 * 1024,
      parse(body) {
        const p = parseLlamacppProps(body);
        if (!p) return null;
        return p.sleeping ? { model: p.model, asleep: LLAMACPP_ASLEEP } : { model: p.model };
      },
    },
    loading: { status: 503, body: /loading model/i, error: "llama.cpp answers 503 Loading model" },
    metricsOff: { status: 501, error: LLAMACPP_NO_METRICS },
  },
  extract(index, ctx) {
    const warnings: string[] = [];
    const running = required(index, "llamacpp:requests_processing");
    if ("error" in running) return { metrics: null, warnings, error: `llama.cpp ${running.error}` };
    const waiting = required(index, "llamacpp:requests_deferred");
    if ("error" in waiting) return { metrics: null, warnings, error: `llama.cpp ${waiting.error}` };
    const kv = optional(index, "llamacpp:kv_cache_usage_ratio", "fraction", "mean", warnings);
    const metrics: EngineMetrics = {
      processStartTime: null,
      processToken: headerValue(ctx.headers, LLAMACPP_START_HEADER),
      running: running.value,
      waiting: waiting.value,
      steps: optional(index, "llamacpp:n_decode_total", "count", "sum", warnings),
      promptTokens: optional(index, "llamacpp:prompt_tokens_total", "count", "sum", warnings),
      generationTokens: optional(index, "llamacpp:tokens_predicted_total", "count", "sum", warnings),
      finishedRequests: null,
      kvCacheUsage: kv,
      // Averaged over the window since the last /metrics read (every read resets its bucket).
      slotsPerStep: optional(index, "llamacpp:n_busy_slots_per_decode", "count", "mean", warnings),
      models: [],
      evidence: ["steps"],
      // n_decode_total: +1 per llama_decode() call. The token counters: when a prompt evaluation
      // ends (prompt) and when a slot is released (generation), checked on b10573.
      cadence: { steps: "step", promptTokens: "request-end", generationTokens: "request-end" },
    };
    return { metrics, warnings };
  },
};

/** What GET /props says about the server, read before /metrics (a sleeping server is recognised without it). */
export interface LlamacppProps {
  sleeping: boolean;
  model: string | null;
}

/** GET /props body -> sleeping and the model; null when it is not llama-server's /props. */
export function parseLlamacppProps(body: string): LlamacppProps | null {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return null;
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) return null;
  const p = json as Record<string, unknown>;
  // Fields every llama-server /props has had; a JSON answer without them is some other server.
  const looksLikeLlama = "default_generation_settings" in p || "total_slots" in p || "is_sleeping" in p || "n_ctx" in p;
  if (!looksLikeLlama) return null;
  const path = typeof p.model_path === "string" ? p.model_path : typeof p.model_alias === "string" ? p.model_alias : null;
  const model = path ? (path.split(/[\\/]/).pop() ?? path) : null;
  return { sleeping: p.is_sleeping === true, model };
}

/** llama-server answers every endpoint 503 "Loading model" while it loads: not ready, not dead. */
export function isLlamacppLoading(status: number | undefined, body: string): boolean {
  return isAnswer(llamacppAdapter.reads.loading, status, body);
}
