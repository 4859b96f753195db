/**
 * The simulator's vLLM serves /metrics as vLLM >= 0.8.3 does: an exact /metrics ignores the query
 * (the instrumentator's route), /metrics/ is prometheus_client's app and honours name[] (exact
 * sample names; an empty 200 with several API servers: multiprocess mode). stepwatch's vLLM read
 * asks /metrics/ (tests/integration/filtered-read.test.ts checks the same against the real library).
 */
import { afterEach, describe, expect, it } from "vitest";
import { FilterMemory, readBackend } from "@/lib/check/read";
import { startSimulator, type Simulator } from "@/sim/server";

const sims: Simulator[] = [];
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});
async function sim(multiApiServer = false): Promise<Simulator> {
  const s = await startSimulator({ weightsLoadSeconds: 0, multiApiServer });
  sims.push(s);
  return s;
}
const get = async (url: string) => (await fetch(url, { signal: AbortSignal.timeout(5000) })).text();
const sampleNames = (body: string) => [...new Set(body.split("\n").filter((l) => l && !l.startsWith("#")).map((l) => l.split(/[{ ]/)[0]))].sort();

describe("the simulator's vLLM routes", () => {
  it("/metrics/ keeps only the samples named; /metrics ignores the query", async () => {
    const s = await sim();
    const q = "name[]=vllm:num_requests_running&name[]=vllm%3Aprompt_tokens_total&name[]=vllm:iteration_tokens_total&name[]=nope";
    const filtered = await get(`${s.url}/metrics/?${q}`);
    // A family name alone (a histogram's) matches no sample, as in prometheus_client.
    expect(sampleNames(filtered)).toEqual(["vllm:num_requests_running", "vllm:prompt_tokens_total"]);
    expect(filtered).toMatch(/^# HELP vllm:num_requests_running .*\n# TYPE vllm:num_requests_running gauge\n/m);
    const full = await get(`${s.url}/metrics?${q}`);
    expect(sampleNames(full).length).toBeGreaterThan(20);
    // Without a query, /metrics/ is the whole exposition (the same series; values may tick between two reads).
    expect(sampleNames(await get(`${s.url}/metrics/`))).toEqual(sampleNames(await get(`${s.url}/metrics`)));
  });

  it("several API servers (multiprocess): a filtered answer is empty, and stepwatch's read falls back to /metrics", async () => {
    const s = await sim(true);
    expect(await get(`${s.url}/metrics/?name[]=vllm:num_requests_running`)).toBe("");
    const memory = new FilterMemory();
    const r = await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 5000, filterMemory: memory });
    expect(r.metrics).toMatchObject({ running: 0, waiting: 0 });
    expect(memory.mode).toBe("full");
  });

  it("one API server: stepwatch's read takes the filtered answer, the figures a full read gives", async () => {
    const s = await sim();
    const memory = new FilterMemory();
    const r = await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 5000, filterMemory: memory });
    expect(memory.mode).toBe("filtered");
    const full = await readBackend({ url: s.url }, { timeoutMs: 5000 });
    expect(r.metrics?.running).toBe(full.metrics?.running);
    expect(r.metrics?.processStartTime).toBe(full.metrics?.processStartTime);
    expect(r.bytes!).toBeLessThan(full.bytes!);
  });

  it("the latency histograms once per histogramsEveryMs of reads, the rest every read; a restart makes the next read ask them", async () => {
    const s = await sim();
    const memory = new FilterMemory();
    const t0 = Date.now();
    const read = (ms: number) => readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 5000, filterMemory: memory, histogramsEveryMs: 30_000, now: () => t0 + ms });
    const histograms = async (ms: number) => {
      const r = await read(ms);
      expect(r.metrics).toMatchObject({ running: 0, waiting: 0, steps: expect.any(Number), processStartTime: expect.any(Number) });
      return r.latency!.histogramsAsked === false ? null : r.latency!.ttft;
    };
    const seen = [];
    for (const ms of [0, 5000, 10_000, 25_000, 30_000, 35_000]) seen.push(await histograms(ms));
    expect(seen.map((h) => h !== null)).toEqual([true, false, false, false, true, false]);

    await s.restart({ weightsLoadSeconds: 0 });
    await s.whenListening();
    // The read that sees the new start time was lean; the one after it asks the histograms, 30 s early.
    expect(await histograms(40_000)).toBeNull();
    const fresh = await histograms(45_000);
    expect(fresh).not.toBeNull();
    expect(fresh!.count).toBe(0); // the new process's own histograms, from zero
    expect(await histograms(50_000)).toBeNull();
  });
});
