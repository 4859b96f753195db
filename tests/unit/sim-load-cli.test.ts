import { describe, expect, it } from "vitest";
import { parseCliArgs } from "@/sim/cli";
import { INCIDENT_SCHEDULE, phaseAt, seededRandom } from "@/sim/load";

describe("incident load schedule", () => {
  it("keeps 2 to 4 requests busy most of the time, fills to 12 at times, and pauses", () => {
    const levels = new Set(INCIDENT_SCHEDULE.map((p) => p.concurrency));
    expect(levels).toEqual(new Set([0, 2, 3, 4, 12]));
    const total = INCIDENT_SCHEDULE.reduce((s, p) => s + p.seconds, 0);
    const twoToFour = INCIDENT_SCHEDULE.filter((p) => p.concurrency >= 2 && p.concurrency <= 4).reduce((s, p) => s + p.seconds, 0);
    expect(twoToFour / total).toBeGreaterThan(0.5);
    expect(INCIDENT_SCHEDULE.every((p) => p.seconds >= 60)).toBe(true); // minutes at a time
  });

  it("phaseAt finds the phase and what is left of it, wrapping around the cycle", () => {
    const s = [
      { seconds: 10, concurrency: 1 },
      { seconds: 20, concurrency: 2 },
    ];
    expect(phaseAt(s, 0)).toEqual({ index: 0, remaining: 10 });
    expect(phaseAt(s, 15)).toEqual({ index: 1, remaining: 15 });
    expect(phaseAt(s, 31)).toEqual({ index: 0, remaining: 9 });
    expect(() => phaseAt([{ seconds: 0, concurrency: 1 }], 0)).toThrow(/positive total length/);
  });

  it("the same seed replays the same numbers", () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const xs = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });
});

describe("sim CLI arguments", () => {
  it("parses --engine and the engine knobs, and names the engines when one is unknown", () => {
    const a = parseCliArgs(["--engine", "llamacpp", "--sleep-idle-seconds", "60", "--metrics-cached-while-asleep", "--to-metrics", "--progress-counters", "--keep-alive-seconds", "300"]);
    expect(a.sim).toEqual({ engine: "llamacpp", engineOptions: { sleepIdleSeconds: 60, metricsWakeFromSleep: false, toMetrics: true, progressCounters: true, keepAliveSeconds: 300 } });
    expect(() => parseCliArgs(["--engine", "vllm2"])).toThrow('--engine must be one of vllm, llamacpp, sglang, tgi, ollama, got "vllm2"');
    expect(() => parseCliArgs(["--mode", "sleep"])).not.toThrow();
  });

  it("parses ports, ranges and simulator options", () => {
    const a = parseCliArgs(["--port", "8001", "--port", "8002", "--ports", "9000-9002", "--weights-load-seconds", "0.5", "--time-scale", "10", "--multi-api-server", "--model", "m", "--engines", "2", "--max-num-seqs", "4", "--api-key", "k", "--proxy", "8100", "--load", "--mode", "hang", "--stay-if-orphaned"]);
    expect(a.ports).toEqual([8001, 8002, 9000, 9001, 9002]);
    expect(a.sim).toEqual({ weightsLoadSeconds: 0.5, timeScale: 10, multiApiServer: true, modelName: "m", engines: 2, maxNumSeqs: 4, apiKey: "k" });
    expect(a).toMatchObject({ proxyPort: 8100, load: true, mode: "hang", demo: false, stayIfOrphaned: true });
  });

  it("names what is wrong", () => {
    expect(() => parseCliArgs(["--port", "x"])).toThrow(/--port needs a number/);
    expect(() => parseCliArgs(["--ports", "9-1"])).toThrow(/range is empty/);
    expect(() => parseCliArgs(["--mode", "sleepy"])).toThrow(/--mode must be one of/);
    expect(() => parseCliArgs(["--frobnicate"])).toThrow(/unknown flag --frobnicate/);
  });
});
