/**
 * Property-based fuzzing of the classifier (fast-check, fixed seed). The rules it must keep for ANY
 * readings, however odd:
 * - classify() and shouldProbe() never throw, and every verdict has a state from the one list and
 *   reasons a person can read;
 * - one reading is never "stuck" or "down" (two waits, two refused reads);
 * - a probe is never wanted while anything runs or waits, nor without metrics (invariant 1);
 * - a server that really made progress between every two reads is never "stuck", whatever values
 *   a bad scrape hid from a reading (an unusable family becomes null, see lib/metrics/vllm.ts).
 * Readings also come from fuzzed /metrics bodies, through the real parser.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { classify, isAsleep, shouldProbe } from "@/lib/check/classify";
import { BACKEND_STATES, STATE_INFO } from "@/lib/core/states";
import { type PendingRestart, type ProbeResult, type Reading, type Thresholds, reasonText, RULES } from "@/lib/core/types";
import { parseVllmMetrics, type VllmMetrics } from "@/lib/engines/vllm";
import type { FetchOutcome } from "@/lib/core/fetch";
import type { EngineKind } from "@/lib/core/engine";

const SEED = 20_260_601;
const OUTCOMES: FetchOutcome[] = ["ok", "refused", "reset", "timeout", "http-error", "too-large", "error"];

const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
const oddNumber = fc.oneof(
  fc.nat({ max: 100 }),
  fc.double({ noNaN: false }),
  fc.constantFrom(0, -1, 1e308, Number.MAX_SAFE_INTEGER, Infinity, -Infinity, NaN),
);

const sliceArb = fc.record({
  running: oddNumber,
  waiting: oddNumber,
  waitingCapacity: fc.option(maybe(oddNumber), { nil: undefined }),
  steps: maybe(oddNumber),
  promptTokens: maybe(oddNumber),
  generationTokens: maybe(oddNumber),
  finishedRequests: maybe(oddNumber),
  kvCacheUsage: maybe(fc.oneof(fc.double({ min: 0, max: 1 }), oddNumber)),
  preemptions: fc.option(maybe(oddNumber), { nil: undefined }),
  throughput: fc.option(maybe(oddNumber), { nil: undefined }),
  asleep: fc.option(maybe(fc.boolean()), { nil: undefined }),
});

// The first version's fields, plus (optional, as in readings stored before them) every field the
// engine adapters added: capacity waiting, preemptions, a throughput gauge, sleep, per-engine
// figures, the evidence list, llama.cpp's process token.
const metricsArb: fc.Arbitrary<VllmMetrics> = fc
  .record({
    processStartTime: maybe(fc.oneof(fc.constantFrom(1.7e9, 1.7e9 + 60), fc.double())),
    processToken: fc.option(maybe(fc.constantFrom("1764580000", "1764589999", "")), { nil: undefined }),
    models: fc.array(fc.string(), { maxLength: 2 }),
    engines: fc.option(fc.dictionary(fc.constantFrom("0", "1", "2"), sliceArb, { maxKeys: 3 }), { nil: undefined }),
    sleepLevel: fc.option(maybe(fc.constantFrom(1, 2)), { nil: undefined }),
    evidence: fc.option(fc.subarray(["steps", "promptTokens", "generationTokens", "throughput"] as const), { nil: undefined }),
  })
  .chain((top) => sliceArb.map((slice) => ({ ...slice, ...top })));

const probeArb = (at: number): fc.Arbitrary<ProbeResult> =>
  fc.record({
    ok: fc.boolean(),
    at: fc.constant(at),
    latencyMs: fc.nat({ max: 20_000 }),
    status: fc.option(fc.constantFrom(200, 401, 403, 404, 405, 500, 503), { nil: undefined }),
    error: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
    kind: fc.option(fc.constantFrom("completions", "chat", "embeddings", "generate") as fc.Arbitrary<"completions">, { nil: undefined }),
    cannotSucceed: fc.option(fc.constantFrom("auth", "no-endpoint") as fc.Arbitrary<"auth">, { nil: undefined }),
  });

/** A reading at `at` with anything in it: every outcome, metrics or not, probes, /health, /v1/models. */
const readingArb = (at: number): fc.Arbitrary<Reading> =>
  fc
    .record({
      outcome: fc.constantFrom(...OUTCOMES),
      engine: fc.option(fc.constantFrom("vllm", "llamacpp", "sglang", "tgi", "ollama") as fc.Arbitrary<EngineKind>, { nil: undefined }),
      asleep: fc.option(fc.boolean(), { nil: undefined }),
      loading: fc.option(fc.boolean(), { nil: undefined }),
      metrics: maybe(metricsArb),
      noMetrics: fc.option(fc.boolean(), { nil: undefined }),
      error: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
      probe: fc.option(probeArb(at), { nil: undefined }),
      health: fc.option(fc.record({ outcome: fc.constantFrom(...OUTCOMES) }), { nil: undefined }),
      models: fc.option(fc.record({ outcome: fc.constantFrom(...OUTCOMES), ids: fc.array(fc.string(), { maxLength: 2 }) }), { nil: undefined }),
      latencyMs: fc.nat({ max: 20_000 }),
    })
    .map((r) => ({ at, ...r }));

/** Oldest first, 1 to 7 readings, 1 to 300 s apart. */
const historyArb = fc
  .array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 7 })
  .chain((gaps) => {
    let t = 1_700_000_000_000;
    const times = gaps.map((g) => (t += g * 1000));
    return fc.tuple(...times.map(readingArb));
  });

const thresholdsArb: fc.Arbitrary<Thresholds> = fc.record({
  stuckAfterSeconds: fc.constantFrom(1, 3, 60, 120),
  idleProbeSeconds: fc.constantFrom(1, 60),
  recoveryTimeoutSeconds: fc.constantFrom(10, 900),
});

const pendingArb: fc.Arbitrary<PendingRestart | null> = maybe(
  fc.record({ requestedAt: fc.integer({ min: 1_700_000_000_000, max: 1_700_000_900_000 }), processStartTime: maybe(fc.constantFrom(1.7e9, 1.7e9 + 60)) }),
);

function checkVerdict(v: ReturnType<typeof classify>): void {
  expect(BACKEND_STATES).toContain(v.state);
  expect(v.health).toBe(STATE_INFO[v.state].health);
  expect(v.reasons.length).toBeGreaterThan(0);
  for (const r of v.reasons) {
    expect(RULES).toContain(r.rule);
    expect(typeof r.text).toBe("string");
  }
}

describe("classify over arbitrary readings", () => {
  it("one reading: never throws, never stuck, never down", () => {
    fc.assert(
      fc.property(readingArb(1_700_000_000_000), thresholdsArb, pendingArb, (reading, thresholds, pendingRestart) => {
        const input = { history: [], reading, thresholds, now: reading.at, pendingRestart };
        const v = classify(input);
        checkVerdict(v);
        expect(v.state).not.toBe("stuck");
        expect(v.state).not.toBe("down");
        shouldProbe(input);
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it("any history: never throws; a probe only with nothing running or waiting", () => {
    fc.assert(
      fc.property(historyArb, thresholdsArb, pendingArb, (all, thresholds, pendingRestart) => {
        const reading = all[all.length - 1];
        const input = { history: all.slice(0, -1), reading, thresholds, now: reading.at, pendingRestart };
        const v = classify(input);
        checkVerdict(v);
        if (v.state === "stuck" || v.state === "down") expect(all.length).toBeGreaterThanOrEqual(2);
        if (shouldProbe(input)) {
          expect(reading.metrics).not.toBeNull();
          expect(reading.metrics!.running > 0 || reading.metrics!.waiting > 0).toBe(false);
          // Never to a sleeping server (a request would pend until it is woken), never to Ollama.
          expect(isAsleep(reading)).toBe(false);
          expect(reading.engine).not.toBe("ollama");
        }
        if (isAsleep(reading)) expect(v.state === "sleeping" || v.state === "restarting").toBe(true);
      }),
      { seed: SEED, numRuns: 1500 },
    );
  });
});

describe("a server that progresses between every two reads is never stuck", () => {
  type Measure = "steps" | "promptTokens" | "generationTokens" | "finishedRequests" | "kvCacheUsage";
  const MEASURES: Measure[] = ["steps", "promptTokens", "generationTokens", "finishedRequests", "kvCacheUsage"];

  // The truth: every interval adds steps, tokens and finished requests; kv use is steady. Then a
  // bad scrape hides any subset of the measures in any reading (a NaN engine spoils a family to
  // null), up to all of them.
  const scenario = fc.record({
    reads: fc.array(
      fc.record({
        gapS: fc.integer({ min: 1, max: 200 }),
        addSteps: fc.integer({ min: 1, max: 500 }),
        running: fc.integer({ min: 1, max: 12 }),
        waiting: fc.nat({ max: 4 }),
        hidden: fc.subarray(MEASURES),
      }),
      { minLength: 2, maxLength: 8 },
    ),
    thresholds: thresholdsArb,
  });

  it("whatever measures a bad scrape hides", () => {
    fc.assert(
      fc.property(scenario, ({ reads, thresholds }) => {
        let at = 1_700_000_000_000;
        let steps = 1000;
        const all: Reading[] = [];
        for (const r of reads) {
          at += r.gapS * 1000;
          steps += r.addSteps;
          const m: VllmMetrics = {
            processStartTime: 1.7e9,
            running: r.running,
            waiting: r.waiting,
            steps,
            promptTokens: steps * 3,
            generationTokens: steps,
            finishedRequests: Math.floor(steps / 100),
            kvCacheUsage: 0.4,
            models: ["m"],
          };
          for (const k of r.hidden) m[k] = null;
          all.push({ at, latencyMs: 20, outcome: "ok", metrics: m });
          const v = classify({ history: all.slice(0, -1), reading: all[all.length - 1], thresholds, now: at });
          checkVerdict(v);
          expect(v.state, reasonText(v.reasons, "\n")).not.toBe("stuck");
          expect(v.restartRecommended).toBe(false);
        }
      }),
      { seed: SEED, numRuns: 1500 },
    );
  });
});

describe("readings from fuzzed /metrics bodies", () => {
  const REAL = readFileSync(path.join(__dirname, "../fixtures/real-metrics/vllm-0.29.0-inferstack.prom"), "utf8");
  const withLoad = (running: number, steps: number) =>
    REAL.replace(/^(vllm:num_requests_running\{[^}]*\}) 0\.0$/m, `$1 ${running}`).replace(
      /^(vllm:iteration_tokens_total_count\{[^}]*\}) 137\.0$/m,
      `$1 ${steps}`,
    );

  it("a busy read then a fuzzed read: never stuck, never a probe while the fuzzed read shows work", () => {
    const before = parseVllmMetrics(withLoad(3, 137)).metrics!;
    expect(before.running).toBe(3);
    fc.assert(
      fc.property(fc.nat({ max: REAL.length }), fc.string({ unit: "binary", maxLength: 20 }), fc.nat({ max: 200 }), (pos, junk, gap) => {
        const body = withLoad(3, 200);
        const fuzzed = body.slice(0, pos) + junk + body.slice(pos + junk.length);
        const parsed = parseVllmMetrics(fuzzed);
        const t0 = 1_700_000_000_000;
        const history: Reading[] = [{ at: t0, latencyMs: 10, outcome: "ok", metrics: before }];
        const reading: Reading = {
          at: t0 + (gap + 1) * 1000,
          latencyMs: 10,
          outcome: "ok",
          metrics: parsed.metrics,
          ...(parsed.metrics ? {} : { error: parsed.error, noMetrics: true }),
        };
        const input = { history, reading, thresholds: { stuckAfterSeconds: 1, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900 }, now: reading.at };
        const v = classify(input);
        checkVerdict(v);
        expect(v.state).not.toBe("stuck");
        if (parsed.metrics && (parsed.metrics.running > 0 || parsed.metrics.waiting > 0)) expect(shouldProbe(input)).toBe(false);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });
});

describe("counterexamples the fuzzer found (kept as fixed cases)", () => {
  const T: Thresholds = { stuckAfterSeconds: 120, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900 };
  const m = (over: Partial<VllmMetrics>): VllmMetrics => ({
    processStartTime: 1.7e9,
    running: 2,
    waiting: 0,
    steps: null,
    promptTokens: null,
    generationTokens: null,
    finishedRequests: null,
    kvCacheUsage: null,
    models: ["m"],
    ...over,
  });
  const judge = (ms: VllmMetrics[], gapS = 100) => {
    const all: Reading[] = ms.map((x, i) => ({ at: 1_700_000_000_000 + i * gapS * 1000, latencyMs: 5, outcome: "ok", metrics: x }));
    return classify({ history: all.slice(0, -1), reading: all[all.length - 1], thresholds: T, now: all[all.length - 1].at });
  };

  it("work running and every progress figure unusable: cannot judge, never stuck", () => {
    // Before the fix: "stuck", "0 new steps in 300 s across 4 reads" with no step figure at all.
    const v = judge([m({}), m({}), m({}), m({})]);
    expect(v.state).toBe("unknown");
    expect(v.restartRecommended).toBe(false);
    expect(v.reasons.map((r) => r.rule)).toContain("progress-unreadable");
  });

  it("steps hidden in the middle read: 10 -> (unusable) -> 20 is progress, not two flat waits", () => {
    // Before the fix: each neighbour pair had nothing to compare, so the walk-back took it as flat.
    const v = judge([m({ steps: 10, generationTokens: 5 }), m({ steps: null, generationTokens: null }), m({ steps: 20, generationTokens: 9 })]);
    expect(v.state).not.toBe("stuck");
  });

  it("a start time past Date's range (1e300) does not throw", () => {
    // Before the fix: RangeError: Invalid time value (from the "new process" reason).
    expect(() => judge([m({ steps: 5 }), m({ steps: 5, processStartTime: 1e300 })])).not.toThrow();
  });

  it("a real hang is still stuck: steps readable at both ends and flat", () => {
    const flat = m({ steps: 50, generationTokens: 40, kvCacheUsage: 0.3 });
    expect(judge([flat, flat, flat]).state).toBe("stuck");
    // ... also when a family is unusable throughout (one engine always NaN).
    const noGen = m({ steps: 50, generationTokens: null });
    expect(judge([noGen, noGen, noGen]).state).toBe("stuck");
  });
});
