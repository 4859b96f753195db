/**
 * The adapters on real scrapes (SGLang 0.5.10, TGI) and on an exposition written from llama.cpp's
 * to_metrics(), and the classifier's table for each engine's trap: a counter that looks like
 * progress but moves only when a request ends. Readings are built by rewriting values in those
 * bodies and running the real adapter, so the classifier is fed what the reader really produces.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { classify, shouldProbe } from "@/lib/check/classify";
import type { BackendState } from "@/lib/core/states";
import type { ProbeResult, Reading, Thresholds, RuleId } from "@/lib/core/types";
import { readExposition } from "@/lib/engines/exposition";
import { parseLlamacppProps, isLlamacppLoading } from "@/lib/engines/llamacpp";
import { parseOllamaPs, parseOllamaVersion } from "@/lib/engines/ollama";
import { ADAPTERS, detectEngine, rulesOf } from "@/lib/engines/registry";
import type { EngineKind } from "@/lib/core/engine";

const T: Thresholds = { stuckAfterSeconds: 120, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900, startupGraceSeconds: 600 };
const fixture = (p: string) => readFileSync(new URL(`../fixtures/${p}`, import.meta.url), "utf8");
const LLAMA = fixture("engines/llamacpp-to_metrics.prom");
const SGLANG = fixture("real-metrics/sglang-0.5.10-datadog.prom");
const TGI = fixture("real-metrics/tgi-datadog-truncated.prom");

function extract(kind: EngineKind, text: string, headers: Record<string, string> = {}) {
  const exp = readExposition(text);
  if (!exp.ok) throw new Error(exp.error);
  return ADAPTERS[kind].extract(exp.index, { headers });
}

/** `name{labels} value` lines rewritten: every series of `name` (with `labels` matching) gets `value`. */
function set(text: string, name: string, value: number, labelPart = ""): string {
  const esc = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return text.replace(new RegExp(`^(${esc}(\\{[^}]*${labelPart.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}[^}]*\\})?) .*$`, "gm"), `$1 ${value}`);
}

function reading(kind: EngineKind, atS: number, text: string, extra: Partial<Reading> = {}, headers: Record<string, string> = {}): Reading {
  const p = extract(kind, text, headers);
  if (!p.metrics) throw new Error(`${kind} body did not parse: ${p.error}`);
  return { at: atS * 1000, latencyMs: 5, outcome: "ok", status: 200, engine: kind, metrics: p.metrics, ...extra };
}
function judge(rs: Reading[]) {
  const r = rs[rs.length - 1];
  return classify({ history: rs.slice(0, -1), reading: r, thresholds: T, now: r.at + 10 });
}
const ok = (atS: number): ProbeResult => ({ ok: true, at: atS * 1000, latencyMs: 20, status: 200, kind: "completions" });

describe("adapters on real expositions", () => {
  it("detects each engine from its families", () => {
    const detect = (t: string) => {
      const e = readExposition(t);
      return e.ok ? detectEngine(e.index) : null;
    };
    expect(detect(LLAMA)).toBe("llamacpp");
    expect(detect(SGLANG)).toBe("sglang");
    expect(detect(TGI)).toBe("tgi");
    expect(detect(fixture("real-metrics/vllm-0.29.0-inferstack.prom"))).toBe("vllm");
    expect(detect("up 1\nprocess_start_time_seconds 1.7e9")).toBeNull();
  });

  it("llama.cpp: running = requests_processing, waiting = requests_deferred, progress = n_decode_total, start from the header", () => {
    const p = extract("llamacpp", LLAMA, { "process-start-time-unix": "1764580000" });
    expect(p.warnings).toEqual([]);
    expect(p.metrics).toMatchObject({
      running: 1,
      waiting: 0,
      steps: 61377,
      promptTokens: 3214570, // printed as 3.21457e+06 by the C++ ostream
      generationTokens: 48211,
      processStartTime: null,
      processToken: "1764580000",
      evidence: ["steps"],
    });
  });

  it("SGLang 0.5.10 (real scrape): no pass or realtime counters, so gen_throughput is the progress figure", () => {
    const p = extract("sglang", SGLANG);
    expect(p.metrics).toMatchObject({
      running: 0,
      waiting: 0,
      steps: null,
      generationTokens: 32,
      finishedRequests: 1,
      kvCacheUsage: 0.25,
      throughput: 425.5, // stale: 0 running, the scheduler last logged during the request
      processStartTime: null,
      models: ["facebook/opt-125m"],
      evidence: ["throughput"],
    });
    expect(rulesOf("sglang").minStuckWindowSeconds).toBeGreaterThan(T.stuckAfterSeconds);
  });

  it("SGLang with cuda_graph_passes_total and realtime_tokens_total: those are the evidence", () => {
    const body = `${SGLANG}\nsglang:cuda_graph_passes_total{model_name="facebook/opt-125m",tp_rank="0"} 900\nsglang:realtime_tokens_total{mode="decode",model_name="facebook/opt-125m",tp_rank="0"} 4000\nsglang:realtime_tokens_total{mode="prefill_compute",model_name="facebook/opt-125m",tp_rank="0"} 700\n`;
    expect(extract("sglang", body).metrics).toMatchObject({ steps: 900, generationTokens: 4000, promptTokens: 700, evidence: ["steps", "promptTokens", "generationTokens"] });
  });

  it("SGLang: tensor-parallel ranks of one group report one batch (max), data-parallel groups add up", () => {
    const body = [
      'sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="0"} 2',
      'sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="1"} 2',
      'sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="2"} 3',
      'sglang:num_queue_reqs{dp_rank="0",model_name="m",tp_rank="0"} 1',
      'sglang:num_queue_reqs{dp_rank="1",model_name="m",tp_rank="2"} 0',
    ].join("\n");
    expect(extract("sglang", body).metrics).toMatchObject({ running: 5, waiting: 1 });
  });

  it("SGLang: requests the HTTP server holds beyond its stale gauges count as waiting (never idle, never probed)", () => {
    const body = SGLANG.replace('sglang:http_requests_active{endpoint="/generate",method="POST"} 0', 'sglang:http_requests_active{endpoint="/generate",method="POST"} 2\nsglang:http_requests_active{endpoint="/metrics",method="GET"} 1');
    expect(extract("sglang", body).metrics).toMatchObject({ running: 0, waiting: 2 });
    const r: Reading = { at: 0, latencyMs: 2, outcome: "ok", engine: "sglang", metrics: extract("sglang", body).metrics };
    expect(shouldProbe({ history: [], reading: r, thresholds: T, now: 0 })).toBe(false);
  });

  it("TGI (real scrape): batch_current_size, queue_size, progress = batch_inference_count (no _total suffix)", () => {
    const p = extract("tgi", TGI);
    expect(p.metrics).toMatchObject({ running: 0, waiting: 0, steps: 1525, finishedRequests: 109, processStartTime: null, evidence: ["steps"] });
  });

  it("TGI before its first request shows no load gauges (set on first use): 0 running, 0 waiting; after one, absent is no reading", () => {
    const fresh = "# TYPE tgi_request_count counter\n# HELP tgi_queue_size Current queue size\nprocess_cpu_seconds_total 1\ntgi_batch_inference_count{method=\"decode\"} 0\n";
    expect(extract("tgi", fresh).metrics).toMatchObject({ running: 0, waiting: 0 });
    expect(extract("tgi", `${fresh}tgi_request_count 3\n`).metrics).toBeNull();
  });

  it("a body without the load gauges is no reading, never a 0", () => {
    expect(extract("llamacpp", "llamacpp:n_decode_total 5").metrics).toBeNull();
    expect(extract("sglang", 'sglang:gen_throughput{tp_rank="0"} 5').error).toMatch(/without sglang:num_running_reqs/);
    expect(extract("tgi", "tgi_queue_size NaN\ntgi_batch_current_size 1").metrics).toBeNull();
  });

  it("llama.cpp /props, 503 Loading model; Ollama /api/version and /api/ps", () => {
    expect(parseLlamacppProps(JSON.stringify({ is_sleeping: true, total_slots: 4, model_path: "/m/qwen3-8b-q4.gguf" }))).toEqual({ sleeping: true, model: "qwen3-8b-q4.gguf" });
    expect(parseLlamacppProps(JSON.stringify({ default_generation_settings: {}, total_slots: 1 }))).toEqual({ sleeping: false, model: null });
    expect(parseLlamacppProps(JSON.stringify({ detail: "Not Found" }))).toBeNull();
    expect(parseLlamacppProps("<html>")).toBeNull();
    expect(isLlamacppLoading(503, '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}')).toBe(true);
    expect(isLlamacppLoading(503, "upstream unavailable")).toBe(false);
    expect(parseOllamaVersion('{"version":"0.33.0"}')).toBe("0.33.0");
    expect(parseOllamaVersion('{"data":[]}')).toBeNull();
    expect(parseOllamaPs('{"models":[{"name":"llama3.2:3b","model":"llama3.2:3b","size":1}]}')).toEqual(["llama3.2:3b"]);
    expect(parseOllamaPs('{"models":[]}')).toEqual([]);
    expect(parseOllamaPs("nope")).toBeNull();
  });
});

// ---- the classifier's table, per engine ----------------------------------------------------

const llama = (atS: number, v: { processing?: number; deferred?: number; decode?: number; predicted?: number; prompt?: number }, token = "1764580000", extra: Partial<Reading> = {}) => {
  let t = LLAMA;
  if (v.processing !== undefined) t = set(t, "llamacpp:requests_processing", v.processing);
  if (v.deferred !== undefined) t = set(t, "llamacpp:requests_deferred", v.deferred);
  if (v.decode !== undefined) t = set(t, "llamacpp:n_decode_total", v.decode);
  if (v.predicted !== undefined) t = set(t, "llamacpp:tokens_predicted_total", v.predicted);
  if (v.prompt !== undefined) t = set(t, "llamacpp:prompt_tokens_total", v.prompt);
  return reading("llamacpp", atS, t, extra, { "process-start-time-unix": token });
};
const sglang = (atS: number, v: { running?: number; queue?: number; throughput?: number; gen?: number; requests?: number; usage?: number; passes?: number }) => {
  let t = SGLANG;
  if (v.running !== undefined) t = set(t, "sglang:num_running_reqs", v.running);
  if (v.queue !== undefined) t = set(t, "sglang:num_queue_reqs", v.queue);
  if (v.throughput !== undefined) t = set(t, "sglang:gen_throughput", v.throughput);
  if (v.gen !== undefined) t = set(t, "sglang:generation_tokens_total", v.gen);
  if (v.requests !== undefined) t = set(t, "sglang:num_requests_total", v.requests);
  if (v.usage !== undefined) t = set(t, "sglang:token_usage", v.usage);
  if (v.passes !== undefined) t += `\nsglang:cuda_graph_passes_total{model_name="facebook/opt-125m",tp_rank="0"} ${v.passes}\n`;
  return reading("sglang", atS, t);
};
const tgi = (atS: number, v: { size?: number; queue?: number; decode?: number; prefill?: number; success?: number }) => {
  let t = TGI;
  if (v.size !== undefined) t = set(t, "tgi_batch_current_size", v.size);
  if (v.queue !== undefined) t = set(t, "tgi_queue_size", v.queue);
  if (v.decode !== undefined) t = set(t, "tgi_batch_inference_count", v.decode, 'method="decode"');
  if (v.prefill !== undefined) t = set(t, "tgi_batch_inference_count", v.prefill, 'method="prefill"');
  if (v.success !== undefined) t = set(t, "tgi_request_success", v.success);
  return reading("tgi", atS, t);
};
const ollama = (atS: number, models: string[]): Reading => ({
  at: atS * 1000,
  latencyMs: 3,
  outcome: "ok",
  status: 200,
  engine: "ollama",
  metrics: null,
  noMetrics: true,
  error: "Ollama 0.33.0",
  models: { outcome: "ok", status: 200, ids: models },
});

interface Row {
  name: string;
  reads: Reading[];
  state: BackendState;
  /** The rules that must fire. */
  rules?: RuleId[];
  /** Only where the numbers (or the flag) a person reads are the point: the words of the first rule's reason. */
  text?: RegExp;
}

const one = { processing: 1, deferred: 0 };
const rows: Row[] = [
  // llama.cpp
  {
    name: "llama.cpp: a long generation, no request ends (tokens_predicted flat), n_decode rises: busy",
    reads: [llama(0, { ...one, decode: 1000, predicted: 48211 }), llama(67, { ...one, decode: 1540, predicted: 48211 }), llama(134, { ...one, decode: 2080, predicted: 48211 })],
    state: "busy",
    rules: ["progress"],
    text: /\+540 steps/,
  },
  {
    name: "llama.cpp: a slot held and n_decode flat across two waits: stuck",
    reads: [llama(0, { ...one, decode: 1000 }), llama(67, { ...one, decode: 1000 }), llama(134, { ...one, decode: 1000 })],
    state: "stuck",
    rules: ["no-progress", "no-progress-stuck"],
    text: /1 running, 0 waiting, 0 new steps in 134 s/,
  },
  {
    name: "llama.cpp: a new Process-Start-Time-Unix is a new process (counters not compared)",
    reads: [llama(0, { ...one, decode: 5000 }), llama(5, { ...one, decode: 20 }, "1764589999")],
    state: "starting",
    rules: ["new-process"],
    text: /Process-Start-Time-Unix 1764580000 -> 1764589999/,
  },
  {
    name: "llama.cpp: idle and the probe answered",
    reads: [llama(0, { processing: 0, deferred: 0 }, "1764580000", { probe: ok(0) })],
    state: "idle",
  },
  {
    name: "llama.cpp: asleep (/props is_sleeping), /metrics not read: sleeping",
    reads: [{ at: 0, latencyMs: 2, outcome: "ok", status: 200, engine: "llamacpp", asleep: true, metrics: null, error: "llama.cpp is asleep" }],
    state: "sleeping",
    rules: ["sleeping"],
  },
  {
    name: "llama.cpp: 503 Loading model: starting, not down",
    reads: [
      { at: 0, latencyMs: 2, outcome: "http-error", status: 503, engine: "llamacpp", loading: true, metrics: null, error: "llama.cpp answers 503 Loading model" },
      { at: 5000, latencyMs: 2, outcome: "http-error", status: 503, engine: "llamacpp", loading: true, metrics: null, error: "llama.cpp answers 503 Loading model" },
    ],
    state: "starting",
    rules: ["loading"],
  },
  {
    name: "llama.cpp without --metrics (501): no-metrics, says which flag",
    reads: [
      { at: 0, latencyMs: 2, outcome: "http-error", status: 501, engine: "llamacpp", noMetrics: true, metrics: null, error: "llama.cpp without metrics (/metrics answered 501): start llama-server with --metrics", models: { outcome: "ok", ids: ["q.gguf"] } },
    ],
    state: "no-metrics",
    rules: ["no-metrics"],
    text: /start llama-server with --metrics/,
  },
  {
    name: "llama.cpp: /metrics (a task on the engine loop) timing out while /health answers, across two waits: stuck (a blocked loop)",
    reads: [0, 67, 134].map((atS) => ({ at: atS * 1000, latencyMs: 10_000, outcome: "timeout" as const, engine: "llamacpp" as const, metrics: null, error: "no complete answer within 10000 ms", health: { outcome: "ok" as const, status: 200 } })),
    state: "stuck",
    rules: ["loop-blocked", "loop-blocked-stuck"],
  },
  {
    name: "llama.cpp: one /metrics timeout with /health up: stalled, not yet stuck",
    reads: [llama(0, { ...one, decode: 10 }), { at: 5000, latencyMs: 10_000, outcome: "timeout", engine: "llamacpp", metrics: null, health: { outcome: "ok", status: 200 } }],
    state: "stalled",
  },
  // SGLang
  {
    name: "SGLang 0.5.10: gen_throughput positive and changing, request counters flat: busy",
    reads: [sglang(0, { running: 2, throughput: 31.2 }), sglang(60, { running: 2, throughput: 29.8 }), sglang(120, { running: 2, throughput: 30.4 })],
    state: "busy",
  },
  {
    name: "SGLang: a stale gen_throughput (same value) across two waits but under 150 s: stalled (gauges refresh every 40 steps)",
    reads: [sglang(0, { running: 2, throughput: 425.5 }), sglang(65, { running: 2, throughput: 425.5 }), sglang(130, { running: 2, throughput: 425.5 })],
    state: "stalled",
    rules: ["no-progress-stalled"],
    text: /at least 150 s/,
  },
  {
    name: "SGLang: the same stale gen_throughput for 160 s: stuck",
    reads: [sglang(0, { running: 2, throughput: 425.5 }), sglang(80, { running: 2, throughput: 425.5 }), sglang(160, { running: 2, throughput: 425.5 })],
    state: "stuck",
    rules: ["no-progress", "no-progress-stuck"],
    text: /throughput gauge stuck at 425\.5/,
  },
  {
    name: "SGLang with cuda_graph_passes_total rising: busy",
    reads: [sglang(0, { running: 1, passes: 100 }), sglang(60, { running: 1, passes: 900 })],
    state: "busy",
  },
  {
    name: "SGLang: a counter going down (always multiprocess, no start time): a restart",
    reads: [sglang(0, { running: 1, gen: 5000, requests: 40 }), sglang(30, { running: 1, gen: 3, requests: 0 })],
    state: "starting",
    rules: ["new-process"],
  },
  // TGI
  {
    name: "TGI: one long generation, request counters flat, batch_inference_count rising: busy",
    reads: [tgi(0, { size: 1, decode: 1509, success: 109 }), tgi(60, { size: 1, decode: 1990, success: 109 })],
    state: "busy",
  },
  {
    name: "TGI: a batch and no forward call across two waits: stuck",
    reads: [tgi(0, { size: 3 }), tgi(67, { size: 3 }), tgi(134, { size: 3 })],
    state: "stuck",
  },
  {
    name: "TGI: counters going down: a restart",
    reads: [tgi(0, { size: 1, decode: 1509 }), tgi(30, { size: 1, decode: 2, prefill: 1, success: 0 })],
    state: "starting",
  },
  // Ollama
  {
    name: "Ollama: liveness only, never stuck",
    reads: [ollama(0, ["llama3.2:3b"]), ollama(70, ["llama3.2:3b"]), ollama(140, [])],
    state: "no-metrics",
    rules: ["no-metrics", "no-metrics-alive"],
  },
];

describe("classify per engine: each engine's progress signal and its trap", () => {
  it.each(rows)("$name", ({ reads, state, rules, text }) => {
    const v = judge(reads);
    expect(v.state).toBe(state);
    for (const rule of rules ?? []) expect(v.reasons.map((r) => r.rule)).toContain(rule);
    if (text) expect(v.reasons.find((r) => r.rule === rules![0])?.text).toMatch(text);
  });

  it("never probes Ollama or llama.cpp (its loop's answer to /metrics proves it turns; a probe would restart its sleep countdown)", () => {
    const input = (r: Reading) => ({ history: [], reading: r, thresholds: T, now: r.at });
    expect(shouldProbe(input(ollama(0, [])))).toBe(false);
    expect(shouldProbe(input({ at: 0, latencyMs: 2, outcome: "ok", engine: "llamacpp", asleep: true, metrics: null }))).toBe(false);
    expect(shouldProbe(input(llama(0, { processing: 0, deferred: 0 })))).toBe(false);
    expect(shouldProbe(input(llama(0, { processing: 0, deferred: 1 })))).toBe(false);
    const v = classify(input(llama(0, { processing: 0, deferred: 0 })));
    expect(v.state).toBe("idle");
    expect(v.reasons.map((r) => r.rule)).toContain("idle-loop-answered");
  });
});

describe("the rates shown follow each figure's cadence (issue 29): never 0 while tokens are generated, then a spike", () => {
  // Captured from the real llama-server b10573 with both slots decoding (tests/fixtures/engines/README.md).
  const BUSY = fixture("engines/llamacpp-b10573-busy.prom");
  const rates = (rs: Reading[]) => classify({ history: rs.slice(0, -1), reading: rs[rs.length - 1], thresholds: T, now: rs[rs.length - 1].at }).rates;

  it("llama.cpp: generation tokens/s is n_decode_total/s × busy slots per decode while tokens_predicted_total stays flat", () => {
    const at = (s: number, steps: number, predicted: number) =>
      reading("llamacpp", s, set(set(BUSY, "llamacpp:n_decode_total", steps), "llamacpp:tokens_predicted_total", predicted));
    const r = rates([at(0, 929, 0), at(1, 1184, 0)]);
    expect(r.stepsPerSecond).toBe(255);
    expect(r.generationTokensPerSecond).toBeCloseTo(255 * 1.99916, 3);
    // The request ends: the counter jumps by 8186 at once; the rate shown stays the live one.
    const end = rates([at(0, 929, 0), at(1, 1184, 0), at(2, 1439, 8186)]);
    expect(end.generationTokensPerSecond).toBeCloseTo(255 * 1.99916, 3);
  });

  it("llama.cpp: an exposition without n_busy_slots_per_decode falls back to the running requests", () => {
    const noSlots = BUSY.replace(/^llamacpp:n_busy_slots_per_decode .*$/m, "");
    const at = (s: number, steps: number) => reading("llamacpp", s, set(noSlots, "llamacpp:n_decode_total", steps));
    expect(rates([at(0, 100), at(2, 300)]).generationTokensPerSecond).toBe(200);
  });

  it("SGLang without realtime counters: generation_tokens_total (counted at a request's end) is averaged over the window, not shown as a spike", () => {
    const at = (s: number, gen: number) => reading("sglang", s, set(set(SGLANG, "sglang:generation_tokens_total", gen), "sglang:num_running_reqs", 2));
    const reads = [at(0, 1000), at(10, 1000), at(20, 1000), at(30, 1600)];
    // Between the last two reads alone it would be 60 tokens/s after 0, 0.
    expect(rates(reads).generationTokensPerSecond).toBe(20);
  });

  it("vLLM's token counters move on every step: the rate between the two newest reads", () => {
    const r = extract("vllm", fixture("real-metrics/vllm-0.29.0-inferstack.prom"));
    expect(r.metrics?.cadence?.generationTokens).toBe("step");
  });
});
