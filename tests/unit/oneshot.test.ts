/**
 * The CLI's one-shot check, the parts that need no simulator: how long it pauses after a refused
 * read (sleep injected and recorded, never timed), and the signs of reads from several servers.
 */
import { describe, expect, it } from "vitest";
import { checkBackend, checkProxy, mixedServerWarnings, REFUSED_RECHECK_MS, waitForEngine, WaitTooShortError } from "@/lib/check/oneshot";
import type { Reading } from "@/lib/core/types";
import type { EngineMetrics } from "@/lib/core/engine";
import { freePort } from "@/sim/free-port";

function read(at: number, m: Partial<EngineMetrics>): Reading {
  return {
    at,
    latencyMs: 1,
    outcome: "ok",
    metrics: { processStartTime: null, running: 1, waiting: 0, steps: 10, promptTokens: 10, generationTokens: 10, finishedRequests: 0, kvCacheUsage: 0.1, models: ["m"], ...m } as EngineMetrics,
  };
}

describe("mixedServerWarnings", () => {
  it("one server, or one real restart (start time forward once): no warning", () => {
    expect(mixedServerWarnings([read(0, { processStartTime: 100 }), read(1, { processStartTime: 100 }), read(2, { processStartTime: 100 })])).toEqual([]);
    expect(mixedServerWarnings([read(0, { processStartTime: 100 }), read(1, { processStartTime: 200 }), read(2, { processStartTime: 200 })])).toEqual([]);
    // Without a start time, one counter drop is a restart (several API servers).
    expect(mixedServerWarnings([read(0, { steps: 50 }), read(1, { steps: 3 }), read(2, { steps: 9 })])).toEqual([]);
  });

  it("a start time that goes back is two servers (also when it flips back and forth)", () => {
    expect(mixedServerWarnings([read(0, { processStartTime: 200 }), read(1, { processStartTime: 100 })])[0]).toMatch(/went back between reads \(200 then 100\)/);
    expect(mixedServerWarnings([read(0, { processStartTime: 100 }), read(1, { processStartTime: 200 }), read(2, { processStartTime: 100 })])[0]).toMatch(/went back/);
    // A read that hid the start time does not hide the jump.
    expect(mixedServerWarnings([read(0, { processStartTime: 300 }), read(1, {}), read(2, { processStartTime: 200 })])[0]).toMatch(/300 then 200/);
  });

  it("counters that change process twice in one check are two servers", () => {
    const w = mixedServerWarnings([read(0, { steps: 50 }), read(1, { steps: 3 }), read(2, { steps: 51 }), read(3, { steps: 4 })]);
    expect(w[0]).toMatch(/server process changed 2 times in 4 reads/);
  });
});

describe("the pause after a refused read", () => {
  it("is REFUSED_RECHECK_MS, not --wait, for a backend and a proxy", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const sleeps: number[] = [];
    const sleep = async (ms: number) => void sleeps.push(ms);
    const r = await checkBackend({ url }, { waitSeconds: 300, sleep });
    expect(r).toMatchObject({ state: "down", reads: 2 });
    expect(sleeps).toEqual([REFUSED_RECHECK_MS]);
    sleeps.length = 0;
    const p = await checkProxy({ url }, { waitSeconds: 300, sleep });
    expect(p).toMatchObject({ state: "down", reads: 2 });
    expect(sleeps).toEqual([REFUSED_RECHECK_MS]);
  });

  it("never exceeds a shorter --wait", async () => {
    const sleeps: number[] = [];
    await checkBackend({ url: `http://127.0.0.1:${await freePort()}` }, { waitSeconds: 0.2, sleep: async (ms) => void sleeps.push(ms) });
    expect(sleeps).toEqual([200]);
  });
});

describe("the wait an engine's stuck window allows (waitForEngine)", () => {
  it("SGLang needs 150 s (2 x 75): the default wait is widened, a chosen one is refused naming --wait", () => {
    expect(waitForEngine("sglang", 30, false)).toBe(75);
    expect(waitForEngine("sglang", 75, true)).toBe(75);
    expect(waitForEngine("sglang", 100, false)).toBe(100);
    expect(() => waitForEngine("sglang", 30, true)).toThrow(WaitTooShortError);
    expect(() => waitForEngine("sglang", 30, true)).toThrow(/SGLang needs at least 150 s .*--wait 30 gives a window of 60 s \(2 x --wait\): use --wait 75 or more/);
  });

  it("engines without a minimum keep any wait", () => {
    for (const e of ["vllm", "llamacpp", "tgi", "ollama"] as const) {
      expect(waitForEngine(e, 0.2, true)).toBe(0.2);
      expect(waitForEngine(e, 30, false)).toBe(30);
    }
  });

  it("--engine sglang with a chosen short wait is refused before anything is read", async () => {
    const url = `http://127.0.0.1:${await freePort()}`; // nothing listens: a read would say "down"
    const sleeps: number[] = [];
    await expect(checkBackend({ url, engine: "sglang" }, { waitSeconds: 30, waitGiven: true, sleep: async (ms) => void sleeps.push(ms) })).rejects.toThrow(WaitTooShortError);
    expect(sleeps).toEqual([]);
  });
});
