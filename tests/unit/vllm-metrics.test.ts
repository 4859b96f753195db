import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { extractVllmLatency } from "@/lib/metrics/vllm-latency";
import { extractVllm, extractVllmDetailed, parseVllmMetrics, type VllmMetrics } from "@/lib/engines/vllm";

const FIXTURES = path.join(__dirname, "../fixtures/real-metrics");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name), "utf8");

describe("parseVllmMetrics on real scrapes", () => {
  // The numbers below are read off the fixture files (grep '^vllm:num_requests\|...' <file>).
  it.each<{ file: string; samples: number; metrics: VllmMetrics }>([
    {
      file: "vllm-0.29.0-inferstack.prom",
      samples: 420,
      metrics: {
        processStartTime: 1789901808.66, // 1.78990180866e+09
        running: 0,
        waiting: 0,
        steps: 137,
        promptTokens: 530,
        generationTokens: 584,
        finishedRequests: 10, // stop 0 + length 10 + abort 0 + error 0 + repetition 0
        kvCacheUsage: 0,
        waitingCapacity: 0, // num_requests_waiting_by_reason{reason="capacity"}
        preemptions: 0,
        asleep: false, // engine_sleep_state{sleep_state="awake"} 1.0
        models: ["qwen2.5-1.5b"],
        evidence: ["steps", "promptTokens", "generationTokens"],
        cadence: { steps: "step", promptTokens: "step", generationTokens: "step", finishedRequests: "request-end" },
      },
    },
    {
      file: "vllm-unstated-lmswitch.prom",
      samples: 519,
      metrics: {
        processStartTime: 1788859833.25, // 1.78885983325e+09
        running: 0,
        waiting: 0,
        steps: 17833,
        promptTokens: 3675428, // 3.675428e+06
        generationTokens: 44995,
        finishedRequests: 26,
        kvCacheUsage: 0,
        waitingCapacity: 0,
        preemptions: 0,
        asleep: false,
        models: ["deepseek-v4-flash-vision-exp-ablit-dual"],
        evidence: ["steps", "promptTokens", "generationTokens"],
        cadence: { steps: "step", promptTokens: "step", generationTokens: "step", finishedRequests: "request-end" },
      },
    },
    {
      // Mixed V0/V1: both gpu_cache_usage_perc and kv_cache_usage_perc, no engine label.
      file: "vllm-0.4.3-plus-v1-families-datadog.prom",
      samples: 185,
      metrics: {
        processStartTime: 1718140558.3,
        running: 0,
        waiting: 0,
        steps: 71,
        promptTokens: 5,
        generationTokens: 7,
        finishedRequests: 1,
        kvCacheUsage: 0,
        waitingCapacity: null, // no num_requests_waiting_by_reason in this fixture
        preemptions: 0,
        asleep: false,
        models: ["facebook/opt-125m"],
        evidence: ["steps", "promptTokens", "generationTokens"],
        cadence: { steps: "step", promptTokens: "step", generationTokens: "step", finishedRequests: "request-end" },
      },
    },
  ])("$file", ({ file, samples, metrics }) => {
    const r = parseVllmMetrics(fixture(file));
    expect(r).toMatchObject({ metrics, warnings: [], sampleCount: samples, errorCount: 0 });
    expect(r.metrics).toEqual(metrics);
    expect(extractVllm(parsePrometheus(fixture(file)))).toEqual(metrics);
  });

  it.each([
    { file: "sglang-0.5.10-datadog.prom", samples: 43 },
    { file: "tgi-datadog-truncated.prom", samples: 161 },
  ])("$file is not vLLM", ({ file, samples }) => {
    const r = parseVllmMetrics(fixture(file));
    expect(r.metrics).toBeNull();
    expect(r.error).toBe(`no vLLM metrics (found ${samples} series, none named vllm:*)`);
    expect(r.sampleCount).toBe(samples);
    expect(extractVllm(parsePrometheus(fixture(file)))).toBeNull();
  });
});

/** A minimal vLLM V1 body for one engine, built from the families extractVllm reads. */
function engineBody(engine: string, model: string, v: Partial<Record<string, string>> = {}): string {
  const l = `engine="${engine}",model_name="${model}"`;
  return [
    `vllm:num_requests_running{${l}} ${v.running ?? "0.0"}`,
    `vllm:num_requests_waiting{${l}} ${v.waiting ?? "0.0"}`,
    `vllm:kv_cache_usage_perc{${l}} ${v.kv ?? "0.0"}`,
    `vllm:prompt_tokens_total{${l}} ${v.prompt ?? "0.0"}`,
    `vllm:prompt_tokens_created{${l}} 1.7899019633530111e+09`,
    `vllm:generation_tokens_total{${l}} ${v.generation ?? "0.0"}`,
    `vllm:request_success_total{${l},finished_reason="stop"} ${v.stop ?? "0.0"}`,
    `vllm:request_success_total{${l},finished_reason="length"} ${v.length ?? "0.0"}`,
    `vllm:request_success_created{${l},finished_reason="stop"} 1.78e+09`,
    `vllm:iteration_tokens_total_bucket{${l},le="+Inf"} ${v.steps ?? "0.0"}`,
    `vllm:iteration_tokens_total_count{${l}} ${v.steps ?? "0.0"}`,
    `vllm:iteration_tokens_total_sum{${l}} 12345.0`,
    `vllm:iteration_tokens_total_created{${l}} 1.78e+09`,
  ].join("\n");
}

const START = "process_start_time_seconds 1.78990180866e+09";

describe("extraction rules", () => {
  it("sums every engine of a data-parallel server, means kv usage, and ignores _created", () => {
    const body = [
      START,
      engineBody("0", "m-a", {
        ...{ running: "3.0", waiting: "1.0", kv: "0.5", steps: "70" },
        ...{ prompt: "100", generation: "40", stop: "2", length: "1" },
      }),
      engineBody("1", "m-a", {
        ...{ running: "4.0", waiting: "0.0", kv: "0.25", steps: "30" },
        ...{ prompt: "200", generation: "60", stop: "5", length: "0" },
      }),
      engineBody("2", "m-b", {
        ...{ running: "0.0", waiting: "2.0", kv: "0", steps: "0" },
        ...{ prompt: "1e3", generation: "0", stop: "0", length: "0" },
      }),
    ].join("\n");
    const r = parseVllmMetrics(body);
    expect(r.error).toBeUndefined();
    expect(r.warnings).toEqual([]);
    expect(r.metrics).toMatchObject({
      processStartTime: 1789901808.66,
      running: 7,
      waiting: 3,
      steps: 100,
      promptTokens: 1300,
      generationTokens: 100,
      finishedRequests: 8,
      kvCacheUsage: 0.25, // (0.5 + 0.25 + 0) / 3: a fraction per engine, not a sum
      models: ["m-a", "m-b"],
    });
    // Each engine's own figures too: one wedged engine must not hide behind the sums.
    expect(Object.keys(r.metrics!.engines!)).toEqual(["0", "1", "2"]);
    expect(r.metrics!.engines!["1"]).toMatchObject({ running: 4, waiting: 0, steps: 30, promptTokens: 200, generationTokens: 60, finishedRequests: 5, kvCacheUsage: 0.25 });
    expect(r.metrics!.engines!["2"]).toMatchObject({ running: 0, waiting: 2, steps: 0, finishedRequests: 0 });
  });

  it("gives processStartTime null when process_start_time_seconds is absent (multiprocess API server)", () => {
    const r = parseVllmMetrics(engineBody("0", "m", { running: "1" }));
    expect(r.metrics?.processStartTime).toBeNull();
    expect(r.metrics?.running).toBe(1);
    expect(r.warnings).toEqual([]);
  });

  it("falls back to vllm:gpu_cache_usage_perc (older vLLM) when kv_cache_usage_perc is absent", () => {
    const body = engineBody("0", "m").replace(/vllm:kv_cache_usage_perc/g, "vllm:gpu_cache_usage_perc").replace(
      'vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.0',
      'vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.42',
    );
    expect(parseVllmMetrics(body).metrics?.kvCacheUsage).toBe(0.42);
  });

  it("gives null for absent optional families, with no warning", () => {
    const body = [
      START,
      'vllm:num_requests_running{engine="0",model_name="m"} 2',
      'vllm:num_requests_waiting{engine="0",model_name="m"} 0',
    ].join("\n");
    const r = parseVllmMetrics(body);
    expect(r.warnings).toEqual([]);
    expect(r.metrics).toEqual({
      processStartTime: 1789901808.66,
      running: 2,
      waiting: 0,
      steps: null,
      promptTokens: null,
      generationTokens: null,
      finishedRequests: null,
      kvCacheUsage: null,
      waitingCapacity: null,
      preemptions: null,
      asleep: null,
      evidence: ["steps", "promptTokens", "generationTokens"],
      cadence: { steps: "step", promptTokens: "step", generationTokens: "step", finishedRequests: "request-end" },
      models: ["m"],
    });
  });

  // A busy server must never look idle: a missing or broken load gauge means no metrics, not 0.
  it.each([
    { name: "running absent", drop: "vllm:num_requests_running", set: {}, error: "without vllm:num_requests_running" },
    { name: "waiting absent", drop: "vllm:num_requests_waiting", set: {}, error: "without vllm:num_requests_waiting" },
    { name: "running NaN on one engine", drop: null, set: { running: "NaN" }, error: "unusable vllm:num_requests_running" },
    { name: "running +Inf", drop: null, set: { running: "+Inf" }, error: "is not a finite number >= 0" },
    { name: "waiting negative", drop: null, set: { waiting: "-1" }, error: "unusable vllm:num_requests_waiting" },
  ])("no metrics when $name", ({ drop, set, error }) => {
    let body = [START, engineBody("0", "m", { running: "5" }), engineBody("1", "m", set)].join("\n");
    if (drop) body = body.split("\n").filter((l) => !l.startsWith(drop)).join("\n");
    const r = parseVllmMetrics(body);
    expect(r.metrics).toBeNull();
    expect(r.error).toContain(error);
    expect(r.error).toContain("cannot tell a busy server from an idle one");
  });

  it.each([
    { field: "steps", set: { steps: "NaN" }, family: "vllm:iteration_tokens_total_count" },
    { field: "promptTokens", set: { prompt: "-Inf" }, family: "vllm:prompt_tokens_total" },
    { field: "generationTokens", set: { generation: "-3" }, family: "vllm:generation_tokens_total" },
    { field: "finishedRequests", set: { stop: "+Inf" }, family: "vllm:request_success_total" },
    { field: "kvCacheUsage", set: { kv: "1.5" }, family: "vllm:kv_cache_usage_perc" },
  ] as const)("an unusable $family on one engine makes $field null with a warning", ({ field, set, family }) => {
    const healthy = { running: "1", steps: "10", prompt: "5", generation: "5", stop: "1", kv: "0.2" };
    const body = [START, engineBody("0", "m", healthy), engineBody("1", "m", set)].join("\n");
    const r = parseVllmMetrics(body);
    expect(r.metrics).not.toBeNull();
    expect(r.metrics?.[field]).toBeNull();
    expect(r.metrics?.running).toBe(1);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toContain(`${family} ignored: ${family}{engine="1"`);
  });

  it("an unusable process_start_time_seconds becomes null with a warning", () => {
    const r = parseVllmMetrics(["process_start_time_seconds NaN", engineBody("0", "m")].join("\n"));
    expect(r.metrics?.processStartTime).toBeNull();
    expect(r.warnings).toEqual([
      "process_start_time_seconds ignored: process_start_time_seconds = NaN is not a positive unix time",
    ]);
  });

  it("reads escaped labels, timestamps and CRLF in a vLLM body", () => {
    const body = [
      '# HELP vllm:num_requests_running Number of requests in model execution batches.',
      "# TYPE vllm:num_requests_running gauge",
      'vllm:num_requests_running{engine="0",model_name="org/\\"q\\"\\\\n\\nx"} 2 1700000000000',
      'vllm:num_requests_waiting{engine="0",model_name="org/\\"q\\"\\\\n\\nx"} 1 1700000000000',
    ].join("\r\n");
    const r = parseVllmMetrics(body);
    expect(r.metrics?.running).toBe(2);
    expect(r.metrics?.waiting).toBe(1);
    expect(r.metrics?.models).toEqual(['org/"q"\\n\nx']);
  });

  it("ignores *_created even when it is the only series with a model_name", () => {
    const body = [
      'vllm:num_requests_running{engine="0"} 0',
      'vllm:num_requests_waiting{engine="0"} 0',
      'vllm:prompt_tokens_created{engine="0",model_name="ghost"} 1.78e+09',
    ].join("\n");
    const r = parseVllmMetrics(body);
    expect(r.metrics?.models).toEqual([]);
    expect(r.metrics?.promptTokens).toBeNull();
  });

  it("extractVllm returns null only when there is no vllm:* series; the detailed form says why otherwise", () => {
    expect(extractVllm(parsePrometheus("up 1\nprocess_start_time_seconds 1.7e9"))).toBeNull();
    expect(extractVllmDetailed(parsePrometheus("up 1")).error).toBeUndefined();
    const noLoad = extractVllmDetailed(parsePrometheus('vllm:generation_tokens_total{engine="0"} 5'));
    expect(noLoad.metrics).toBeNull();
    expect(noLoad.error).toContain("without vllm:num_requests_running");
  });
});

describe("bodies that are not Prometheus text", () => {
  it.each([
    {
      name: "an HTML error page",
      body: [
        "<html>",
        "<head><title>404 Not Found</title></head>",
        "<body>",
        "<center><h1>404 Not Found</h1></center>",
        "</body>",
        "</html>",
        "",
      ].join("\r\n"),
      error: "not Prometheus text: 6 of 6 lines unparseable (first: line 1 '<html>': no metric name",
      errors: 6,
    },
    {
      name: "a JSON error",
      body: '{"object":"error","message":"Not Found","type":"NotFoundError","param":null,"code":404}',
      error: `not Prometheus text: 1 of 1 lines unparseable (first: line 1 '{"object":"error","message":"Not Found",...': no metric name`,
      errors: 1,
    },
    {
      name: "mostly junk with one sample-like line",
      body: "Service Unavailable\nretry later\nok 1\n!!!",
      error: "not Prometheus text: 3 of 4 lines unparseable (first: line 1 'Service Unavailable': invalid value",
      errors: 3,
    },
  ])("$name gives an error, not a throw", ({ body, error, errors }) => {
    const r = parseVllmMetrics(body);
    expect(r.metrics).toBeNull();
    expect(r.error).toContain(error);
    expect(r.errorCount).toBe(errors);
    expect(r.warnings).toEqual([]);
  });

  it.each([
    { body: "", error: "empty /metrics body" },
    { body: " \n\r\n", error: "empty /metrics body" },
    { body: "# HELP a b\n# TYPE a gauge\n", error: "not Prometheus text: no samples, only comments" },
  ])("$error", ({ body, error }) => {
    expect(parseVllmMetrics(body)).toEqual({ metrics: null, error, warnings: [], sampleCount: 0, errorCount: 0 });
  });

  it("keeps the metrics of a good body with a few bad lines, and warns about them", () => {
    const body = [START, engineBody("0", "m", { running: "2" }), "garbage line here", "another{bad 1"].join("\n");
    const r = parseVllmMetrics(body);
    expect(r.metrics?.running).toBe(2);
    expect(r.errorCount).toBe(2);
    expect(r.warnings[0]).toMatch(/^2 unparseable lines skipped \(first: line 15 'garbage line here': invalid value/);
  });
});

describe("parseVllmMetrics parses only the series it reads (VLLM_SERIES)", () => {
  const FILES = [
    "vllm-0.29.0-inferstack.prom",
    "vllm-unstated-lmswitch.prom",
    "vllm-0.4.3-plus-v1-families-datadog.prom",
    "sglang-0.5.10-datadog.prom",
    "tgi-datadog-truncated.prom",
  ];

  it.each(FILES)("%s: the same metrics, error and warnings as a full parse", (file) => {
    const text = fixture(file);
    const full = parsePrometheus(text);
    const fromFull = extractVllmDetailed(full);
    const filtered = parseVllmMetrics(text);
    expect(filtered.metrics).toEqual(fromFull.metrics);
    expect(filtered.warnings).toEqual(fromFull.warnings);
    expect(filtered.sampleCount).toBe(full.samples.length);
    if (fromFull.error) expect(filtered.error).toBe(fromFull.error);
  });

  it("names the missing load gauge of a vLLM body exactly as a full parse does", () => {
    const text = fixture("vllm-0.29.0-inferstack.prom")
      .split("\n")
      .filter((l) => !l.startsWith("vllm:num_requests_running") && !l.startsWith("vllm:num_requests_waiting"))
      .join("\n");
    const fromFull = extractVllmDetailed(parsePrometheus(text));
    expect(fromFull.error).toMatch(/vllm:num_requests_running/);
    expect(parseVllmMetrics(text).error).toBe(fromFull.error);
  });

  it("a body with only the gauges' HELP/TYPE and other vllm:* series still says which gauge is missing", () => {
    const r = parseVllmMetrics('# TYPE vllm:num_requests_running gauge\nvllm:cache_config_info{block_size="16"} 1\n');
    expect(r.metrics).toBeNull();
    expect(r.error).toMatch(/without vllm:num_requests_running/);
  });

  it("a non-vLLM body still counts its series in the message", () => {
    const text = fixture("sglang-0.5.10-datadog.prom");
    expect(parseVllmMetrics(text).error).toBe(`no vLLM metrics (found ${parsePrometheus(text).samples.length} series, none named vllm:*)`);
  });
});
