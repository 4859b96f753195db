/**
 * The state table of docs/states.md, row by row, and every case of the incident, as data. Readings are
 * built from a real vLLM 0.29 scrape whose values are rewritten per read, so the classifier is fed
 * what the parser really produces.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { classify, flatRunStart, shouldProbe } from "@/lib/check/classify";
import type { BackendState } from "@/lib/check/states";
import type { PendingRestart, ProbeResult, Reading, Thresholds } from "@/lib/check/types";
import { parseVllmMetrics, type VllmMetrics } from "@/lib/metrics/vllm";

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

function judge(readings: Reading[], pendingRestart?: PendingRestart) {
  const reading = readings[readings.length - 1];
  return classify({ history: readings.slice(0, -1), reading, thresholds: T, now: reading.at + 50, pendingRestart });
}
function probeWanted(readings: Reading[], pendingRestart?: PendingRestart) {
  const reading = readings[readings.length - 1];
  return shouldProbe({ history: readings.slice(0, -1), reading, thresholds: T, now: reading.at, pendingRestart });
}

interface Row {
  name: string;
  reads: Reading[];
  state: BackendState;
  reason?: RegExp;
  pending?: PendingRestart;
}

const busy12 = { running: 12, waiting: 0 };
const rows: Row[] = [
  // idle
  { name: "idle: nothing running, the probe answered", reads: [read(0, {}, ok(0))], state: "idle", reason: /0 running, 0 waiting; the probe answered in 40 ms/ },
  { name: "idle between probes: metrics staying at zero keep it idle", reads: [read(0, {}, ok(0)), read(5, {}), read(10, {})], state: "idle", reason: /probe answered 10 s ago/ },
  { name: "idle, not yet probed: cannot say idle", reads: [read(0, {})], state: "unknown" },
  // busy
  { name: "busy at its limit: 12 running with progress", reads: [read(0, { ...busy12, steps: 1000, gen: 5000 }), read(5, { ...busy12, steps: 1050, gen: 5600 })], state: "busy", reason: /12 running, 0 waiting; \+50 steps, \+600 generation tokens in 5 s/ },
  { name: "busy: only waiting, and progress (requests being admitted)", reads: [read(0, { waiting: 3, finished: 10 }), read(5, { waiting: 2, finished: 11 })], state: "busy" },
  { name: "a long prompt is not stuck: steps and tokens flat, KV cache grows", reads: [read(0, { running: 1, kv: 0.1 }), read(60, { running: 1, kv: 0.2 }), read(130, { running: 1, kv: 0.3 })], state: "busy", reason: /KV cache 20.0% -> 30.0% \(prefill in progress\)/ },
  { name: "prompt tokens alone are progress", reads: [read(0, { running: 2 }), read(60, { running: 2, prompt: 900 })], state: "busy" },
  { name: "first read with work: progress needs a second read", reads: [read(0, { running: 2 })], state: "unknown", reason: /first read/ },
  // stalled / stuck
  { name: "one short pause is not stuck", reads: [read(0, { running: 2, steps: 10 }), read(5, { running: 2, steps: 20 }), read(10, { running: 2, steps: 20 })], state: "stalled", reason: /would be called stuck after 2 waits and 120 s without progress/ },
  { name: "two waits but under stuckAfterSeconds: stalled", reads: [read(0, { running: 2 }), read(30, { running: 2 }), read(60, { running: 2 })], state: "stalled" },
  { name: "one long wait over stuckAfterSeconds: stalled (needs two waits)", reads: [read(0, { running: 2 }), read(300, { running: 2 })], state: "stalled" },
  { name: "stuck: no progress across two waits and 120 s", reads: [read(0, { running: 2 }), read(67, { running: 2 }), read(134, { running: 2 })], state: "stuck", reason: /2 running, 0 waiting, 0 new steps in 134 s \(2 min\) across 3 reads/ },
  { name: "running 0, waiting 3, no progress: stalled, not idle", reads: [read(0, { waiting: 3 }), read(5, { waiting: 3 })], state: "stalled", reason: /not being scheduled/ },
  { name: "a hang past the watcher's window: evidence counts from the first flat read kept (flatRunStart), not the window", reads: [read(0, { running: 2 }), read(600, { running: 2 }), read(605, { running: 2 }), read(610, { running: 2 })], state: "stuck", reason: /0 new steps in 610 s \(10 min\)/ },
  { name: "running 0, waiting 3, no progress for two waits: stuck", reads: [read(0, { waiting: 3 }), read(70, { waiting: 3 }), read(140, { waiting: 3 })], state: "stuck" },
  { name: "work that just arrived after an idle read does not count as a wait", reads: [read(0, {}, ok(0)), read(70, { running: 2 }), read(140, { running: 2 })], state: "stalled" },
  { name: "idle and the probe failed once: stalled", reads: [read(0, {}, failed(0))], state: "stalled", reason: /probe failed once/ },
  { name: "idle and the probe failed on two consecutive reads: stuck", reads: [read(0, {}, failed(0)), read(5, {}, failed(5))], state: "stuck", reason: /probe failed on 2 consecutive reads/ },
  // restarts
  { name: "restart between reads (start time changed), work running: starting", reads: [read(0, { running: 2, steps: 5000, start: 1_789_901_808 }), read(5, { running: 2, steps: 3, start: 1_789_999_999 })], state: "starting", reason: /new process since the last read/ },
  { name: "restart between reads, then progress: busy", reads: [read(0, { running: 2, steps: 5000 }), read(5, { running: 2, steps: 3, start: 1_789_999_999 }), read(10, { running: 2, steps: 50, start: 1_789_999_999 })], state: "busy" },
  { name: "restart without a start-time metric: a counter went down", reads: [read(0, { running: 2, steps: 5000, gen: 9000, start: null }), read(5, { running: 2, steps: 4, gen: 4, start: null })], state: "starting", reason: /a counter went down/ },
  { name: "restart, new process idle, probe answered: idle", reads: [read(0, { steps: 5000 }, ok(0)), read(5, { steps: 0, start: 1_789_999_999 }, ok(5))], state: "idle", reason: /new process since the last read/ },
  { name: "counters of two processes are never compared: no stuck across a restart", reads: [read(0, { running: 2 }), read(70, { running: 2 }), read(140, { running: 2, start: 1_789_999_999 })], state: "starting" },
  // no metrics, garbage, dead, slow
  { name: "a server without vLLM metrics: no-metrics, never stuck", reads: [notVllm(0), notVllm(70), notVllm(140)], state: "no-metrics", reason: /never called stuck/ },
  { name: "not vLLM and /v1/models failing: unknown", reads: [notVllm(0, false)], state: "unknown" },
  { name: "dead backend: refused on /metrics and /health twice: down", reads: [read(0, { running: 2 }), refused(5), refused(10)], state: "down", reason: /on 2 consecutive reads over 5 s/ },
  { name: "one refused read is not down", reads: [read(0, {}, ok(0)), refused(5)], state: "unknown", reason: /one failed read is not "down"/ },
  { name: "/metrics refused but /health answers: not down", reads: [refused(0, "ok"), refused(5, "ok")], state: "unknown" },
  { name: "a slow /metrics: one timeout is not down", reads: [read(0, { running: 2 }), timedOut(5)], state: "unknown", reason: /slow answer from a loaded API server is not a dead one/ },
  { name: "timeouts for longer than stuckAfterSeconds: down", reads: [read(0, { running: 2 }), timedOut(5), timedOut(70), timedOut(130)], state: "down", reason: /no answer from \/metrics on 3 reads in a row/ },
  { name: "a proxy's /metrics alternating between two backends would look like restarts, never stuck or busy", reads: [read(0, { running: 2, steps: 900, start: 1 }), read(60, { running: 2, steps: 50, start: 2 }), read(120, { running: 2, steps: 900, start: 1 }), read(180, { running: 2, steps: 50, start: 2 })], state: "starting" },
  // restart confirmed from stepwatch
  { name: "pending restart, old process still there: restarting", reads: [read(0, { running: 2 }), read(5, { running: 2 })], pending: { requestedAt: 1000, processStartTime: 1_789_901_808.66 }, state: "restarting", reason: /waiting for a new process/ },
  { name: "pending restart, nothing listens while weights load: restarting", reads: [read(0, { running: 2 }), refused(5), refused(10)], pending: { requestedAt: 1000, processStartTime: 1_789_901_808.66 }, state: "restarting" },
  { name: "pending restart, new process serving: recovered, idle", reads: [read(0, { running: 2 }), refused(5), read(10, { start: 1_789_999_999 }, ok(10))], pending: { requestedAt: 1000, processStartTime: 1_789_901_808.66 }, state: "idle", reason: /restart recovered/ },
];

describe("classify: the state table and the incident's cases", () => {
  it.each(rows)("$name", ({ reads, state, reason, pending }) => {
    const v = judge(reads, pending);
    expect(v.state).toBe(state);
    if (reason) expect(v.reasons.join(" | ")).toMatch(reason);
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
    const down = judge([refused(0), refused(5)]);
    expect(down).toMatchObject({ healthy: false, restartRecommended: true });
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
