/**
 * The state table of docs/states.md, row by row, and every case of the incident, as data. Readings are
 * built from a real vLLM 0.29 scrape whose values are rewritten per read, so the classifier is fed
 * what the parser really produces.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { classify, flatRunStart, shouldProbe } from "@/lib/check/classify";
import { judgeProxy } from "@/lib/check/proxy";
import type { BackendState } from "@/lib/core/states";
import { type PendingRestart, type ProbeChoice, type ProbeResult, type Reading, type Thresholds, RULES, type RuleId } from "@/lib/core/types";
import { parseVllmMetrics, type VllmMetrics } from "@/lib/engines/vllm";
import { readExposition } from "@/lib/engines/exposition";
import { ADAPTERS } from "@/lib/engines/registry";
import type { EngineKind } from "@/lib/core/engine";

const T: Thresholds = { stuckAfterSeconds: 120, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900 };
const REAL = readFileSync(new URL("../fixtures/real-metrics/vllm-0.29.0-inferstack.prom", import.meta.url), "utf8");

interface Values {
  running?: number;
  waiting?: number;
  steps?: number;
  prompt?: number;
  gen?: number;
  finished?: number;
  kv?: number;
  start?: number | null;
  /** Of `waiting`, how many are deferred (num_requests_waiting_by_reason; capacity is the rest). */
  deferred?: number;
  /** Drop num_requests_waiting_by_reason (vLLM before the family existed): the total counts. */
  noReason?: boolean;
  preempt?: number;
  abort?: number;
  errored?: number;
  /** engine_sleep_state{sleep_state="awake"}: 0 = asleep. */
  awake?: number;
}

/** The real scrape with the watched values rewritten: what a later scrape of that server says. */
function scrape(v: Values): string {
  const set = (text: string, name: string, value: number | undefined, extra = "") =>
    value === undefined ? text : text.replace(new RegExp(`^(${escape(name)}\\{engine="0",${extra}model_name="qwen2.5-1.5b"\\}) .*$`, "m"), `$1 ${value}`);
  let t = REAL;
  t = set(t, "vllm:num_requests_running", v.running);
  t = set(t, "vllm:num_requests_waiting", v.waiting);
  t = set(t, "vllm:iteration_tokens_total_count", v.steps);
  t = set(t, "vllm:prompt_tokens_total", v.prompt);
  t = set(t, "vllm:generation_tokens_total", v.gen);
  t = set(t, "vllm:request_success_total", v.finished, 'finished_reason="length",');
  t = set(t, "vllm:kv_cache_usage_perc", v.kv);
  t = set(t, "vllm:num_preemptions_total", v.preempt);
  t = set(t, "vllm:request_success_total", v.abort, 'finished_reason="abort",');
  t = set(t, "vllm:request_success_total", v.errored, 'finished_reason="error",');
  // by_reason sums to num_requests_waiting (its HELP says so): capacity is what is not deferred.
  const after = (text: string, name: string, label: string, value: number | undefined) =>
    value === undefined ? text : text.replace(new RegExp(`^(${escape(name)}\\{engine="0",model_name="qwen2.5-1.5b",${label}\\}) .*$`, "m"), `$1 ${value}`);
  if (v.waiting !== undefined) {
    t = after(t, "vllm:num_requests_waiting_by_reason", 'reason="capacity"', v.waiting - (v.deferred ?? 0));
    t = after(t, "vllm:num_requests_waiting_by_reason", 'reason="deferred"', v.deferred ?? 0);
  }
  if (v.noReason) t = t.replace(/^vllm:num_requests_waiting_by_reason.*$/gm, "");
  if (v.awake !== undefined) {
    t = after(t, "vllm:engine_sleep_state", 'sleep_state="awake"', v.awake);
    t = after(t, "vllm:engine_sleep_state", 'sleep_state="weights_offloaded"', v.awake ? 0 : 1);
  }
  if (v.start === null) t = t.replace(/^process_start_time_seconds .*$/m, "");
  else if (v.start !== undefined) t = t.replace(/^process_start_time_seconds .*$/m, `process_start_time_seconds ${v.start}`);
  return t;
}
function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function metrics(v: Values): VllmMetrics {
  const parsed = parseVllmMetrics(scrape(v));
  if (!parsed.metrics) throw new Error(`fixture did not parse: ${parsed.error}`);
  return parsed.metrics;
}

const base: Values = { running: 0, waiting: 0, steps: 137, prompt: 530, gen: 584, finished: 10, kv: 0 };
const ok = (atS: number, latencyMs = 40): ProbeResult => ({ ok: true, at: atS * 1000, latencyMs, status: 200 });
const failed = (atS: number, error = "no complete answer within 10000 ms"): ProbeResult => ({ ok: false, at: atS * 1000, latencyMs: 10_000, error });

function read(atS: number, v: Values, probe?: ProbeResult): Reading {
  return { at: atS * 1000, latencyMs: 12, outcome: "ok", status: 200, metrics: metrics({ ...base, ...v }), ...(probe ? { probe } : {}) };
}
function refused(atS: number, health: "refused" | "ok" = "refused"): Reading {
  return { at: atS * 1000, latencyMs: 1, outcome: "refused", error: "connection refused", metrics: null, health: { outcome: health, status: health === "ok" ? 200 : undefined } };
}
function timedOut(atS: number): Reading {
  return { at: atS * 1000, latencyMs: 10_000, outcome: "timeout", error: "no complete answer within 10000 ms", metrics: null };
}
function notVllm(atS: number, modelsOk = true): Reading {
  return {
    at: atS * 1000,
    latencyMs: 5,
    outcome: "http-error",
    status: 404,
    error: "/metrics answered HTTP 404",
    metrics: null,
    noMetrics: true,
    models: modelsOk ? { outcome: "ok", status: 200, ids: ["m"] } : { outcome: "http-error", status: 500, ids: [] },
  };
}

function judge(readings: Reading[], pendingRestart?: PendingRestart, probe?: ProbeChoice) {
  const reading = readings[readings.length - 1];
  return classify({ history: readings.slice(0, -1), reading, thresholds: T, now: reading.at + 50, pendingRestart, probe });
}
function probeWanted(readings: Reading[], pendingRestart?: PendingRestart, probe?: ProbeChoice) {
  const reading = readings[readings.length - 1];
  return shouldProbe({ history: readings.slice(0, -1), reading, thresholds: T, now: reading.at, pendingRestart, probe });
}

/**
 * A data-parallel server of two engines, built from the real scrape: engine 0's series as scraped
 * (values rewritten), plus the same vllm:* series again as engine="1" with its own values.
 */
function dpRead(atS: number, e0: Values, e1: Values): Reading {
  const one = scrape({ ...base, ...e1 })
    .split("\n")
    .filter((l) => l.startsWith("vllm:"))
    .map((l) => l.replace('engine="0"', 'engine="1"'))
    .join("\n");
  const parsed = parseVllmMetrics(`${scrape({ ...base, ...e0 })}\n${one}\n`);
  if (!parsed.metrics) throw new Error(`DP fixture did not parse: ${parsed.error}`);
  return { at: atS * 1000, latencyMs: 12, outcome: "ok", status: 200, engine: "vllm", metrics: parsed.metrics };
}
const unauthorized = (atS: number, status = 401): ProbeResult => ({ ok: false, at: atS * 1000, latencyMs: 3, status, kind: "completions", error: `HTTP ${status}`, cannotSucceed: "auth" });
const viaEmbeddings = (atS: number): ProbeResult => ({ ok: true, at: atS * 1000, latencyMs: 9, status: 200, kind: "embeddings", fallbackFrom: "completions" });
const noEndpoint = (atS: number): ProbeResult => ({
  ok: false,
  at: atS * 1000,
  latencyMs: 4,
  status: 404,
  kind: "embeddings",
  fallbackFrom: "completions",
  cannotSucceed: "no-endpoint",
  error: "/v1/completions answered HTTP 404 and /v1/embeddings HTTP 404",
});
function slowWithHealth(atS: number, health: "ok" | "timeout" | "refused"): Reading {
  return { ...timedOut(atS), health: { outcome: health, status: health === "ok" ? 200 : undefined } };
}

interface Row {
  name: string;
  reads: Reading[];
  state: BackendState;
  /** The rules that must fire (each leaves a reason with its id). */
  rules?: RuleId[];
  /** Only where the numbers a person reads are the point: the words of the first rule's reason. */
  text?: RegExp;
  pending?: PendingRestart;
  probe?: ProbeChoice;
}

/** A reading of another engine: its exposition (a real capture, values rewritten) through its adapter. */
function engineRead(kind: EngineKind, atS: number, text: string, headers: Record<string, string> = {}): Reading {
  const exp = readExposition(text);
  if (!exp.ok) throw new Error(exp.error);
  const p = ADAPTERS[kind].extract(exp.index, { headers });
  if (!p.metrics) throw new Error(`${kind} body did not parse: ${p.error}`);
  return { at: atS * 1000, latencyMs: 4, outcome: "ok", status: 200, engine: kind, metrics: p.metrics };
}
const fixtureText = (p: string) => readFileSync(new URL(`../fixtures/${p}`, import.meta.url), "utf8");
// Real llama-server b10573 with both slots decoding; n_decode_total as the server prints it (6 significant digits).
const LLAMA_BUSY = fixtureText("engines/llamacpp-b10573-busy.prom");
const llamaBusy = (atS: number, decode: string, running = 2): Reading =>
  engineRead(
    "llamacpp",
    atS,
    LLAMA_BUSY.replace(/^llamacpp:n_decode_total .*$/m, `llamacpp:n_decode_total ${decode}`).replace(/^llamacpp:requests_processing .*$/m, `llamacpp:requests_processing ${running}`),
    { "process-start-time-unix": "492656745" },
  );
// Real SGLang 0.5.10 (no per-step counter: gen_throughput, written when the scheduler logs, is the evidence).
const SGLANG_REAL = fixtureText("real-metrics/sglang-0.5.10-datadog.prom");
const sglangBusy = (atS: number, throughput: number): Reading =>
  engineRead("sglang", atS, SGLANG_REAL.replace(/^(sglang:num_running_reqs\{[^}]*\}) .*$/m, "$1 2").replace(/^(sglang:gen_throughput\{[^}]*\}) .*$/m, `$1 ${throughput}`));

/** llama.cpp's /metrics timing out while /health answers: its engine loop is blocked. */
const blockedLoop = (atS: number): Reading => ({ ...slowWithHealth(atS, "ok"), engine: "llamacpp" });
/** A read whose evidence figures (steps, prompt and generation tokens) were all unusable, on the whole server or on one engine. */
function blind(r: Reading, engine?: string): Reading {
  const hide = <T extends object>(x: T): T => ({ ...x, steps: null, promptTokens: null, generationTokens: null });
  const m = r.metrics!;
  if (engine === undefined) return { ...r, metrics: hide(m) };
  return { ...r, metrics: { ...m, engines: { ...m.engines, [engine]: hide(m.engines![engine]) } } };
}
const loadingModel = (atS: number): Reading => ({ at: atS * 1000, latencyMs: 3, outcome: "http-error", status: 503, error: "/metrics answered HTTP 503 (Loading model)", metrics: null, loading: true });

const busy12 = { running: 12, waiting: 0 };
const rows: Row[] = [
  // idle
  { name: "idle: nothing running, the probe answered", reads: [read(0, {}, ok(0))], state: "idle", rules: ["probe-answered"] },
  { name: "idle between probes: metrics staying at zero keep it idle", reads: [read(0, {}, ok(0)), read(5, {}), read(10, {})], state: "idle", rules: ["probe-answered"], text: /probe answered 10 s ago/ },
  { name: "idle, not yet probed: cannot say idle", reads: [read(0, {})], state: "unknown" },
  // busy
  { name: "busy at its limit: 12 running with progress", reads: [read(0, { ...busy12, steps: 1000, gen: 5000 }), read(5, { ...busy12, steps: 1050, gen: 5600 })], state: "busy", rules: ["progress"], text: /12 running, 0 waiting; \+50 steps, \+600 generation tokens in 5 s/ },
  { name: "busy: only waiting, and progress (requests being admitted)", reads: [read(0, { waiting: 3, finished: 10 }), read(5, { waiting: 2, finished: 11 })], state: "busy" },
  { name: "a long prompt is not stuck: steps and tokens flat, KV cache grows", reads: [read(0, { running: 1, kv: 0.1 }), read(60, { running: 1, kv: 0.2 }), read(130, { running: 1, kv: 0.3 })], state: "busy", rules: ["progress"], text: /KV cache 20.0% -> 30.0% \(prefill in progress\)/ },
  { name: "prompt tokens alone are progress", reads: [read(0, { running: 2 }), read(60, { running: 2, prompt: 900 })], state: "busy" },
  { name: "first read with work: progress needs a second read", reads: [read(0, { running: 2 })], state: "unknown", rules: ["first-read"] },
  // stalled / stuck
  { name: "one short pause is not stuck", reads: [read(0, { running: 2, steps: 10 }), read(5, { running: 2, steps: 20 }), read(10, { running: 2, steps: 20 })], state: "stalled", rules: ["no-progress", "no-progress-stalled"] },
  { name: "two waits but under stuckAfterSeconds: stalled", reads: [read(0, { running: 2 }), read(30, { running: 2 }), read(60, { running: 2 })], state: "stalled" },
  { name: "one long wait over stuckAfterSeconds: stalled (needs two waits)", reads: [read(0, { running: 2 }), read(300, { running: 2 })], state: "stalled" },
  { name: "stuck: no progress across two waits and 120 s", reads: [read(0, { running: 2 }), read(67, { running: 2 }), read(134, { running: 2 })], state: "stuck", rules: ["no-progress", "no-progress-stuck"], text: /2 running, 0 waiting, 0 new steps in 134 s \(2 min\) across 3 reads/ },
  { name: "running 0, waiting 3, no progress: stalled, not idle", reads: [read(0, { waiting: 3 }), read(5, { waiting: 3 })], state: "stalled", rules: ["queued-not-scheduled", "no-progress-stalled"] },
  { name: "a hang past the watcher's window: evidence counts from the first flat read kept (flatRunStart), not the window", reads: [read(0, { running: 2 }), read(600, { running: 2 }), read(605, { running: 2 }), read(610, { running: 2 })], state: "stuck", rules: ["no-progress", "no-progress-stuck"], text: /0 new steps in 610 s \(10 min\)/ },
  { name: "running 0, waiting 3, no progress for two waits: stuck", reads: [read(0, { waiting: 3 }), read(70, { waiting: 3 }), read(140, { waiting: 3 })], state: "stuck" },
  // issue 10, deferred waiting (vLLM 0.29 num_requests_waiting_by_reason)
  { name: "only deferred requests waiting, nothing running: busy, never stuck", reads: [read(0, { waiting: 3, deferred: 3 }), read(70, { waiting: 3, deferred: 3 }), read(140, { waiting: 3, deferred: 3 })], state: "busy", rules: ["deferred-only"] },
  { name: "capacity waiting counts even beside deferred ones: stuck", reads: [read(0, { waiting: 3, deferred: 2 }), read(70, { waiting: 3, deferred: 2 }), read(140, { waiting: 3, deferred: 2 })], state: "stuck", rules: ["no-progress", "no-progress-stuck"], text: /0 running, 3 waiting \(2 deferred\)/ },
  { name: "without the by_reason family (older vLLM) the total waiting counts: stuck", reads: [read(0, { waiting: 3, noReason: true }), read(70, { waiting: 3, noReason: true }), read(140, { waiting: 3, noReason: true })], state: "stuck" },
  { name: "work arrived after an idle read: stalled, its first wait starts now", reads: [read(0, {}, ok(0)), read(5, { running: 2 })], state: "stalled", rules: ["work-arrived"] },
  { name: "work and every evidence figure unusable: cannot judge, never stuck", reads: [blind(read(0, { running: 2 })), blind(read(70, { running: 2 })), blind(read(140, { running: 2 }))], state: "unknown", rules: ["progress-unreadable"] },
  { name: "work that just arrived after an idle read does not count as a wait", reads: [read(0, {}, ok(0)), read(70, { running: 2 }), read(140, { running: 2 })], state: "stalled" },
  { name: "probe: none in the config: idle from the metrics alone", reads: [read(0, {})], probe: "none", state: "idle", rules: ["probe-none"] },
  { name: "idle and the probe failed once: stalled", reads: [read(0, {}, failed(0))], state: "stalled", rules: ["probe-failed-once"] },
  { name: "idle and the probe failed on two consecutive reads: stuck", reads: [read(0, {}, failed(0)), read(5, {}, failed(5))], state: "stuck", rules: ["probe-failed-stuck"], text: /probe failed on 2 consecutive reads/ },
  // restarts
  { name: "restart between reads (start time changed), work running: starting", reads: [read(0, { running: 2, steps: 5000, start: 1_789_901_808 }), read(5, { running: 2, steps: 3, start: 1_789_999_999 })], state: "starting", rules: ["new-process", "starting-no-progress"] },
  { name: "restart between reads, then progress: busy", reads: [read(0, { running: 2, steps: 5000 }), read(5, { running: 2, steps: 3, start: 1_789_999_999 }), read(10, { running: 2, steps: 50, start: 1_789_999_999 })], state: "busy" },
  { name: "restart without a start-time metric: a counter went down", reads: [read(0, { running: 2, steps: 5000, gen: 9000, start: null }), read(5, { running: 2, steps: 4, gen: 4, start: null })], state: "starting", rules: ["new-process"] },
  { name: "restart, new process idle, probe answered: idle", reads: [read(0, { steps: 5000 }, ok(0)), read(5, { steps: 0, start: 1_789_999_999 }, ok(5))], state: "idle", rules: ["new-process", "probe-answered"] },
  { name: "a new process whose first probe failed: starting, not stalled", reads: [read(0, { steps: 5000 }, ok(0)), read(5, { steps: 0, start: 1_789_999_999 }, failed(5))], state: "starting", rules: ["new-process", "starting-probe-failed"] },
  { name: "llama.cpp loading its model (503): starting, not down", reads: [loadingModel(0), loadingModel(5)], state: "starting", rules: ["loading"] },
  { name: "counters of two processes are never compared: no stuck across a restart", reads: [read(0, { running: 2 }), read(70, { running: 2 }), read(140, { running: 2, start: 1_789_999_999 })], state: "starting" },
  // no metrics, garbage, dead, slow
  { name: "a server without vLLM metrics: no-metrics, never stuck", reads: [notVllm(0), notVllm(70), notVllm(140)], state: "no-metrics", rules: ["no-metrics", "no-metrics-alive"] },
  { name: "not vLLM and /v1/models failing: unknown", reads: [notVllm(0, false)], state: "unknown" },
  { name: "dead backend: refused on /metrics and /health twice: down", reads: [read(0, { running: 2 }), refused(5), refused(10)], state: "down", rules: ["down-refused"], text: /on 2 consecutive reads over 5 s/ },
  { name: "one refused read is not down", reads: [read(0, {}, ok(0)), refused(5)], state: "unknown", rules: ["one-failed-read"] },
  { name: "/metrics refused but /health answers: not down", reads: [refused(0, "ok"), refused(5, "ok")], state: "unknown" },
  { name: "a slow /metrics: one timeout is not down", reads: [read(0, { running: 2 }), timedOut(5)], state: "unknown", rules: ["metrics-timeout"] },
  { name: "/metrics timing out with /health failing too, for longer than stuckAfterSeconds: down", reads: [read(0, { running: 2 }), slowWithHealth(5, "timeout"), slowWithHealth(70, "timeout"), slowWithHealth(130, "refused")], state: "down", rules: ["down-timeout"], text: /on 3 reads in a row/ },
  // issue 10: a /metrics timeout with /health 200 is a slow API server (vLLM 0.29), never down
  { name: "/metrics timing out for 5 min while /health answers 200: unknown, never down", reads: [read(0, { running: 2 }), slowWithHealth(5, "ok"), slowWithHealth(70, "ok"), slowWithHealth(130, "ok"), slowWithHealth(300, "ok")], state: "unknown", rules: ["metrics-timeout"] },
  { name: "slow with /health up, then /health failing too for longer than stuckAfterSeconds: down (counted from when /health began failing)", reads: [read(0, { running: 2 }), slowWithHealth(5, "ok"), slowWithHealth(70, "ok"), slowWithHealth(80, "timeout"), slowWithHealth(150, "timeout"), slowWithHealth(210, "timeout")], state: "down", rules: ["down-timeout"], text: /on 3 reads in a row for 130 s/ },
  { name: "slow with /health up, then /health failing only briefly: unknown", reads: [read(0, { running: 2 }), slowWithHealth(5, "ok"), slowWithHealth(130, "ok"), slowWithHealth(140, "timeout"), slowWithHealth(150, "timeout")], state: "unknown" },
  { name: "timeouts stored without a /health answer are not evidence of down", reads: [read(0, { running: 2 }), timedOut(5), timedOut(70), timedOut(130)], state: "unknown" },
  { name: "a proxy's /metrics alternating between two backends would look like restarts, never stuck or busy", reads: [read(0, { running: 2, steps: 900, start: 1 }), read(60, { running: 2, steps: 50, start: 2 }), read(120, { running: 2, steps: 900, start: 1 }), read(180, { running: 2, steps: 50, start: 2 })], state: "starting" },
  // issue 10: sleep mode (vLLM 0.29 engine_sleep_state)
  { name: "asleep (awake 0): sleeping, healthy, never stuck", reads: [read(0, { awake: 0 }), read(70, { awake: 0 }), read(140, { awake: 0 })], state: "sleeping", rules: ["sleeping"], text: /sleep level 1: weights offloaded/ },
  { name: "asleep after two failed probes: sleeping, not stuck", reads: [read(0, {}, failed(0)), read(5, { awake: 0 }, failed(5)), read(10, { awake: 0 })], state: "sleeping" },
  { name: "awake again after sleeping: judged as usual (not yet probed)", reads: [read(0, { awake: 0 }), read(5, { awake: 1 })], state: "unknown" },
  // issue 10: probes that cannot succeed
  { name: "the probe answered 401: unknown, a configuration problem, not stuck", reads: [read(0, {}, unauthorized(0)), read(5, {}, unauthorized(5)), read(10, {}, unauthorized(10))], state: "unknown", rules: ["probe-auth"], text: /the probe needs the API key: 401/ },
  { name: "the probe answered 403: the same", reads: [read(0, {}, unauthorized(0, 403))], state: "unknown", rules: ["probe-auth"], text: /the probe needs the API key: 403/ },
  { name: "completions 404 (a pooling model), embeddings answered: idle", reads: [read(0, {}, viaEmbeddings(0))], state: "idle", rules: ["probe-answered"], text: /embeddings: completions answered 404\/405/ },
  { name: "no probe endpoint answers: unknown, a configuration problem, not stuck", reads: [read(0, {}, noEndpoint(0)), read(5, {}, noEndpoint(5))], state: "unknown", rules: ["probe-no-endpoint"] },
  // issue 10: data parallel, judged per engine
  {
    name: "one engine of two holds work and never steps while the other progresses: stuck, naming it",
    reads: [dpRead(0, { running: 1, steps: 100, gen: 100 }, { running: 2 }), dpRead(67, { running: 1, steps: 600, gen: 600 }, { running: 2 }), dpRead(134, { running: 1, steps: 1100, gen: 1100 }, { running: 2 })],
    state: "stuck",
    rules: ["dp-stuck", "no-progress-stuck", "dp-total"],
    text: /^engine 1 of 2: 2 running, 0 waiting, 0 new steps in 134 s \(2 min\) across 3 reads$/,
  },
  { name: "both engines progress: busy", reads: [dpRead(0, { running: 1, steps: 100 }, { running: 2, steps: 10 }), dpRead(5, { running: 1, steps: 140 }, { running: 2, steps: 50 })], state: "busy", rules: ["dp-all-progress"] },
  { name: "one engine flat for one wait while the other progresses: stalled, naming it", reads: [dpRead(0, { running: 1, steps: 100 }, { running: 2 }), dpRead(5, { running: 1, steps: 140 }, { running: 2 }), dpRead(10, { running: 1, steps: 180 }, { running: 2 })], state: "stalled", rules: ["dp-stalled", "dp-progress", "dp-total"], text: /^engine 1 of 2: / },
  { name: "work arriving on one engine of two: stalled, naming it", reads: [dpRead(0, {}, {}), dpRead(5, {}, { running: 2 })], state: "stalled", rules: ["dp-work-arrived"], text: /^engine 1 of 2: / },
  {
    name: "one engine of two whose evidence figures are unusable, beside one that progresses: unknown, naming it",
    reads: [blind(dpRead(0, { running: 1, steps: 100 }, { running: 2 }), "1"), blind(dpRead(70, { running: 1, steps: 140 }, { running: 2 }), "1"), blind(dpRead(140, { running: 1, steps: 180 }, { running: 2 }), "1")],
    state: "unknown",
    rules: ["dp-unreadable", "dp-progress"],
    text: /^engine 1 of 2: .*progress cannot be read/,
  },
  { name: "an idle engine beside a busy one: busy", reads: [dpRead(0, { running: 2, steps: 100 }, {}), dpRead(5, { running: 2, steps: 140 }, {})], state: "busy" },
  // issue 10: what is not progress
  { name: "aborted requests are not progress (clients giving up on a wedged engine): stuck", reads: [read(0, { running: 2, abort: 1 }), read(67, { running: 2, abort: 4 }), read(134, { running: 2, abort: 9 })], state: "stuck" },
  { name: "errored requests are not progress: stuck", reads: [read(0, { running: 2, errored: 0 }), read(67, { running: 2, errored: 3 }), read(134, { running: 2, errored: 5 })], state: "stuck" },
  { name: "a KV change while preemptions rise is churn, not progress (vLLM #25538): stuck", reads: [read(0, { running: 1, kv: 0.9, preempt: 10 }), read(67, { running: 1, kv: 0.4, preempt: 40 }), read(134, { running: 1, kv: 0.9, preempt: 70 })], state: "stuck", rules: ["no-progress", "no-progress-stuck"], text: /60 preemptions meanwhile \(KV-cache churn is not progress\)/ },
  // issue 10: down is a fact; a restart recommendation needs startupGraceSeconds of refusals
  { name: "refused for 5 s: down, may be loading weights", reads: [read(0, { running: 2 }), refused(5), refused(10)], state: "down", rules: ["down-grace", "down-refused"], text: /down for 5 s; may be loading weights; restart recommended after 10 min/ },
  { name: "refused for longer than startupGraceSeconds: down, restart recommended", reads: [refused(0), refused(300), refused(601)], state: "down", rules: ["down-past-grace", "down-refused"], text: /down for 10 min \(refused for longer than startupGraceSeconds, 600 s\)/ },
  // llama.cpp serves /metrics from its engine loop: timeouts there with /health up are a blocked loop
  { name: "llama.cpp: /metrics timing out with /health up for one wait: stalled", reads: [blockedLoop(0), blockedLoop(5)], state: "stalled", rules: ["loop-blocked", "loop-blocked-stalled"] },
  { name: "llama.cpp: /metrics timing out with /health up across two waits and 120 s: stuck", reads: [blockedLoop(0), blockedLoop(67), blockedLoop(134)], state: "stuck", rules: ["loop-blocked", "loop-blocked-stuck"], text: /on 3 reads over 134 s/ },
  // issue 29: llama.cpp prints 6 significant digits: past 1e6 n_decode_total moves in printed steps of 10 (1000 past 1e8)
  { name: "llama.cpp below 1e6: a flat n_decode_total is no progress at once (printed exactly)", reads: [llamaBusy(0, "1184"), llamaBusy(5, "1184")], state: "stalled", rules: ["no-progress", "no-progress-stalled"] },
  { name: "llama.cpp at 1.23457e+06 flat across reads for 8 s (inside one printed step of 10 at 1 step/s): busy, no change expected yet", reads: [llamaBusy(0, "1.23457e+06"), llamaBusy(4, "1.23457e+06"), llamaBusy(8, "1.23457e+06")], state: "busy", rules: ["no-change-expected"], text: /prints 6 significant digits, so at 1\.23457e\+6 engine steps move in printed steps of 10/ },
  { name: "llama.cpp at 1.23457e+06 flat past one printed step: stalled", reads: [llamaBusy(0, "1.23457e+06"), llamaBusy(6, "1.23457e+06"), llamaBusy(12, "1.23457e+06")], state: "stalled", rules: ["no-progress", "no-progress-stalled"] },
  { name: "llama.cpp at 1.23457e+06 flat across two waits and 120 s: stuck", reads: [llamaBusy(0, "1.23457e+06"), llamaBusy(67, "1.23457e+06"), llamaBusy(134, "1.23457e+06")], state: "stuck", rules: ["no-progress", "no-progress-stuck"] },
  { name: "llama.cpp at 1.23457e+08 flat for 134 s, past stuckAfterSeconds but inside one printed step of 1000: busy, never stuck", reads: [llamaBusy(0, "1.23457e+08"), llamaBusy(67, "1.23457e+08"), llamaBusy(134, "1.23457e+08")], state: "busy", rules: ["no-change-expected"] },
  { name: "llama.cpp at 1.23457e+08 flat past 1000 s across two waits: stuck, the window widened to one printed step", reads: [llamaBusy(0, "1.23457e+08"), llamaBusy(600, "1.23457e+08"), llamaBusy(1001, "1.23457e+08")], state: "stuck", rules: ["no-progress", "no-progress-stuck"] },
  { name: "llama.cpp past 1e6, work that just arrived: busy, no change expected yet", reads: [llamaBusy(0, "1.23457e+06", 0), llamaBusy(5, "1.23457e+06")], state: "busy", rules: ["no-change-expected"] },
  { name: "llama.cpp idle: the engine loop's own /metrics answer, never probed", reads: [llamaBusy(0, "1184", 0)], state: "idle", rules: ["idle-loop-answered"] },
  { name: "/metrics refused 401: a configuration problem, not the engine", reads: [{ at: 0, latencyMs: 2, outcome: "http-error", status: 401, error: "HTTP 401", metrics: null, engine: "llamacpp" }], state: "unknown", rules: ["metrics-auth"] },
  // issue 29: SGLang writes its gauges only when its scheduler logs (every 40 decode steps): a read between two logs sees no change
  { name: "SGLang: gen_throughput unchanged across reads inside the scheduler's log cadence: busy, not stalled", reads: [sglangBusy(0, 425.5), sglangBusy(5, 425.5), sglangBusy(10, 425.5)], state: "busy", rules: ["no-change-expected"], text: /written only when its scheduler logs, every 40 decode steps/ },
  { name: "SGLang: a new log, then none for 5 s: busy", reads: [sglangBusy(0, 425.5), sglangBusy(5, 431.2), sglangBusy(10, 431.2)], state: "busy" },
  { name: "SGLang: no log for longer than 40 decode steps at 1 step/s: stalled", reads: [sglangBusy(0, 425.5), sglangBusy(25, 425.5), sglangBusy(50, 425.5)], state: "stalled", rules: ["no-progress", "no-progress-stalled"] },
  { name: "SGLang: no log across two waits and its 150 s: stuck", reads: [sglangBusy(0, 425.5), sglangBusy(80, 425.5), sglangBusy(160, 425.5)], state: "stuck", rules: ["no-progress", "no-progress-stuck"] },
  // a read stepwatch saw late is not judged (lib/check/late.ts; more below)
  { name: "a late newest read: the verdict of the reads before it, with the reason first", reads: [read(0, { running: 2 }), { ...timedOut(5), watcherLateMs: 1500 }], state: "unknown", rules: ["watcher-late", "first-read"] },
  // restart confirmed from stepwatch
  { name: "pending restart, old process still there: restarting", reads: [read(0, { running: 2 }), read(5, { running: 2 })], pending: { requestedAt: 1000, processStartTime: 1_789_901_808.66 }, state: "restarting", rules: ["restart-waiting"] },
  { name: "pending restart, nothing listens while weights load: restarting", reads: [read(0, { running: 2 }), refused(5), refused(10)], pending: { requestedAt: 1000, processStartTime: 1_789_901_808.66 }, state: "restarting" },
  { name: "pending restart, new process serving: recovered, idle", reads: [read(0, { running: 2 }), refused(5), read(10, { start: 1_789_999_999 }, ok(10))], pending: { requestedAt: 1000, processStartTime: 1_789_901_808.66 }, state: "idle", rules: ["restart-recovered", "probe-answered"] },
  {
    name: "/metrics itself answered 401 (llama.cpp --api-key, or a proxy in front): unknown, a configuration problem naming apiKey",
    reads: [{ at: 0, latencyMs: 2, outcome: "http-error", status: 401, error: "/metrics answered HTTP 401", metrics: null }],
    state: "unknown",
    rules: ["metrics-auth"],
  },
  {
    name: "llama.cpp idle: its engine loop answered /metrics itself, so idle without a probe (a probe would keep a sleeping server awake)",
    reads: [{ ...read(0, {}), engine: "llamacpp" }, { ...read(5, {}), engine: "llamacpp" }],
    state: "idle",
    rules: ["idle-loop-answered"],
  },
];

describe("classify: the state table and the incident's cases", () => {
  it.each(rows)("$name", ({ reads, state, rules, text, pending, probe }) => {
    const v = judge(reads, pending, probe);
    expect(v.state).toBe(state);
    const fired = v.reasons.map((r) => r.rule);
    for (const rule of rules ?? []) expect(fired).toContain(rule);
    if (text) expect(v.reasons.find((r) => r.rule === rules![0])?.text).toMatch(text);
    expect(v.reasons.length).toBeGreaterThan(0);
  });

  it("names the read a hang in progress is measured from, and none without one", () => {
    const hang = [read(0, { running: 2, steps: 5 }), read(5, { running: 2, steps: 9 }), read(10, { running: 2, steps: 9 }), read(15, { running: 2, steps: 9 })];
    expect(flatRunStart(hang)?.at).toBe(5000);
    expect(flatRunStart([read(0, { running: 2, steps: 5 }), read(5, { running: 2, steps: 9 })])).toBeNull();
    expect(flatRunStart([read(0, {}), read(5, {})])).toBeNull();
  });

  it("derives healthy and restartRecommended from the state table", () => {
    const stuck = judge([read(0, { running: 2 }), read(67, { running: 2 }), read(134, { running: 2 })]);
    expect(stuck).toMatchObject({ healthy: false, health: "no", restartRecommended: true });
    const busy = judge([read(0, { running: 2 }), read(5, { running: 2, steps: 200 })]);
    expect(busy).toMatchObject({ healthy: true, health: "yes", restartRecommended: false });
    const noMetrics = judge([notVllm(0)]);
    expect(noMetrics).toMatchObject({ healthy: false, health: "unknown", restartRecommended: false });
    const loading = judge([refused(0), refused(5)]);
    expect(loading).toMatchObject({ state: "down", healthy: false, restartRecommended: false });
    const down = judge([refused(0), refused(300), refused(600)]);
    expect(down).toMatchObject({ state: "down", healthy: false, restartRecommended: true });
    const sleeping = judge([read(0, { awake: 0 })]);
    expect(sleeping).toMatchObject({ state: "sleeping", healthy: true, health: "yes", restartRecommended: false });
    const auth = judge([read(0, {}, unauthorized(0))]);
    expect(auth).toMatchObject({ state: "unknown", restartRecommended: false, configProblem: "the probe needs the API key: 401" });
  });

  it("computes rates from two readings of one process only", () => {
    const v = judge([read(0, { ...busy12, steps: 1000, gen: 5000, prompt: 100 }), read(10, { ...busy12, steps: 1100, gen: 6200, prompt: 400 })]);
    expect(v.rates).toEqual({ stepsPerSecond: 10, generationTokensPerSecond: 120, promptTokensPerSecond: 30 });
    const across = judge([read(0, { ...busy12, steps: 1000 }), read(10, { ...busy12, steps: 5, start: 1_789_999_999 })]);
    expect(across.rates).toEqual({ stepsPerSecond: null, generationTokensPerSecond: null, promptTokensPerSecond: null });
  });

  it("marks recovery only for a new process", () => {
    const pending = { requestedAt: 1000, processStartTime: 1_789_901_808.66 };
    const same = judge([read(0, {}, ok(0)), read(5, {}, ok(5))], pending);
    expect(same.state).toBe("restarting");
    expect(same.recovered).toBeUndefined();
    const fresh = judge([read(0, {}, ok(0)), read(5, { start: 1_789_999_999 }, ok(5))], pending);
    expect(fresh.recovered).toBe(true);
  });
});

describe("shouldProbe: a probe never goes to a server with work", () => {
  it("never with work running or waiting, whatever the history", () => {
    expect(probeWanted([read(0, busy12)])).toBe(false);
    expect(probeWanted([read(0, { waiting: 3 })])).toBe(false);
    expect(probeWanted([read(0, { running: 2 }), read(70, { running: 2 }), read(140, { running: 2 })])).toBe(false);
    expect(probeWanted([refused(0)])).toBe(false);
    expect(probeWanted([notVllm(0)])).toBe(false);
  });

  it("idle: at first, then at most every idleProbeSeconds", () => {
    expect(probeWanted([read(0, {})])).toBe(true);
    expect(probeWanted([read(0, {}, ok(0)), read(5, {})])).toBe(false);
    expect(probeWanted([read(0, {}, ok(0)), read(59, {})])).toBe(false);
    expect(probeWanted([read(0, {}, ok(0)), read(60, {})])).toBe(true);
  });

  it("re-probes at once after one failure, then only every idleProbeSeconds", () => {
    expect(probeWanted([read(0, {}, failed(0)), read(5, {})])).toBe(true);
    expect(probeWanted([read(0, {}, failed(0)), read(5, {}, failed(5)), read(10, {})])).toBe(false);
    expect(probeWanted([read(0, {}, failed(0)), read(5, {}, failed(5)), read(65, {})])).toBe(true);
  });

  it("never to a sleeping server, never with only deferred requests waiting, never with probe: none", () => {
    expect(probeWanted([read(0, { awake: 0 })])).toBe(false);
    expect(probeWanted([read(0, { awake: 0 }), read(120, { awake: 0 })])).toBe(false);
    expect(probeWanted([read(0, { waiting: 2, deferred: 2 })])).toBe(false);
    expect(probeWanted([read(0, {})], undefined, "none")).toBe(false);
    expect(judge([read(0, {})], undefined, "none")).toMatchObject({ state: "idle", reasons: [{ rule: "probe-none" }] });
  });

  it("a probe refused for the API key is asked again only every idleProbeSeconds, and never counts towards stuck", () => {
    expect(probeWanted([read(0, {}, unauthorized(0)), read(5, {})])).toBe(false);
    expect(probeWanted([read(0, {}, unauthorized(0)), read(60, {})])).toBe(true);
    expect(judge([read(0, {}, unauthorized(0)), read(60, {}, unauthorized(60)), read(120, {}, unauthorized(120))]).state).toBe("unknown");
  });

  it("a new process is probed even if the old one answered recently", () => {
    expect(probeWanted([read(0, {}, ok(0)), read(5, { start: 1_789_999_999 })])).toBe(true);
  });

  it("during a pending restart, only once a new process is seen", () => {
    const pending = { requestedAt: 1000, processStartTime: 1_789_901_808.66 };
    expect(probeWanted([read(0, {}), read(5, {})], pending)).toBe(false);
    expect(probeWanted([read(0, {}), read(5, { start: 1_789_999_999 })], pending)).toBe(true);
  });
});

describe("classify on the other real scrape and on built data-parallel metrics", () => {
  it("the lmswitch scrape judges like any vLLM V1 server", () => {
    const text = readFileSync(new URL("../fixtures/real-metrics/vllm-unstated-lmswitch.prom", import.meta.url), "utf8");
    const m = parseVllmMetrics(text).metrics!;
    // Read off the fixture: one engine, 0 running and 0 waiting, so an answered probe says idle.
    expect(m).toMatchObject({ running: 0, waiting: 0, processStartTime: 1788859833.25, models: ["deepseek-v4-flash-vision-exp-ablit-dual"] });
    const r0: Reading = { at: 0, latencyMs: 5, outcome: "ok", metrics: m, probe: ok(0) };
    expect(judge([r0]).state).toBe("idle");
  });
});

// lib/check/late.ts: a timeout this process saw late (its own event loop busy past the deadline)
// may be stepwatch's, not the server's. Each case is judged twice: as seen late, and the same
// reads seen on time, which must give the harmful verdict, so the test shows what the mark prevents.
describe("reads stepwatch saw late are kept, never judged", () => {
  const late = (r: Reading, ms = 1500): Reading => ({ ...r, watcherLateMs: ms });
  const blockedLoop = (atS: number): Reading => ({ ...slowWithHealth(atS, "ok"), engine: "llamacpp" });

  it("llama.cpp timing out on /metrics with /health up: stuck on time; seen late, never stalled or stuck", () => {
    const reads = [0, 67, 134].map(blockedLoop);
    expect(judge(reads).state).toBe("stuck");
    for (let n = 1; n <= reads.length; n++) {
      const v = judge(reads.slice(0, n).map((r) => late(r)));
      expect(v.state).toBe("unknown");
      expect(v.restartRecommended).toBe(false);
      expect(v.reasons[0]).toMatchObject({ rule: "watcher-late", text: expect.stringMatching(/^this read is not judged: a request timed out while stepwatch itself was 1\.5 s late/) });
    }
  });

  it("/metrics and /health both timing out past stuckAfterSeconds: down on time; seen late, the verdict before them stands", () => {
    const reads = [read(0, { running: 2 }), slowWithHealth(5, "timeout"), slowWithHealth(70, "timeout"), slowWithHealth(130, "timeout")];
    expect(judge(reads)).toMatchObject({ state: "down", restartRecommended: true });
    const v = judge([reads[0], ...reads.slice(1).map((r) => late(r))]);
    expect(v.state).toBe(judge([reads[0]]).state);
    expect(v.restartRecommended).toBe(false);
    expect(v.reasons[0].rule).toBe("watcher-late");
  });

  it("a late read between two that count neither breaks nor extends them: busy stays busy", () => {
    const busy = [read(0, { ...busy12, steps: 100 }), read(5, { ...busy12, steps: 160 })];
    const v = judge([...busy, late(timedOut(10)), read(15, { ...busy12, steps: 220 })]);
    expect(v.state).toBe("busy");
    expect(v.reasons.map((r) => r.rule)).not.toContain("watcher-late"); // the newest read was on time
    expect(judge([...busy, late(timedOut(10))]).state).toBe("busy");
  });

  it("an idle server's probe that timed out late is no failed probe: idle, and asked again at the idle pace", () => {
    const idle = [read(0, {}, ok(0)), read(5, {})];
    const lateProbe: Reading = read(65, {}, { ...failed(65), watcherLateMs: 900 });
    expect(judge([...idle, read(65, {}, failed(65)), read(70, {}, failed(70))]).state).toBe("stuck"); // on time: two failed probes
    const v = judge([...idle, lateProbe]);
    expect(v.state).toBe("idle");
    expect(v.reasons[0]).toMatchObject({ rule: "watcher-late", text: expect.stringMatching(/0\.9 s late/) });
    // On time, one failed probe is asked again at once; a late one waits idleProbeSeconds.
    expect(probeWanted([...idle, read(65, {}, failed(65)), read(70, {})])).toBe(true);
    expect(probeWanted([...idle, lateProbe, read(70, {})])).toBe(false);
    expect(probeWanted([...idle, lateProbe, read(125, {})])).toBe(true);
    // A read seen late is not followed by a probe (it would likely be late too).
    expect(probeWanted([...idle, read(65, {}), { ...read(130, {}), watcherLateMs: 400 }])).toBe(false);
  });

  it("every read seen late: unknown, with the reason, never a restart", () => {
    const v = judge([late(timedOut(0)), late(refused(5)), late(refused(10))]);
    expect(v).toMatchObject({ state: "unknown", restartRecommended: false });
    expect(v.reasons.map((r) => r.rule)).toEqual(["watcher-late"]);
  });

  it("a proxy: two failed reads are down; a late one is unknown and not counted", () => {
    const failedRead = (atS: number) => ({ at: atS * 1000, latencyMs: 10_000, outcome: "timeout" as const, error: "no complete answer within 10000 ms", models: [] });
    expect(judgeProxy(failedRead(0), failedRead(5)).state).toBe("down");
    expect(judgeProxy(failedRead(0), { ...failedRead(5), watcherLateMs: 2000 })).toMatchObject({ state: "unknown", reasons: [{ rule: "watcher-late" }] });
  });
});

describe("rule ids: one list (RULES), produced by the rules above and named in docs/states.md", () => {
  const proxyRead = (atS: number, ok: boolean, lateMs?: number) => ({
    at: atS * 1000,
    latencyMs: ok ? 12 : 10_000,
    outcome: ok ? ("ok" as const) : ("timeout" as const),
    ...(ok ? {} : { error: "no complete answer within 10000 ms" }),
    models: ok ? ["m"] : [],
    ...(lateMs ? { watcherLateMs: lateMs } : {}),
  });
  const proxyCases = [
    judgeProxy(null, proxyRead(0, true)),
    judgeProxy(null, proxyRead(0, false)),
    judgeProxy(proxyRead(0, false), proxyRead(5, false)),
    judgeProxy(proxyRead(0, false), proxyRead(5, false, 2000)),
  ];
  /** Given outside lib/check/classify.ts and proxy.ts, each where it is made, or never from a real reading. */
  const elsewhere: Partial<Record<RuleId, string>> = {
    "not-read-yet": "lib/api/snapshot.ts, lib/watcher/monitors.ts, lib/restart/request.ts: nothing read yet",
    "check-wait-widened": "lib/check/oneshot.ts: the CLI's --wait widened to the engine's window",
    "restart-action-failed": "lib/restart/request.ts: the restart-finished notification of a failed action",
    "restart-outcome-unknown": "lib/watcher/monitors.ts, index.ts: the restart-finished notification of a restart whose leader went before its result was recorded",
    "crash-loop": "lib/watcher/monitors.ts: the crash-loop notification (a flag beside the state, lib/core/crash-loop.ts)",
    unclassified: "normaliseReasons: a row stored before reasons had ids",
    "no-judgeable-figure": "classify.ts: a slice with work always has a figure; kept so a future engine without one is never guessed at",
  };

  it("every rule the classifier or the proxy rule gives fires in a row of the tables here", () => {
    const fired = new Set([...rows.flatMap((r) => judge(r.reads, r.pending, r.probe).reasons), ...proxyCases.flatMap((j) => j.reasons)].map((x) => x.rule));
    const missing = RULES.filter((r) => !fired.has(r) && !(r in elsewhere));
    expect(missing).toEqual([]);
    for (const r of Object.keys(elsewhere)) expect(fired.has(r as RuleId), r).toBe(false);
  });

  it("docs/states.md names every rule id, and no other", () => {
    const doc = readFileSync(new URL("../../docs/states.md", import.meta.url), "utf8");
    const named = new Set([...doc.matchAll(/\brules?\s+((?:`[a-z-]+`(?:,\s+)?)+)/g)].flatMap((m) => [...m[1].matchAll(/`([a-z-]+)`/g)].map((x) => x[1])));
    expect([...RULES].filter((r) => !named.has(r))).toEqual([]);
    expect([...named].filter((r) => !(RULES as readonly string[]).includes(r))).toEqual([]);
  });

  it("the ids are kebab-case and unique", () => {
    for (const r of RULES) expect(r).toMatch(/^[a-z]+(-[a-z]+)*$/);
    expect(new Set(RULES).size).toBe(RULES.length);
  });
});
