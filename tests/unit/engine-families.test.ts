/**
 * Each adapter's `families` (what the read path parses, ParseOptions.families) on the real scrapes:
 * a family the adapter does not read is not parsed at all, and the figures are identical with and
 * without the filter (the adapter's metrics and warnings, and vLLM's latency figures).
 */
import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { readExposition } from "@/lib/engines/exposition";
import { ADAPTERS, detectEngine } from "@/lib/engines/registry";
import { parseVllmMetrics, VLLM_FAMILIES } from "@/lib/engines/vllm";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { extractVllmLatency } from "@/lib/metrics/vllm-latency";
import { fixture, SCRAPES } from "./scrapes";

const SUFFIXES = ["", "_total", "_count", "_sum", "_bucket", "_created", "_info"];
const inFamilies = (name: string, families: ReadonlySet<string>) => SUFFIXES.some((x) => name.endsWith(x) && families.has(name.slice(0, name.length - x.length)));

describe("adapters' families", () => {
  it.each(SCRAPES)("%s: same figures with and without the filter, and nothing else parsed", (file) => {
    const text = fixture(file);
    const full = readExposition(text);
    if (!full.ok) throw new Error(full.error);
    const kind = detectEngine(full.index);
    expect(kind).not.toBeNull();
    const adapter = ADAPTERS[kind!];
    const filtered = readExposition(text, adapter.families);
    if (!filtered.ok) throw new Error(filtered.error);
    // The whole body's counts either way.
    expect(filtered.sampleCount).toBe(full.sampleCount);
    expect(detectEngine(filtered.index)).toBe(kind);

    const a = adapter.extract(full.index, { headers: {} });
    const b = adapter.extract(filtered.index, { headers: {} });
    expect(a.metrics).not.toBeNull();
    expect(b).toEqual(a);
    if (kind === "vllm") expect(extractVllmLatency(filtered.index)).toEqual(extractVllmLatency(full.index));

    // Only the adapter's families are in the index, and the body had others that were skipped.
    for (const name of filtered.index.keys()) expect(inFamilies(name, adapter.families), name).toBe(true);
    const others = [...full.index.keys()].filter((n) => !inFamilies(n, adapter.families));
    expect(others.length).toBeGreaterThan(0);
    for (const n of others) expect(filtered.index.has(n), n).toBe(false);
  });

  it("vLLM 0.29: the latency histograms are kept, a histogram no one reads is not parsed", () => {
    const text = fixture("real-metrics/vllm-0.29.0-inferstack.prom");
    const r = parsePrometheus(text, { families: VLLM_FAMILIES });
    const names = new Set(r.samples.map((s) => s.name));
    expect(names.has("vllm:request_decode_time_seconds_bucket")).toBe(false);
    expect(names.has("http_request_duration_seconds_bucket")).toBe(false);
    expect(names.has("vllm:time_to_first_token_seconds_bucket")).toBe(true);
    expect(names.has("vllm:e2e_request_latency_seconds_bucket")).toBe(true);
    expect(r.skippedLines).toBeGreaterThan(r.samples.length);
    const l = extractVllmLatency(r);
    for (const h of [l.ttft, l.itl, l.e2e, l.queue]) expect(h).not.toBeNull();
  });

  it("parseVllmMetrics (filtered) gives the full parse's figures and messages", () => {
    for (const file of SCRAPES) {
      const text = fixture(file);
      const full = readExposition(text);
      if (!full.ok) throw new Error(full.error);
      const p = parseVllmMetrics(text);
      expect(p.sampleCount).toBe(full.sampleCount);
      const want = ADAPTERS.vllm.extract(full.index, { headers: {} });
      if (want.metrics) expect(p.metrics).toEqual(want.metrics);
      else expect(p.metrics).toBeNull();
    }
    expect(parseVllmMetrics(fixture("real-metrics/sglang-0.5.10-datadog.prom")).error).toMatch(/^no vLLM metrics \(found \d+ series/);
  });

  it("what a read keeps (metrics, latency) holds no slice of its body: a history of readings does not keep every body alive", () => {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    // A model name of 13+ characters: V8 keeps such a substring as a view into the whole body.
    const base = fixture("real-metrics/vllm-0.29.0-inferstack.prom").replace(/model_name="[^"]*"/g, 'model_name="meta-llama/Llama-3.1-70B-Instruct"');
    const kept: unknown[] = [];
    const n = 300;
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < n; i++) {
      const exp = readExposition(`# read ${i}\n${base}`, VLLM_FAMILIES); // a distinct body each time, as every answer is
      if (!exp.ok) throw new Error(exp.error);
      kept.push({ metrics: ADAPTERS.vllm.extract(exp.index, {}).metrics, latency: extractVllmLatency(exp.index) });
    }
    gc();
    const perReading = (process.memoryUsage().heapUsed - before) / n;
    // ~8 KB of figures each; a kept body would be ~57 KB more.
    expect(perReading).toBeLessThan(base.length / 2);
    expect(kept).toHaveLength(n);
  });
});
