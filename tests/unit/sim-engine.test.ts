import { describe, expect, it } from "vitest";
import { DEFAULT_ENGINE_CONFIG, Engine, type EngineConfig } from "@/sim/engine";

const cfg = (over: Partial<EngineConfig> = {}): EngineConfig => ({ ...DEFAULT_ENGINE_CONFIG, ...over });

/** Counters of an engine at time t (seconds). */
function at(e: Engine, t: number) {
  e.advanceTo(t);
  return {
    steps: e.stats.steps,
    gen: e.stats.generationTokens,
    prompt: e.stats.promptTokens,
    running: e.numRunning,
    waiting: e.numWaiting,
    kv: e.kvCacheUsage,
    finished: e.stats.finishedTotal,
  };
}

describe("engine model: token rates", () => {
  it("one request alone generates about 8 tokens/s, one step per token", () => {
    const e = new Engine(cfg(), 0);
    e.submit({ promptTokens: 16, maxTokens: 100_000 }, 0);
    const a = at(e, 10);
    const b = at(e, 70);
    expect((b.gen - a.gen) / 60).toBeCloseTo(8, 0);
    expect(b.steps - a.steps).toBe(b.gen - a.gen);
    expect(b.running).toBe(1);
  });

  it("twelve running generate about 115 tokens/s in total, steps/s = per-request rate", () => {
    const e = new Engine(cfg(), 0);
    for (let i = 0; i < 12; i++) e.submit({ promptTokens: 16, maxTokens: 100_000 }, 0);
    const a = at(e, 10);
    const b = at(e, 70);
    const genRate = (b.gen - a.gen) / 60;
    expect(genRate).toBeGreaterThan(100);
    expect(genRate).toBeLessThan(130);
    expect((b.steps - a.steps) / 60).toBeCloseTo(genRate / 12, 0);
    expect(b.running).toBe(12);
    expect(b.waiting).toBe(0);
  });

  it("throughput rises with the batch: 2 running beat 1, 12 beat 4", () => {
    const rate = (n: number) => {
      const e = new Engine(cfg(), 0);
      for (let i = 0; i < n; i++) e.submit({ promptTokens: 16, maxTokens: 100_000 }, 0);
      const a = at(e, 10).gen;
      return (at(e, 40).gen - a) / 30;
    };
    expect(rate(2)).toBeGreaterThan(rate(1));
    expect(rate(12)).toBeGreaterThan(rate(4));
  });
});

describe("engine model: slots and queue", () => {
  it("queues beyond max_num_seqs (FIFO) and admits when a slot frees", () => {
    const e = new Engine(cfg(), 0);
    for (let i = 0; i < 12; i++) e.submit({ promptTokens: 16, maxTokens: 20 + i * 100 }, 0);
    const late = e.submit({ promptTokens: 16, maxTokens: 1 }, 0);
    expect(at(e, 0)).toMatchObject({ running: 12, waiting: 1 });
    expect(late.status).toBe("waiting");
    at(e, 1); // the shortest request (20 tokens) is not done yet
    expect(late.status).toBe("waiting");
    at(e, 5);
    expect(late.status).toBe("finished");
    expect(late.finishReason).toBe("length");
    expect(e.numWaiting).toBe(0);
  });

  it("honours max_tokens and stops early with finish_reason stop", () => {
    const e = new Engine(cfg(), 0);
    const a = e.submit({ promptTokens: 8, maxTokens: 5 }, 0);
    const b = e.submit({ promptTokens: 8, maxTokens: 50, stopAfter: 3 }, 0);
    at(e, 30);
    expect(a).toMatchObject({ status: "finished", finishReason: "length", generated: 5 });
    expect(b).toMatchObject({ status: "finished", finishReason: "stop", generated: 3 });
    expect(e.stats.finished.length).toBe(1);
    expect(e.stats.finished.stop).toBe(1);
    expect(e.stats.generationTokens).toBe(8);
    expect(e.stats.promptTokens).toBe(16);
  });

  it("an abort frees the slot for the next request", () => {
    const e = new Engine(cfg({ maxNumSeqs: 1 }), 0);
    const long = e.submit({ promptTokens: 8, maxTokens: 10_000 }, 0);
    const next = e.submit({ promptTokens: 8, maxTokens: 10_000 }, 0);
    expect(at(e, 2)).toMatchObject({ running: 1, waiting: 1 });
    e.abort(long, 2);
    expect(long.finishReason).toBe("abort");
    expect(next.status).toBe("running");
    expect(e.stats.finished.abort).toBe(1);
  });

  it("waits although a slot is free when the KV cache cannot hold the prompt", () => {
    const e = new Engine(cfg({ kvCacheBlocks: 100, blockSize: 16 }), 0);
    e.submit({ promptTokens: 1000, maxTokens: 500 }, 0); // 63 blocks
    e.submit({ promptTokens: 700, maxTokens: 100 }, 0); // 44 more would not fit
    expect(at(e, 0)).toMatchObject({ running: 1, waiting: 1 });
  });

  it("preempts the newest request when output fills the KV cache, and finishes everything later", () => {
    const e = new Engine(cfg({ kvCacheBlocks: 40, blockSize: 16 }), 0);
    const a = e.submit({ promptTokens: 160, maxTokens: 300 }, 0); // 10 blocks, grows to 29
    const b = e.submit({ promptTokens: 160, maxTokens: 300 }, 0);
    at(e, 20);
    expect(e.stats.preemptions).toBeGreaterThan(0);
    expect(e.kvCacheUsage).toBeLessThanOrEqual(1);
    at(e, 600);
    expect(a.status).toBe("finished");
    expect(b.status).toBe("finished");
    expect(a.generated + b.generated).toBe(600);
  });
});

describe("engine model: chunked prefill", () => {
  it("a long prompt alone moves KV-cache usage chunk by chunk while steps and tokens stay flat", () => {
    const e = new Engine(cfg({ chunkSize: 2048, prefillTokensPerSecond: 1000 }), 0);
    e.submit({ promptTokens: 20_000, maxTokens: 100 }, 0);
    const s1 = at(e, 5);
    const s2 = at(e, 12);
    expect(s1).toMatchObject({ steps: 0, gen: 0, prompt: 0, running: 1 });
    expect(s2).toMatchObject({ steps: 0, gen: 0, prompt: 0, running: 1 });
    expect(s1.kv).toBeGreaterThan(0);
    expect(s2.kv).toBeGreaterThan(s1.kv);
    const done = at(e, 25); // ten chunks of ~2.2 s
    expect(done.prompt).toBe(20_000);
    expect(done.steps).toBeGreaterThan(0);
    expect(done.gen).toBeGreaterThan(0);
  });

  it("other requests keep stepping while a long prompt is read", () => {
    const e = new Engine(cfg(), 0);
    e.submit({ promptTokens: 16, maxTokens: 10_000 }, 0);
    at(e, 2);
    e.submit({ promptTokens: 20_000, maxTokens: 100 }, 2);
    const a = at(e, 4);
    const b = at(e, 12);
    expect(b.steps).toBeGreaterThan(a.steps);
    expect(b.prompt).toBe(16); // the long prompt is not counted until it is fully read
  });
});

describe("engine model: hang", () => {
  it("frozen: running stays, nothing progresses, KV stays, new requests queue", () => {
    const e = new Engine(cfg(), 0);
    for (let i = 0; i < 3; i++) e.submit({ promptTokens: 100, maxTokens: 10_000 }, 0);
    at(e, 10);
    e.setFrozen(true, 10);
    const a = at(e, 10);
    const late = e.submit({ promptTokens: 8, maxTokens: 1 }, 20);
    const b = at(e, 300);
    expect(b).toEqual({ ...a, waiting: 1 });
    expect(late.status).toBe("waiting");
  });

  it("an abort sent to a hung engine is only seen once it steps again", () => {
    const e = new Engine(cfg(), 0);
    const r = e.submit({ promptTokens: 8, maxTokens: 10_000 }, 0);
    at(e, 5);
    e.setFrozen(true, 5);
    e.abort(r, 6);
    expect(e.stats.finishedTotal).toBe(0);
    expect(e.numRunning).toBe(1);
    e.setFrozen(false, 7);
    expect(e.stats.finished.abort).toBe(1);
    expect(e.numRunning).toBe(0);
  });

  it("resumes from now, without replaying the time it was frozen", () => {
    const e = new Engine(cfg(), 0);
    e.submit({ promptTokens: 8, maxTokens: 100_000 }, 0);
    e.setFrozen(true, 10);
    const before = at(e, 100).gen;
    e.setFrozen(false, 100);
    expect(at(e, 101).gen - before).toBeLessThanOrEqual(9);
  });

  it("preemptAll puts running work back in the queue: running 0, waiting N", () => {
    const e = new Engine(cfg(), 0);
    for (let i = 0; i < 3; i++) e.submit({ promptTokens: 8, maxTokens: 10_000 }, 0);
    at(e, 5);
    e.setFrozen(true, 5);
    e.preemptAll(5);
    expect(at(e, 50)).toMatchObject({ running: 0, waiting: 3, kv: 0 });
    expect(e.stats.preemptions).toBe(3);
  });
});

describe("engine model: lazy catch-up is deterministic", () => {
  it("one big advance equals many small ones", () => {
    const run = (stepSeconds: number) => {
      const e = new Engine(cfg(), 0);
      const sizes = [[16, 300], [4000, 200], [30_000, 50], [100, 1000], [5, 1]];
      sizes.forEach(([p, m], i) => e.submit({ promptTokens: p, maxTokens: m }, i * 0.5));
      for (let t = 3; t <= 200; t += stepSeconds) e.advanceTo(t);
      e.advanceTo(200);
      return at(e, 200);
    };
    expect(run(0.05)).toEqual(run(197));
  });

  it("an idle engine does no work however long it is left", () => {
    const e = new Engine(cfg(), 0);
    expect(at(e, 1e9)).toMatchObject({ steps: 0, gen: 0, running: 0 });
  });
});

describe("engine model: what real vLLM servers do beyond the incident (issue 10)", () => {
  it("deferred requests count as waiting but are never scheduled until released", () => {
    const e = new Engine(cfg(), 0);
    e.submitDeferred({ promptTokens: 16, maxTokens: 10 }, 0);
    e.submitDeferred({ promptTokens: 16, maxTokens: 10 }, 0);
    const a = at(e, 30);
    expect(a).toMatchObject({ running: 0, waiting: 2, steps: 0, gen: 0 });
    expect(e.numDeferred).toBe(2);
    e.releaseDeferred(30);
    const b = at(e, 40);
    expect(e.numDeferred).toBe(0);
    expect(b.finished).toBe(2);
  });

  it("a wedged engine produces nothing but counts client aborts at once", () => {
    const e = new Engine(cfg(), 0);
    const held = e.submit({ promptTokens: 16, maxTokens: 100_000 }, 0);
    at(e, 5);
    e.setWedged(true, 5);
    const before = at(e, 5);
    const r = e.submit({ promptTokens: 16, maxTokens: 10 }, 6);
    e.abort(r, 7);
    const after = at(e, 60);
    expect(after.steps).toBe(before.steps);
    expect(after.gen).toBe(before.gen);
    expect(e.stats.finished.abort).toBe(1);
    expect(after.running).toBe(1);
    expect(held.status).toBe("running");
  });

  it("preemption churn moves the KV cache and num_preemptions, never a token", () => {
    const e = new Engine(cfg(), 0);
    e.submit({ promptTokens: 16, maxTokens: 100_000 }, 0);
    at(e, 5);
    e.setChurn(true, 5);
    const a = at(e, 5);
    const p0 = e.preemptions;
    const b = at(e, 5.6);
    const c = at(e, 6.1);
    expect(e.preemptions).toBeGreaterThan(p0);
    expect(new Set([a.kv, b.kv, c.kv]).size).toBeGreaterThan(1);
    expect(c.steps).toBe(a.steps);
    expect(c.gen).toBe(a.gen);
  });

  it("asleep, an engine does not step and reports its sleep level", () => {
    const e = new Engine(cfg(), 0);
    e.setSleep(1, 0);
    expect(e.sleepLevel).toBe(1);
    e.submit({ promptTokens: 16, maxTokens: 10 }, 0);
    expect(at(e, 30)).toMatchObject({ steps: 0, gen: 0 });
    e.setSleep(0, 30);
    expect(at(e, 40).finished).toBe(1);
  });
});
