/**
 * The simulator's vLLM /metrics must not change when its renderer is made cheaper: the bytes of
 * sim/metrics.ts renderMetrics are compared with the renderer as it was before
 * (sim-render-reference.ts) for fixed states (engine counts, multiApiServer on and off, asleep,
 * work running, every live mode, a restarted process, HTTP counters, label values to escape) and
 * for seeded random runs of actions. formatValue is compared with the old one on many numbers.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_ENGINE_CONFIG, type EngineConfig } from "@/sim/engine";
import { formatLabels, formatValue, type Labels } from "@/sim/format";
import { renderMetrics, renderMetricsBody } from "@/sim/metrics";
import { seededRandom as prng } from "@/sim/load";
import { LIVE_MODES, VllmSimModel, type SimModelOptions } from "@/sim/model";
import { referenceFormatLabels, referenceFormatValue, referenceRenderMetrics } from "./sim-render-reference";

function modelAt(over: Partial<SimModelOptions> = {}, start = 1_789_901_808_660) {
  const clock = { now: start };
  const model = new VllmSimModel({ clock: () => clock.now, ...over });
  return {
    model,
    clock,
    tick(seconds: number) {
      clock.now += seconds * 1000;
      model.advance();
    },
  };
}

function expectSame(model: VllmSimModel, extra: { openConnections?: number } = {}) {
  model.advance();
  const want = referenceRenderMetrics(model, extra);
  const got = renderMetrics(model, extra);
  // On a mismatch, show the first differing line rather than two 35 KB strings.
  if (got !== want) {
    const a = got.split("\n");
    const b = want.split("\n");
    const i = a.findIndex((line, n) => line !== b[n]);
    expect({ line: i, got: a[i], want: b[i] }).toEqual({ line: i, got: b[i], want: b[i] });
  }
  expect(got).toBe(want);
  // The HTTP answer's bytes: the exposition in UTF-8, whichever way they were encoded.
  expect(renderMetricsBody(model, extra).equals(Buffer.from(want, "utf8"))).toBe(true);
}

const load = (m: VllmSimModel, n: number, promptTokens = 900, maxTokens = 400) => {
  for (let i = 0; i < n; i++) m.submit({ promptTokens, maxTokens });
};

describe("simulated vLLM exposition, byte for byte as before", () => {
  it.each([
    ["idle, one engine", {}],
    ["multiApiServer", { multiApiServer: true }],
    ["two engines", { engines: 2 }],
    ["four engines, multiApiServer", { engines: 4, multiApiServer: true }],
    ["a model name to escape", { modelName: 'org/"odd"\\name\nwith newline' }],
    ["a model name not in ASCII", { modelName: "équipe/modèle-ü-\u{1F680}" }],
    ["other engine config", { engine: { ...DEFAULT_ENGINE_CONFIG, maxModelLen: 131072, blockSize: 32, kvCacheBlocks: 100 } satisfies EngineConfig }],
  ] as Array<[string, Partial<SimModelOptions>]>)("%s: idle, loaded, finished, long uptime", (_name, over) => {
    const { model, tick } = modelAt(over);
    expectSame(model);
    expectSame(model, { openConnections: 3 });
    load(model, 20);
    tick(0.3);
    expectSame(model);
    tick(7);
    expectSame(model);
    model.submit({ promptTokens: 30000, maxTokens: 2000, stopAfter: 5 });
    tick(120);
    expectSame(model);
    model.recordHttp("/v1/completions", "POST", 200);
    model.recordHttp("/v1/models", "GET", 200);
    model.recordHttp("/v1/completions", "POST", 400);
    tick(1);
    model.recordHttp("/v1/completions", "POST", 200);
    expectSame(model);
    // Values that print with an exponent: a long uptime and large counters.
    tick(3_000_000);
    expectSame(model);
  });

  it("every live mode, asleep, awake again, and a restarted process", () => {
    const { model, tick } = modelAt({ engines: 2 });
    load(model, 30);
    tick(5);
    for (const mode of LIVE_MODES) {
      model.setMode(mode, { waiting: 4 });
      tick(2.5);
      expectSame(model);
    }
    model.setMode("normal");
    model.sleep(1);
    tick(3);
    expectSame(model);
    model.sleep(2);
    expectSame(model);
    model.wake();
    tick(1);
    expectSame(model);
    model.recordHttp("/v1/completions", "POST", 200);
    model.startNewProcess();
    expectSame(model);
    load(model, 3);
    tick(10);
    expectSame(model);
  });

  it("renders models of different shapes in turn (nothing kept from one leaks into another)", () => {
    const a = modelAt({ engines: 1, modelName: "a" });
    const b = modelAt({ engines: 3, modelName: "b", multiApiServer: true });
    const c = modelAt({ engines: 1, modelName: "a", engine: { ...DEFAULT_ENGINE_CONFIG, maxModelLen: 4096 } });
    load(a.model, 5);
    load(b.model, 50);
    for (let i = 0; i < 3; i++) {
      for (const m of [a, b, c]) {
        m.tick(1.7);
        expectSame(m.model);
      }
    }
  });

  it.each([1, 2, 3, 4, 5, 6, 7, 8])("random run, seed %i", (seed) => {
    const rnd = prng(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
    const { model, tick } = modelAt(
      {
        engines: 1 + Math.floor(rnd() * 4),
        multiApiServer: rnd() < 0.4,
        timeScale: pick([1, 10, 250]),
        modelName: pick(["gb10/llama-3.1-70b-fp8", "m", 'q"uote\\']),
      },
      1_700_000_000_000 + Math.floor(rnd() * 1e11),
    );
    const submitted: Array<ReturnType<VllmSimModel["submit"]>> = [];
    for (let step = 0; step < 40; step++) {
      const r = rnd();
      if (r < 0.35) for (let i = Math.floor(rnd() * 8); i > 0; i--) submitted.push(model.submit({ promptTokens: 1 + Math.floor(rnd() * 9000), maxTokens: 1 + Math.floor(rnd() * 3000), stopAfter: rnd() < 0.5 ? Math.floor(rnd() * 500) : null }));
      else if (r < 0.45 && submitted.length) model.abort(pick(submitted));
      else if (r < 0.55) model.setMode(pick(LIVE_MODES), { waiting: Math.floor(rnd() * 6) });
      else if (r < 0.6) model.sleep(pick([1, 2] as const));
      else if (r < 0.65) model.wake();
      else if (r < 0.68) model.startNewProcess();
      else if (r < 0.8) model.recordHttp(pick(["/v1/completions", "/v1/chat/completions", "/v1/models", "/v1/ünicode"]), pick(["GET", "POST"]), pick([200, 400, 404, 500]));
      tick(pick([0, 0.01, 0.4, 3, 60, 5000]) * rnd());
      expectSame(model, { openConnections: Math.floor(rnd() * 4) });
    }
  });
});

describe("formatValue and formatLabels, as before", () => {
  it("formatValue agrees with the old one on integers, fractions, huge, tiny and special values", () => {
    const rnd = prng(42);
    const values = [0, -0, 1, -1, 0.5, 1e6, 999999, 1e6 - 0.5, 1e7, 1e15, 1e16, 1e17, 1e21, 1e-4, 1e-5, 1.5e-7, 123456.789, 1234567.891, -1234567.5, Infinity, -Infinity, NaN, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 1.7899019633535712e9];
    for (let i = 0; i < 20_000; i++) {
      const mag = 10 ** Math.floor(rnd() * 30 - 10);
      const v = rnd() * mag * (rnd() < 0.1 ? -1 : 1);
      values.push(v, Math.floor(v), Math.round(v * 100) / 100);
    }
    // One comparison of two arrays: a mismatch shows the values, 60,000 expects would be slow.
    const differ = values.filter((v) => formatValue(v) !== referenceFormatValue(v)).map((v) => [v, formatValue(v), referenceFormatValue(v)]);
    expect(differ).toEqual([]);
  });

  it("formatLabels agrees with the old one, escapes included", () => {
    for (const labels of [{}, { b: "2", a: "1" }, { engine: "0", model_name: 'x"y\\z\nw' }, { le: "+Inf" }, { z: "", y: "\\\\" }] as Labels[]) {
      expect(formatLabels(labels)).toBe(referenceFormatLabels(labels));
    }
  });
});
