/**
 * The simulator speaking llama.cpp, SGLang, TGI and Ollama over real HTTP on 127.0.0.1: each
 * engine's busy (a long generation where no request finishes), hang, idle, restart and its trap,
 * and expositions with the same families, types and label names as the real scrapes.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { parsePrometheus, type ParseResult } from "@/lib/metrics/prometheus";
import { startSimulator, type Simulator, type SimulatorOptions } from "@/sim/server";
import { call, waitFor } from "./sim-support";
import { observe } from "@/lib/check/observe";
import type { Reading, Thresholds } from "@/lib/core/types";
import { trimHistory } from "@/lib/watcher/history";

const sims: Simulator[] = [];
async function sim(opts: SimulatorOptions): Promise<Simulator> {
  const s = await startSimulator({ weightsLoadSeconds: 0.5, timeScale: 50, ...opts });
  sims.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

async function scrape(s: Simulator): Promise<{ parsed: ParseResult; headers: Record<string, unknown>; body: string }> {
  const a = await call(`${s.url}/metrics`);
  expect(a.status).toBe(200);
  const parsed = parsePrometheus(a.body);
  expect(parsed.errors).toEqual([]);
  return { parsed, headers: a.headers ?? {}, body: a.body };
}

/** The value of one sample (labels must match those given), or undefined when it is absent. */
function value(p: ParseResult, name: string, labels: Record<string, string> = {}): number | undefined {
  return p.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))?.value;
}

async function metric(s: Simulator, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  return value((await scrape(s)).parsed, name, labels);
}

/** Let `engineSeconds` of engine time pass (the clock, not an assertion about how long it took). */
async function letEngineRun(s: Simulator, engineSeconds: number): Promise<void> {
  const until = s.model.simNow() + engineSeconds;
  await waitFor(`${engineSeconds} engine seconds`, () => s.model.simNow() >= until);
}

/** family name -> "type: sorted label names" for every sample, as in the real scrape. */
function shape(p: ParseResult): Map<string, string> {
  const out = new Map<string, Set<string>>();
  const familyOf = (name: string) => {
    if (p.types.has(name)) return name;
    for (const suffix of ["_bucket", "_count", "_sum"]) if (name.endsWith(suffix) && p.types.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length);
    return name;
  };
  for (const s of p.samples) {
    const f = familyOf(s.name);
    const set = out.get(f) ?? new Set<string>();
    for (const k of Object.keys(s.labels)) set.add(k);
    out.set(f, set);
  }
  return new Map([...out].map(([f, labels]) => [f, `${p.types.get(f) ?? "untyped"}: ${[...labels].sort().join(",")}`]));
}

const fixture = (name: string) => parsePrometheus(readFileSync(new URL(`../fixtures/real-metrics/${name}`, import.meta.url), "utf8"));

describe("llama.cpp", () => {
  it("a long generation moves n_decode_total while tokens_predicted_total stays flat; Process-Start-Time-Unix on every /metrics", async () => {
    const s = await sim({ engine: "llamacpp" });
    const idle = await scrape(s);
    expect(value(idle.parsed, "llamacpp:requests_processing")).toBe(0);
    expect(value(idle.parsed, "llamacpp:n_decode_total")).toBe(0);
    expect(String(idle.headers["process-start-time-unix"])).toMatch(/^\d+$/);
    s.load({ requests: 2, promptTokens: 200, maxTokens: 1_000_000 });
    const first = (await scrape(s)).parsed;
    const decodes = await waitFor("n_decode_total to move", async () => {
      const n = await metric(s, "llamacpp:n_decode_total");
      return n !== undefined && n > value(first, "llamacpp:n_decode_total")! + 10 ? n : 0;
    });
    const busy = (await scrape(s)).parsed;
    expect(value(busy, "llamacpp:requests_processing")).toBe(2);
    expect(value(busy, "llamacpp:tokens_predicted_total")).toBe(0); // counted when a request ends
    expect(value(busy, "llamacpp:prompt_tokens_total")).toBe(400); // counted when a prompt is done
    expect(decodes).toBeGreaterThan(0);

    // Past the 4 slots, tasks are deferred until a slot frees.
    s.load({ requests: 3, promptTokens: 200, maxTokens: 1_000_000 });
    const full = (await scrape(s)).parsed;
    expect(value(full, "llamacpp:requests_processing")).toBe(4);
    expect(value(full, "llamacpp:requests_deferred")).toBe(1);
    const slots = JSON.parse((await call(`${s.url}/slots`)).body) as Array<{ is_processing: boolean }>;
    expect(slots.map((x) => x.is_processing)).toEqual([true, true, true, true]);
  });

  it("hang: requests_processing stays 2 and n_decode_total is flat; blocked: /metrics never answers while /health and /props do", async () => {
    const s = await sim({ engine: "llamacpp" });
    s.load({ requests: 2, promptTokens: 50, maxTokens: 1_000_000 });
    await waitFor("decoding", async () => ((await metric(s, "llamacpp:n_decode_total")) ?? 0) > 5);
    await s.setMode("hang");
    const before = await metric(s, "llamacpp:n_decode_total");
    await letEngineRun(s, 5);
    const hung = (await scrape(s)).parsed;
    expect(value(hung, "llamacpp:n_decode_total")).toBe(before);
    expect(value(hung, "llamacpp:requests_processing")).toBe(2);

    await s.setMode("blocked");
    const metrics = await call(`${s.url}/metrics`, { timeoutMs: 300 });
    expect(metrics.error).toBe("TIMEOUT");
    expect((await call(`${s.url}/health`)).status).toBe(200);
    expect(JSON.parse((await call(`${s.url}/props`)).body)).toMatchObject({ is_sleeping: false, total_slots: 4 });
    await s.setMode("normal");
    await waitFor("decoding again", async () => ((await metric(s, "llamacpp:n_decode_total")) ?? 0) > before!);
  });

  it("idle: a completion finishes and only then counts its tokens; without --metrics /metrics is 501", async () => {
    const s = await sim({ engine: "llamacpp" });
    const a = await call(`${s.url}/completion`, { body: { prompt: "Say OK", n_predict: 7 } });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toMatchObject({ stop: true, tokens_predicted: 7, stop_type: "limit" });
    const m = (await scrape(s)).parsed;
    expect(value(m, "llamacpp:tokens_predicted_total")).toBe(7);
    expect(value(m, "llamacpp:requests_processing")).toBe(0);
    const oai = JSON.parse((await call(`${s.url}/v1/completions`, { body: { prompt: "hi", max_tokens: 2 } })).body);
    expect(oai).toMatchObject({ object: "text_completion", choices: [{ finish_reason: "length" }], usage: { completion_tokens: 2 } });

    await s.setMode("no-metrics");
    const off = await call(`${s.url}/metrics`);
    expect(off.status).toBe(501);
    expect(JSON.parse(off.body)).toEqual({ error: { code: 501, message: "This server does not support metrics endpoint. Start it with `--metrics`", type: "not_supported_error" } });
  });

  it("sleep: /props says is_sleeping and /health answers without waking it; a /metrics read wakes it and is recorded", async () => {
    const s = await sim({ engine: "llamacpp", engineOptions: { wakeSeconds: 0.2 } });
    // Driven over the admin API, as the e2e tests and the demo drive it.
    expect((await call(`${s.url}/_sim/mode`, { body: { mode: "sleep" } })).status).toBe(200);
    expect(JSON.parse((await call(`${s.url}/props`)).body).is_sleeping).toBe(true);
    expect(JSON.parse((await call(`${s.url}/health`)).body)).toEqual({ status: "ok" });
    expect(s.state().engineState).toMatchObject({ sleeping: true, wokenBy: [] });

    const m = await call(`${s.url}/metrics`);
    expect(m.status).toBe(200);
    const state = s.state().engineState!;
    expect(state.sleeping).toBe(false);
    expect(state.wokenBy).toEqual([expect.objectContaining({ method: "GET", path: "/metrics" })]);
    expect(JSON.parse((await call(`${s.url}/props`)).body).is_sleeping).toBe(false);
  });

  it("POST /_sim/mode loading keeps the port open and answers 503 Loading model for forSeconds", async () => {
    const s = await sim({ engine: "llamacpp" });
    expect((await call(`${s.url}/_sim/mode`, { body: { mode: "loading", forSeconds: 0.5 } })).status).toBe(202);
    await waitFor("Loading model", async () => (await call(`${s.url}/metrics`)).status === 503);
    expect(s.state()).toMatchObject({ phase: "listening", generation: 1 });
    await waitFor("the load to end", async () => (await call(`${s.url}/metrics`)).status === 200);
  });

  it("sleep on newer builds (#27376): /metrics answers from a cache and does not wake it; --sleep-idle-seconds sleeps by itself", async () => {
    const s = await sim({ engine: "llamacpp", engineOptions: { metricsWakeFromSleep: false, sleepIdleSeconds: 0.2 } });
    await waitFor("the idle watchdog to put it to sleep", () => s.state().engineState!.sleeping);
    const m = (await scrape(s)).parsed;
    expect(value(m, "llamacpp:requests_processing")).toBe(0);
    expect(s.state().engineState).toMatchObject({ sleeping: true, wokenBy: [] });
    // A completion is a task: it wakes the server.
    expect((await call(`${s.url}/completion`, { body: { prompt: "hi", n_predict: 1 } })).status).toBe(200);
    expect(s.state().engineState!.wokenBy).toEqual([expect.objectContaining({ path: "/completion" })]);
  });

  it("toMetrics: the later to_metrics() exposition (cached and speculative counters, n_busy_slots_per_decode a gauge), and /metrics no longer wakes it", async () => {
    const s = await sim({ engine: "llamacpp", engineOptions: { toMetrics: true } });
    const p = (await scrape(s)).parsed;
    expect(p.types.get("llamacpp:n_busy_slots_per_decode")).toBe("gauge");
    expect(p.types.get("llamacpp:prompt_tokens_cached_total")).toBe("counter");
    expect(p.types.get("llamacpp:spec_decode_num_drafts_total")).toBe("counter");
    expect(p.help.get("llamacpp:n_decode_total")).toBe("Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding");
    await s.setMode("sleep");
    expect((await scrape(s)).parsed.types.has("llamacpp:n_decode_total")).toBe(true);
    expect(s.state().engineState).toMatchObject({ sleeping: true, wokenBy: [] });
  });

  it("restart: the port answers 503 Loading model (but /v1/models) while the model loads, then a new process: new header, counters from zero", async () => {
    const s = await sim({ engine: "llamacpp", weightsLoadSeconds: 1 });
    await call(`${s.url}/completion`, { body: { prompt: "hi", n_predict: 3 } });
    const before = await scrape(s);
    expect(value(before.parsed, "llamacpp:tokens_predicted_total")).toBe(3);
    await s.restart();
    await s.whenListening(); // llama-server binds its port first, then loads the model
    expect(s.phase()).toBe("listening");
    const loading = await call(`${s.url}/health`);
    expect(loading.status).toBe(503);
    expect(JSON.parse(loading.body)).toEqual({ error: { code: 503, message: "Loading model", type: "unavailable_error" } });
    expect((await call(`${s.url}/metrics`)).status).toBe(503);
    expect((await call(`${s.url}/v1/models`)).status).toBe(200);
    await waitFor("the model to load", async () => (await call(`${s.url}/health`)).status === 200);
    const after = await scrape(s);
    expect(after.headers["process-start-time-unix"]).not.toBe(before.headers["process-start-time-unix"]);
    expect(value(after.parsed, "llamacpp:tokens_predicted_total")).toBe(0);
    expect(value(after.parsed, "llamacpp:n_decode_total")).toBe(0);
  });
});

describe("SGLang", () => {
  it("matches the real v0.5.10 scrape's families, types and label names", async () => {
    const s = await sim({ engine: "sglang", modelName: "facebook/opt-125m", engineOptions: { warmupSeconds: 0 } });
    expect((await call(`${s.url}/generate`, { body: { text: "hi", sampling_params: { max_new_tokens: 3 } } })).status).toBe(200);
    expect(shape((await scrape(s)).parsed)).toEqual(shape(fixture("sglang-0.5.10-datadog.prom")));
  });

  it("a long generation: generation_tokens_total flat, gauges refreshed at log points (gen_throughput > 0), cuda_graph_passes_total moving", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { progressCounters: true, warmupSeconds: 0 } });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    const passes = await waitFor("decode passes", async () => (await metric(s, "sglang:cuda_graph_passes_total", { mode: "decode_cuda_graph" })) ?? 0);
    const m: ParseResult = await waitFor("the scheduler to log its decode stats", async () => {
      const p = (await scrape(s)).parsed;
      return (value(p, "sglang:gen_throughput") ?? 0) > 0 ? p : null;
    }).then((p) => p!);
    expect(value(m, "sglang:num_running_reqs")).toBe(2);
    expect(value(m, "sglang:generation_tokens_total")).toBe(0);
    expect(value(m, "sglang:num_requests_total")).toBe(0);
    expect(value(m, "sglang:cuda_graph_passes_total", { mode: "decode_cuda_graph" })).toBeGreaterThanOrEqual(passes);
    expect(value(m, "sglang:realtime_tokens_total", { mode: "decode" })).toBeGreaterThan(0);
  });

  it("an idle server that takes work says 0 running until its first decode log; http_requests_active counts the requests at once", async () => {
    let now = Date.now(); // an injected clock: the log points fall where the test puts them
    const s = await sim({ engine: "sglang", timeScale: 1, clock: () => now, engineOptions: { warmupSeconds: 0 } });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    now += 1000; // the prefill is done and a few decode passes ran, far fewer than 40
    const early = (await scrape(s)).parsed;
    expect(s.state().running).toBe(2);
    expect(value(early, "sglang:num_running_reqs")).toBe(0);
    expect(value(early, "sglang:http_requests_active", { endpoint: "/v1/completions", method: "POST" })).toBe(2);
    now += 10_000; // past 40 decode passes
    const logged = (await scrape(s)).parsed;
    expect(value(logged, "sglang:num_running_reqs")).toBe(2);
    expect(value(logged, "sglang:gen_throughput")).toBeGreaterThan(0);
  });

  it("a long generation over HTTP moves inter_token_latency_seconds_count (every 50 tokens when not streamed) while generation_tokens_total stays flat", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    const abort = new AbortController();
    const pending = call(`${s.url}/generate`, { body: { text: "hi", sampling_params: { max_new_tokens: 1_000_000 } }, signal: abort.signal, timeoutMs: 60_000 });
    try {
      const first = await waitFor("ITL observations", async () => (await metric(s, "sglang:inter_token_latency_seconds_count")) ?? 0);
      expect(first % 50).toBe(49); // the first token is TTFT's; then 50 per output
      await waitFor("the next output", async () => ((await metric(s, "sglang:inter_token_latency_seconds_count")) ?? 0) > first);
      expect(await metric(s, "sglang:generation_tokens_total")).toBe(0);
    } finally {
      abort.abort();
      await pending;
    }
  });

  it("a streamed long generation moves inter_token_latency_seconds_count chunk by chunk while generation_tokens_total stays flat", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    const abort = new AbortController();
    const res = await fetch(`${s.url}/generate`, { method: "POST", body: JSON.stringify({ text: "hi", stream: true, sampling_params: { max_new_tokens: 1_000_000 } }), signal: abort.signal });
    const reader = res.body!.getReader();
    try {
      await reader.read(); // the first chunk
      const first = await waitFor("ITL observations", async () => (await metric(s, "sglang:inter_token_latency_seconds_count")) ?? 0);
      const later = await waitFor("more ITL observations", async () => {
        const n = (await metric(s, "sglang:inter_token_latency_seconds_count")) ?? 0;
        return n > first ? n : 0;
      });
      expect(later).toBeGreaterThan(first);
      expect(await metric(s, "sglang:generation_tokens_total")).toBe(0);
    } finally {
      abort.abort();
      await reader.cancel().catch(() => undefined);
    }
  });

  it("the finish counters do move once requests end, background load included (flat during a long generation means nothing finished)", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 20 });
    await waitFor("both to finish", async () => (await metric(s, "sglang:num_requests_total")) === 2);
    expect(await metric(s, "sglang:generation_tokens_total")).toBe(40);
    expect(await metric(s, "sglang:prompt_tokens_total")).toBe(200);
  });

  it("hang: the gauges keep their last values (gen_throughput stays > 0), the counters are flat, /health answers 503 after its timeout", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { progressCounters: true, warmupSeconds: 0, healthCheckTimeoutSeconds: 1.5 } });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await waitFor("a decode log", async () => ((await metric(s, "sglang:gen_throughput")) ?? 0) > 0);
    await s.setMode("hang");
    const before = (await scrape(s)).parsed;
    await letEngineRun(s, 60); // longer than the 30 s idle refresh: a hung scheduler does not refresh either
    const after = (await scrape(s)).parsed;
    for (const name of ["sglang:gen_throughput", "sglang:num_running_reqs", "sglang:token_usage"]) expect(value(after, name)).toBe(value(before, name));
    expect(value(after, "sglang:gen_throughput")).toBeGreaterThan(0);
    expect(value(after, "sglang:cuda_graph_passes_total", { mode: "decode_cuda_graph" })).toBe(value(before, "sglang:cuda_graph_passes_total", { mode: "decode_cuda_graph" }));
    const health = await call(`${s.url}/health`, { timeoutMs: 10_000 });
    expect(health.status).toBe(503);
  });

  it("idle: /health runs a one-token generation (logged as a completion) and counts nothing in the exposition", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    expect((await call(`${s.url}/health`, { timeoutMs: 10_000 })).status).toBe(200);
    expect(s.received().find((r) => r.path === "/health")).toMatchObject({ kind: "completion" });
    const m = (await scrape(s)).parsed;
    expect(value(m, "sglang:num_requests_total")).toBe(0);
    await s.setMode("no-metrics");
    const off = await call(`${s.url}/metrics`);
    expect(off.status).toBe(404);
  });

  it("POST /_sim/mode loading restarts it (202, then refused), as every engine that does not listen while it loads", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    expect((await call(`${s.url}/_sim/mode`, { body: { mode: "loading", forSeconds: 0.5 } })).status).toBe(202);
    await waitFor("the socket to close", () => s.phase() === "loading");
    expect((await call(`${s.url}/health`)).error).toBe("ECONNREFUSED");
    await s.whenListening();
    expect(s.state().generation).toBe(2);
  });

  it("restart: refused while it loads, then the counters start again from zero (multiprocess: no start time)", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    await call(`${s.url}/generate`, { body: { text: "hi", sampling_params: { max_new_tokens: 4 } } });
    const before = (await scrape(s)).parsed;
    expect(value(before, "sglang:num_requests_total")).toBe(1);
    expect(before.samples.some((x) => x.name.startsWith("process_"))).toBe(false);
    await s.restart();
    expect((await call(`${s.url}/metrics`)).error).toBe("ECONNREFUSED");
    await s.whenListening();
    expect(await metric(s, "sglang:num_requests_total")).toBe(0);
  });
});

describe("SGLang watched under its normal load (issue 29 item 5)", () => {
  it("ten engine minutes of the demo's batch job (2-3 long generations at a time), read every 5 s by the watcher's read and classifier: busy throughout, never stalled", async () => {
    let now = Date.now(); // an injected clock: ten engine minutes without waiting ten minutes
    const s = await sim({ engine: "sglang", timeScale: 1, clock: () => now, engineOptions: { warmupSeconds: 0 } });
    const t: Thresholds = { stuckAfterSeconds: 120, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900, startupGraceSeconds: 600 };
    // The demo's side job (sim/demo.ts SIDE_SCHEDULE, sideJob): prompts of 200-2000 tokens, 600-1500 out.
    let seed = 7;
    const rand = (lo: number, hi: number) => lo + ((seed = (seed * 48271) % 2147483647) % (hi - lo + 1));
    let history: Reading[] = [];
    const states: string[] = [];
    for (let second = 0; second < 600; second++) {
      const want = second < 300 ? 2 : 3;
      const short = want - s.state().running - s.state().waiting;
      for (let i = 0; i < short; i++) s.load({ requests: 1, promptTokens: rand(200, 2000), maxTokens: rand(600, 1500) });
      now += 1000;
      if (second % 5 !== 4) continue;
      const { reading, verdict } = await observe({ url: s.url, engine: "sglang" }, history, { thresholds: t, read: { timeoutMs: 5000 }, now: () => now });
      history = trimHistory([...history, reading], now, t);
      states.push(`${second + 1}s ${verdict.state}${verdict.state === "busy" ? "" : `: ${verdict.reasons.map((r) => r.text).join(" | ")}`}`);
    }
    const notBusy = states.slice(1).filter((x) => !/ busy$/.test(x));
    expect(notBusy, notBusy.slice(0, 5).join("\n")).toEqual([]);
  }, 60_000);
});

describe("TGI", () => {
  it("matches the real scrape's families, types and label names (after the traffic that creates them)", async () => {
    const s = await sim({ engine: "tgi" });
    s.load({ requests: 1, promptTokens: 50, maxTokens: 200 });
    // A second prefill joining a running batch is what creates tgi_batch_concat.
    await waitFor("the first batch to decode", () => {
      s.model.advance();
      return s.model.engines[0].stats.forwardPasses > s.model.engines[0].stats.prefillPasses;
    });
    const ok = call(`${s.url}/generate`, { body: { inputs: "What is Deep Learning?", parameters: { max_new_tokens: 5 } } });
    expect((await call(`${s.url}/generate`, { body: { inputs: "" } })).status).toBe(422);
    expect((await ok).status).toBe(200);
    await waitFor("the background request to finish", () => s.state().running === 0);
    const sim_ = shape((await scrape(s)).parsed);
    const real = shape(fixture("tgi-datadog-truncated.prom"));
    for (const [family, typeAndLabels] of real) expect(`${family} ${sim_.get(family)}`).toBe(`${family} ${typeAndLabels}`);
  });

  it("a long generation moves tgi_batch_inference_count{decode} while tgi_request_success stays flat; a hang leaves one call counted but never succeeded", async () => {
    const s = await sim({ engine: "tgi" });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await call(`${s.url}/generate`, { body: { inputs: "hi", parameters: { max_new_tokens: 1 } }, timeoutMs: 100 }).catch(() => undefined);
    const first = await waitFor("decode calls", async () => (await metric(s, "tgi_batch_inference_count", { method: "decode" })) ?? 0);
    const moved = await waitFor("more decode calls", async () => {
      const n = (await metric(s, "tgi_batch_inference_count", { method: "decode" })) ?? 0;
      return n > first ? n : 0;
    });
    expect(moved).toBeGreaterThan(first);
    expect((await metric(s, "tgi_batch_current_size")) ?? 0).toBeGreaterThanOrEqual(2);
    const success = (await metric(s, "tgi_request_success")) ?? 0;
    expect(success).toBeLessThanOrEqual(1); // only the 1-token request can have finished

    await s.setMode("hang");
    const hung = (await scrape(s)).parsed;
    const count = value(hung, "tgi_batch_inference_count", { method: "decode" })!;
    expect(count).toBe(value(hung, "tgi_batch_inference_success", { method: "decode" })! + 1);
    await letEngineRun(s, 10);
    expect(await metric(s, "tgi_batch_inference_count", { method: "decode" })).toBe(count);
    expect((await call(`${s.url}/health`, { timeoutMs: 300 })).error).toBe("TIMEOUT");
    await s.setMode("normal");
    expect((await call(`${s.url}/health`)).status).toBe(200);
  });

  it("tgi_request_success moves once requests end, background load included", async () => {
    const s = await sim({ engine: "tgi" });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 20 });
    await waitFor("both to finish", async () => (await metric(s, "tgi_request_success")) === 2);
    expect(await metric(s, "tgi_request_count")).toBe(2);
  });

  it("restart: refused while the shards load, then the families of the old process are gone", async () => {
    const s = await sim({ engine: "tgi" });
    expect((await call(`${s.url}/generate`, { body: { inputs: "hi", parameters: { max_new_tokens: 2 } } })).status).toBe(200);
    expect(await metric(s, "tgi_request_success")).toBe(1);
    expect(JSON.parse((await call(`${s.url}/info`)).body)).toMatchObject({ router: "text-generation-router", model_id: s.modelName });
    await s.restart();
    expect((await call(`${s.url}/health`)).error).toBe("ECONNREFUSED");
    await s.whenListening();
    expect(await metric(s, "tgi_request_success")).toBeUndefined();
  });
});

describe("Ollama", () => {
  it("has no /metrics; /api/version and /api/ps answer; a generation queues behind the one running (the reason it is never probed)", async () => {
    const s = await sim({ engine: "ollama" });
    const m = await call(`${s.url}/metrics`);
    expect(m.status).toBe(404);
    expect(m.body).toBe("404 page not found");
    expect(JSON.parse((await call(`${s.url}/api/version`)).body)).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
    expect(JSON.parse((await call(`${s.url}/api/ps`)).body).models).toEqual([expect.objectContaining({ name: s.modelName, context_length: 4096 })]);
    s.load({ requests: 1, promptTokens: 100, maxTokens: 1_000_000 });
    const probe = await call(`${s.url}/api/generate`, { body: { model: s.modelName, prompt: "ping", stream: false, options: { num_predict: 1 } }, timeoutMs: 300 });
    expect(probe.error).toBe("TIMEOUT");
    expect(s.completionsReceivedWhileBusy()).toEqual([expect.objectContaining({ path: "/api/generate", running: 1 })]);
  });

  it("hang: the held generation never answers while /api/version and /api/ps still do", async () => {
    const s = await sim({ engine: "ollama" });
    await s.setMode("hang");
    const held = await call(`${s.url}/api/generate`, { body: { model: s.modelName, prompt: "hi", stream: false }, timeoutMs: 300 });
    expect(held.error).toBe("TIMEOUT");
    expect((await call(`${s.url}/api/version`)).status).toBe(200);
    expect(JSON.parse((await call(`${s.url}/api/ps`)).body).models).toHaveLength(1);
  });

  it("sleep (unloaded): /api/ps is empty, the next generation loads the model first and is recorded; a restart has nothing loaded", async () => {
    const s = await sim({ engine: "ollama", engineOptions: { loadSeconds: 0.2 } });
    await s.setMode("sleep");
    expect(JSON.parse((await call(`${s.url}/api/ps`)).body)).toEqual({ models: [] });
    const a = await call(`${s.url}/api/generate`, { body: { model: s.modelName, prompt: "hi", stream: false, options: { num_predict: 2 } } });
    expect(JSON.parse(a.body)).toMatchObject({ done: true, done_reason: "length", eval_count: 2 });
    expect(s.state().engineState!.wokenBy).toEqual([expect.objectContaining({ path: "/api/generate" })]);
    expect(JSON.parse((await call(`${s.url}/api/ps`)).body).models).toHaveLength(1);
    await s.restart();
    await s.whenListening();
    expect(JSON.parse((await call(`${s.url}/api/ps`)).body)).toEqual({ models: [] });
    expect((await call(`${s.url}/`)).body).toBe("Ollama is running");
  });
});
