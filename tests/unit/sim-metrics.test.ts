import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { parseVllmMetrics } from "@/lib/engines/vllm";
import { formatValue } from "@/sim/format";
import { renderMetrics } from "@/sim/metrics";
import { VllmSimModel, type SimModelOptions } from "@/sim/model";

const FIXTURE = fs.readFileSync(path.join(__dirname, "../fixtures/real-metrics/vllm-0.29.0-inferstack.prom"), "utf8");

/** A model on a hand-driven clock (ms). */
function modelAt(over: Partial<SimModelOptions> = {}) {
  let now = 1_789_901_808_660;
  const model = new VllmSimModel({ clock: () => now, ...over });
  return {
    model,
    tick: (seconds: number) => {
      now += seconds * 1000;
      model.advance();
    },
    read: () => {
      model.advance();
      const p = parseVllmMetrics(renderMetrics(model));
      expect(p.error).toBeUndefined();
      expect(p.warnings).toEqual([]);
      return p.metrics!;
    },
  };
}

describe("float formatting like prometheus_client", () => {
  it.each([
    [1789901808.66, "1.78990180866e+09"],
    [8597729280, "8.59772928e+09"],
    [10777853952, "1.0777853952e+010"],
    [1048576, "1.048576e+06"],
    [1e6, "1e+06"],
    [530, "530.0"],
    [0, "0.0"],
    [0.001, "0.001"],
    [1e-5, "1e-05"],
    [28.04, "28.04"],
    [Infinity, "+Inf"],
    [1.7899019633535712e9, "1.7899019633535712e+09"],
  ])("%s -> %s", (v, text) => expect(formatValue(v)).toBe(text));
});

describe("simulated /metrics exposition", () => {
  it("uses real vLLM 0.29 family names, types and HELP texts", () => {
    const real = parsePrometheus(FIXTURE);
    const { model } = modelAt();
    model.submit({ promptTokens: 100, maxTokens: 50 });
    const ours = parsePrometheus(renderMetrics(model));
    expect(ours.errorCount).toBe(0);
    for (const [name, type] of ours.types) {
      if (name === "vllm:cache_config_info") continue; // our label set is a subset
      expect(real.types.get(name), name).toBe(type);
      expect(ours.help.get(name), name).toBe(real.help.get(name));
    }
    // The families stepwatch reads are all there.
    for (const f of ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:iteration_tokens_total", "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total", "process_start_time_seconds"])
      expect(ours.types.has(f), f).toBe(true);
  });

  it("labels like V1 (engine + model_name, sorted, le as 1.0) and histograms self-consistent", () => {
    const { model, tick } = modelAt({ modelName: "m" });
    model.submit({ promptTokens: 100, maxTokens: 50 });
    tick(30);
    const text = renderMetrics(model);
    expect(text).toContain('vllm:iteration_tokens_total_bucket{engine="0",le="1.0",model_name="m"} ');
    expect(text).toContain('vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 1.0');
    expect(text).toMatch(/^vllm:iteration_tokens_total_created\{engine="0",model_name="m"\} 1\.\d+e\+09$/m);
    const samples = parsePrometheus(text).samples;
    const get = (name: string, le?: string) => samples.find((s) => s.name === name && (le === undefined || s.labels.le === le))!.value;
    expect(get("vllm:iteration_tokens_total_bucket", "+Inf")).toBe(get("vllm:iteration_tokens_total_count"));
    expect(get("vllm:iteration_tokens_total_count")).toBe(50); // one counted step per output token
    expect(get("vllm:generation_tokens_total")).toBe(50);
    expect(get("vllm:prompt_tokens_total")).toBe(100);
  });

  it("reports load and progress through stepwatch's parser", () => {
    const { model, tick, read } = modelAt();
    for (let i = 0; i < 14; i++) model.submit({ promptTokens: 200, maxTokens: 5000 });
    tick(5);
    const a = read();
    tick(10);
    const b = read();
    expect(a).toMatchObject({ running: 12, waiting: 2 });
    expect(b.steps!).toBeGreaterThan(a.steps!);
    expect((b.generationTokens! - a.generationTokens!) / 10).toBeGreaterThan(100);
    expect(b.kvCacheUsage!).toBeGreaterThan(0);
    expect(b.processStartTime).toBe(1789901808.66);
    expect(b.models).toEqual(["gb10/llama-3.1-70b-fp8"]);
  });
});

describe("simulated server process", () => {
  it("hang freezes every counter while requests stay running", () => {
    const { model, tick, read } = modelAt();
    model.submit({ promptTokens: 100, maxTokens: 5000 });
    model.submit({ promptTokens: 100, maxTokens: 5000 });
    tick(10);
    model.setMode("hang");
    const a = read();
    tick(300);
    const b = read();
    expect(b).toEqual(a);
    expect(b.running).toBe(2);
  });

  it("waiting-hang shows running 0, waiting N, no progress", () => {
    const { model, tick, read } = modelAt();
    model.submit({ promptTokens: 100, maxTokens: 5000 });
    tick(5);
    model.setMode("waiting-hang", { waiting: 3 });
    const a = read();
    tick(120);
    const b = read();
    expect(a).toMatchObject({ running: 0, waiting: 3 });
    expect(b).toEqual(a);
    model.setMode("normal");
    tick(5);
    expect(read().running).toBe(3);
  });

  it("a restart resets the counters and changes the start time", () => {
    const { model, tick, read } = modelAt();
    model.submit({ promptTokens: 100, maxTokens: 5000 });
    tick(20);
    const before = read();
    expect(before.steps!).toBeGreaterThan(0);
    tick(1);
    model.startNewProcess();
    const after = read();
    expect(after.processStartTime!).toBeGreaterThan(before.processStartTime!);
    expect(after).toMatchObject({ running: 0, waiting: 0, steps: 0, generationTokens: 0, promptTokens: 0, finishedRequests: 0 });
  });

  it("two restarts in the same instant still give two start times", () => {
    const { model } = modelAt();
    const first = model.processStartTime;
    model.startNewProcess();
    model.startNewProcess();
    expect(model.processStartTime).toBeCloseTo(first + 0.02, 5);
  });

  it("multi-API-server mode omits process_start_time_seconds (and the process/_created families)", () => {
    const { model, read } = modelAt({ multiApiServer: true });
    const text = renderMetrics(model);
    expect(text).not.toContain("process_start_time_seconds");
    expect(text).not.toContain("_created");
    expect(text).not.toContain("python_gc");
    expect(read().processStartTime).toBeNull();
  });

  it("data-parallel emits one series per engine and spreads requests", () => {
    const { model, tick, read } = modelAt({ engines: 2, modelName: "dp" });
    for (let i = 0; i < 4; i++) model.submit({ promptTokens: 50, maxTokens: 5000 });
    tick(10);
    const text = renderMetrics(model);
    expect(text).toContain('vllm:num_requests_running{engine="0",model_name="dp"} 2.0');
    expect(text).toContain('vllm:num_requests_running{engine="1",model_name="dp"} 2.0');
    expect(text.match(/^vllm:iteration_tokens_total_count\{/gm)).toHaveLength(2);
    expect(read().running).toBe(4); // stepwatch sums over engines
  });

  it("counts /v1 HTTP requests like the FastAPI instrumentator", () => {
    const { model } = modelAt();
    model.recordHttp("/v1/models", "GET", 200);
    model.recordHttp("/v1/models", "GET", 200);
    model.recordHttp("/v1/completions", "POST", 404);
    const text = renderMetrics(model);
    expect(text).toContain('http_requests_total{handler="/v1/models",method="GET",status="2xx"} 2.0');
    expect(text).toContain('http_requests_total{handler="/v1/completions",method="POST",status="4xx"} 1.0');
  });

  it("rejects an unknown mode by name", () => {
    const { model } = modelAt();
    expect(() => model.setMode("sleepy" as never)).toThrow(/unknown simulator mode "sleepy"/);
  });
});
