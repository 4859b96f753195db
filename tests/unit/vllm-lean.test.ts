/**
 * The lean filter (VLLM_LEAN_SAMPLES, asked on the reads between two that ask the latency
 * histograms) must carry every figure a state is judged by: on every real vLLM scrape, the metrics
 * from only the lean samples' lines are the metrics of the whole body, and only the latency
 * histograms are missing from what the reading keeps.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseVllmMetrics, VLLM_LEAN_SAMPLES, VLLM_SAMPLES } from "@/lib/engines/vllm";
import { extractVllmLatency, LATENCY_HISTOGRAMS } from "@/lib/metrics/vllm-latency";
import { parsePrometheus } from "@/lib/metrics/prometheus";

const FIXTURES = path.join(__dirname, "../fixtures/real-metrics");
const VLLM = ["vllm-0.29.0-inferstack.prom", "vllm-0.4.3-plus-v1-families-datadog.prom", "vllm-unstated-lmswitch.prom"];

/** The body as prometheus_client's name[] filter would send it: the sample lines named, and their family's comments. */
function only(body: string, names: ReadonlySet<string>): string {
  const lines = body.split("\n");
  const kept = lines.filter((l) => l.startsWith("#") || names.has(l.split(/[{ ]/)[0]));
  return kept.join("\n");
}

describe("the lean filter keeps what states are judged by", () => {
  it("leaves out exactly the latency histograms' samples", () => {
    const left = [...VLLM_SAMPLES].filter((n) => !VLLM_LEAN_SAMPLES.has(n)).sort();
    expect(left).toEqual(LATENCY_HISTOGRAMS.flatMap((f) => [`${f}_bucket`, `${f}_count`, `${f}_sum`]).sort());
  });

  it.each(VLLM)("%s: the same metrics from the lean samples as from the whole body", (file) => {
    const body = readFileSync(path.join(FIXTURES, file), "utf8");
    const whole = parseVllmMetrics(body);
    const lean = parseVllmMetrics(only(body, VLLM_LEAN_SAMPLES));
    expect(whole.metrics).not.toBeNull();
    expect(lean.metrics).toEqual(whole.metrics);
    // The counters the latency figures read every time are there too; the histograms are not.
    const l = extractVllmLatency(parsePrometheus(only(body, VLLM_LEAN_SAMPLES)));
    const w = extractVllmLatency(parsePrometheus(body));
    expect(l).toEqual({ ...w, ttft: null, itl: null, e2e: null, queue: null });
  });
});
