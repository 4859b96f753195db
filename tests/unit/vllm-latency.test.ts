/** Latency percentiles, finish reasons and preemptions from real vLLM scrapes and their deltas. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { extractVllmLatency, histogramDelta, histogramQuantile, latencyFigures } from "@/lib/metrics/vllm-latency";
import { type Histogram } from "@/lib/core/latency";

const fixture = (name: string) => readFileSync(`tests/fixtures/real-metrics/${name}`, "utf8");

describe("vLLM latency extraction", () => {
  it("reads the four histograms, successes by finish reason and preemptions from a real vLLM 0.29 scrape", () => {
    const l = extractVllmLatency(parsePrometheus(fixture("vllm-0.29.0-inferstack.prom")));
    expect(l.ttft?.count).toBe(10);
    expect(l.ttft?.sum).toBeCloseTo(1.4721, 3);
    expect(l.ttft?.buckets.at(-1)).toEqual([Infinity, 10]);
    expect(l.itl?.count).toBeGreaterThan(0);
    expect(l.e2e?.count).toBe(10);
    expect(l.queue?.count).toBe(10);
    expect(l.successByReason).toEqual({ stop: 0, length: 10, abort: 0, error: 0, repetition: 0 });
    expect(l.preemptions).toBe(0);
  });
  it("finds the older servers' families too, and nothing where there is nothing", () => {
    const old = extractVllmLatency(parsePrometheus(fixture("vllm-0.4.3-plus-v1-families-datadog.prom")));
    expect(old.ttft).not.toBeNull();
    expect(old.preemptions).toBe(0);
    const none = extractVllmLatency(parsePrometheus(fixture("sglang-0.5.10-datadog.prom")));
    expect(none).toEqual({ ttft: null, itl: null, e2e: null, queue: null, successByReason: null, preemptions: null });
  });
  it("bounds what a hostile body keeps in memory: 30,000 bounds, 30,000 finish reasons", () => {
    const lines: string[] = [];
    for (let i = 0; i < 30_000; i++) lines.push(`vllm:time_to_first_token_seconds_bucket{le="${i / 1000}"} ${i}`);
    lines.push('vllm:time_to_first_token_seconds_bucket{le="+Inf"} 30000');
    for (let i = 0; i < 30_000; i++) lines.push(`vllm:request_success_total{finished_reason="r${i}"} 1`);
    lines.push('vllm:request_success_total{finished_reason="stop"} 7', 'vllm:request_success_total{finished_reason="constructor"} 2');
    const l = extractVllmLatency(parsePrometheus(lines.join("\n") + "\n"));
    expect(l.ttft).toBeNull(); // not used, never guessed
    expect(l.successByReason).toEqual({ stop: 7, other: 30_002 });
    // A real scrape's few bounds and reasons are kept as they are (the test above).
  });
  it("sums the engines of a data-parallel server per bound, whatever order the bounds come in", () => {
    const b = (engine: number, le: string, v: number) => `vllm:e2e_request_latency_seconds_bucket{engine="${engine}",le="${le}"} ${v}`;
    const twoEngines = [b(0, "0.5", 1), b(0, "1.0", 3), b(0, "+Inf", 4), b(1, "0.5", 2), b(1, "1.0", 2), b(1, "+Inf", 5)];
    const want = { buckets: [[0.5, 3], [1, 5], [Infinity, 9]], count: 9, sum: 0 };
    expect(extractVllmLatency(parsePrometheus(twoEngines.join("\n") + "\n")).e2e).toEqual(want);
    // One engine with its bounds out of order is sorted, not refused.
    const shuffled = [b(0, "+Inf", 9), b(0, "0.5", 3), b(0, "1.0", 5)];
    expect(extractVllmLatency(parsePrometheus(shuffled.join("\n") + "\n")).e2e).toEqual(want);
    // "Infinity" is not how Prometheus writes the last bound, and a bound that is no number spoils the histogram.
    expect(extractVllmLatency(parsePrometheus([b(0, "0.5", 1), b(0, "Infinity", 2)].join("\n") + "\n")).e2e).toBeNull();
    expect(extractVllmLatency(parsePrometheus([b(0, "x", 1), b(0, "+Inf", 2)].join("\n") + "\n")).e2e).toBeNull();
  });
  it("refuses a histogram with an unusable bucket instead of guessing", () => {
    const body = 'vllm:time_to_first_token_seconds_bucket{le="0.1"} 5\nvllm:time_to_first_token_seconds_bucket{le="+Inf"} NaN\n';
    expect(extractVllmLatency(parsePrometheus(body)).ttft).toBeNull();
    const noInf = 'vllm:time_to_first_token_seconds_bucket{le="0.1"} 5\n';
    expect(extractVllmLatency(parsePrometheus(noInf)).ttft).toBeNull();
  });
});

describe("percentiles from deltas", () => {
  const h = (counts: number[], bounds = [0.1, 0.5, 1, Infinity]): Histogram => ({
    buckets: bounds.map((b, i) => [b, counts[i]] as [number, number]),
    count: counts.at(-1)!,
    sum: 0,
  });
  it("interpolates inside the bucket the rank falls in, as histogram_quantile does", () => {
    // 10 observations: 4 under 0.1, 6 between 0.1 and 0.5.
    expect(histogramQuantile(h([4, 10, 10, 10]), 0.5)).toBeCloseTo(0.1 + 0.4 * (1 / 6), 9);
    expect(histogramQuantile(h([4, 10, 10, 10]), 0.95)).toBeCloseTo(0.1 + 0.4 * (5.5 / 6), 9);
    // In the +Inf bucket: the largest finite bound.
    expect(histogramQuantile(h([0, 0, 0, 3]), 0.5)).toBe(1);
    expect(histogramQuantile(h([0, 0, 0, 0]), 0.5)).toBeNull();
  });
  it("describes the interval, not the uptime: the delta of two reads", () => {
    const a = h([100, 100, 100, 100]); // 100 fast requests before
    const b = h([100, 100, 110, 110]); // 10 slow ones in the interval
    const d = histogramDelta(a, b)!;
    expect(d.count).toBe(10);
    expect(histogramQuantile(d, 0.5)).toBeCloseTo(0.75, 9);
    expect(histogramQuantile(b, 0.5)).toBeLessThan(0.1); // the cumulative figure would hide them
    // A new process (counts went down) or other bounds: no delta.
    expect(histogramDelta(b, a)).toBeNull();
    expect(histogramDelta(a, h([1, 2, 3], [0.1, 1, Infinity]))).toBeNull();
  });
  it("turns two reads into per-interval figures and rates", () => {
    const base = { ttft: h([0, 0, 0, 0]), itl: null, e2e: null, queue: null, successByReason: { stop: 5, length: 1 }, preemptions: 2 };
    const next = { ...base, ttft: h([2, 4, 4, 4]), successByReason: { stop: 15, length: 1, abort: 2 }, preemptions: 6 };
    const f = latencyFigures(base, next, 2);
    expect(f.ttftP50).toBeCloseTo(0.1, 9);
    expect(f.itlP50).toBeNull();
    expect(f.preemptionsPerSecond).toBe(2);
    expect(f.successPerSecond).toEqual({ stop: 5, length: 0, abort: 1 });
    expect(latencyFigures(next, base, 2).preemptionsPerSecond).toBeNull();
    expect(latencyFigures(null, next, 2).ttftP50).toBeNull();
  });
});
