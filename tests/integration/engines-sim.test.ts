/**
 * Issue 11 over real HTTP: the simulator speaking llama.cpp, SGLang, TGI and Ollama (sim/engines),
 * read and judged by observe() (the watcher's and the CLI's one path). For each engine: busy (a long
 * generation where no request finishes), hang, idle, restart and its trap, with the simulator's own
 * record of what stepwatch sent. The check's clock is injected; the engine runs faster than real
 * time, so windows of minutes take a fraction of a second and nothing asserts a timing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { observe } from "@/lib/check/observe";
import { BUSY_RECHECK_MS, checkBackend } from "@/lib/check/oneshot";
import type { BackendTarget } from "@/lib/check/read";
import type { Reading, Thresholds, Verdict } from "@/lib/core/types";
import { startSimulator, type Simulator, type SimulatorOptions } from "@/sim/server";
import { waitFor } from "./sim-support";

const T: Thresholds = { stuckAfterSeconds: 120, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900, startupGraceSeconds: 600 };
const sims: Simulator[] = [];
async function sim(opts: SimulatorOptions): Promise<Simulator> {
  const s = await startSimulator({ weightsLoadSeconds: 0.3, timeScale: 50, ...opts });
  sims.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads `n` times, the check's clock `gapS` apart, the wall a little apart. */
async function watch(target: BackendTarget, n: number, gapS: number, opts: { history?: Reading[]; startS?: number; timeoutMs?: number } = {}) {
  const history = opts.history ?? [];
  const verdicts: Verdict[] = [];
  for (let i = 0; i < n; i++) {
    const at = 1_800_000_000_000 + ((opts.startS ?? 0) + i * gapS) * 1000;
    if (i > 0) await pause(200);
    const { reading, verdict } = await observe(target, history, { thresholds: T, now: () => at, read: { timeoutMs: opts.timeoutMs ?? 3000, probeTimeoutMs: 3000 } });
    history.push(reading);
    verdicts.push(verdict);
  }
  return { history, verdicts, last: verdicts[verdicts.length - 1] };
}
const slotTaking = (s: Simulator) => s.received().filter((r) => r.completion);
const paths = (s: Simulator) => s.received().map((r) => r.path);
const rules = (v: Verdict) => v.reasons.map((r) => r.rule);
/** The words of the reason a rule gave: only where its numbers (or the flag it names) are the point. */
const textOf = (v: Verdict, rule: string) => v.reasons.find((r) => r.rule === rule)?.text;

describe("llama.cpp (the simulator's llama-server)", () => {
  it("busy: a long generation, no request ends, n_decode_total moves: busy, never probed", async () => {
    const s = await sim({ engine: "llamacpp" });
    s.load({ requests: 2, promptTokens: 200, maxTokens: 1_000_000 });
    const { history, last } = await watch({ url: s.url }, 3, 67);
    expect(history.every((r) => r.engine === "llamacpp")).toBe(true);
    expect(history[2].metrics!.generationTokens).toBe(history[0].metrics!.generationTokens); // the trap: flat
    expect(last.state).toBe("busy");
    expect(slotTaking(s)).toHaveLength(0);
  });

  it("hang: requests held, n_decode_total flat across two waits: stuck", async () => {
    const s = await sim({ engine: "llamacpp" });
    s.load({ requests: 2, promptTokens: 50, maxTokens: 1_000_000 });
    await pause(200);
    await s.setMode("hang");
    const { last } = await watch({ url: s.url }, 3, 67);
    expect(last.state).toBe("stuck");
    expect(slotTaking(s)).toHaveLength(0);
  });

  it("blocked loop: /metrics never answers while /health does: stuck (llama.cpp's /metrics is a task on its loop)", async () => {
    const s = await sim({ engine: "llamacpp" });
    s.load({ requests: 1, promptTokens: 50, maxTokens: 1_000_000 });
    await watch({ url: s.url }, 1, 0);
    await s.setMode("blocked");
    const { last } = await watch({ url: s.url, engine: "llamacpp" }, 3, 67, { timeoutMs: 400, startS: 5 });
    expect(last.state).toBe("stuck");
    expect(rules(last)).toContain("loop-blocked");
  });

  it("idle: idle from the loop's own answer to /metrics, no probe (a probe would restart its sleep countdown)", async () => {
    const s = await sim({ engine: "llamacpp" });
    const { last } = await watch({ url: s.url }, 1, 0);
    expect(last.state).toBe("idle");
    expect(slotTaking(s)).toHaveLength(0);
  });

  it("asleep (--sleep-idle-seconds): sleeping from /props, and /metrics (not needed while it sleeps) is never asked", async () => {
    const s = await sim({ engine: "llamacpp", engineOptions: { wakeSeconds: 0.2 } });
    await s.setMode("sleep");
    s.resetLog();
    const { verdicts } = await watch({ url: s.url }, 3, 70);
    expect(verdicts.map((v) => v.state)).toEqual(["sleeping", "sleeping", "sleeping"]);
    expect(paths(s)).not.toContain("/metrics");
    expect(slotTaking(s)).toHaveLength(0);
  });

  it("restart: 503 Loading model while it loads (starting, not down), then a new Process-Start-Time-Unix", async () => {
    const s = await sim({ engine: "llamacpp", weightsLoadSeconds: 1 });
    s.load({ requests: 1, promptTokens: 50, maxTokens: 1_000_000 });
    const before = await watch({ url: s.url }, 1, 0);
    await s.restart({ weightsLoadSeconds: 1 });
    const loading = await watch({ url: s.url }, 1, 5, { history: before.history });
    expect(loading.last.state).toBe("starting");
    expect(loading.history[1]).toMatchObject({ engine: "llamacpp", loading: true });
    await waitFor("loaded", async () => (await observe({ url: s.url, engine: "llamacpp" }, [], { thresholds: T, read: { timeoutMs: 2000 } })).reading.metrics !== null, 10_000);
    const after = await watch({ url: s.url }, 1, 0, { history: loading.history, startS: 20 });
    const tokens = after.history.filter((r) => r.metrics).map((r) => r.metrics!.processToken);
    expect(new Set(tokens).size).toBe(2);
    expect(["starting", "idle"]).toContain(after.last.state);
  });

  it("without --metrics (501): no-metrics, the reason names the flag", async () => {
    const s = await sim({ engine: "llamacpp" });
    await s.setMode("no-metrics");
    const { last } = await watch({ url: s.url }, 1, 0);
    expect(last.state).toBe("no-metrics");
    expect(textOf(last, "no-metrics")).toMatch(/start llama-server with --metrics/);
  });
});

describe("SGLang (the simulator's)", () => {
  it("busy on v0.5.10 (no pass counters): generation_tokens_total flat, gen_throughput refreshed: busy", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(300);
    const { history, last } = await watch({ url: s.url }, 3, 60);
    expect(history[2].metrics!.generationTokens).toBe(history[0].metrics!.generationTokens);
    expect(last.state).toBe("busy");
    expect(slotTaking(s)).toHaveLength(0);
  });

  it("busy with cuda_graph_passes_total: busy", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { progressCounters: true, warmupSeconds: 0 } });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(300);
    const { last } = await watch({ url: s.url }, 2, 60);
    expect(last.state).toBe("busy");
  });

  it("hang: the gauges keep their last values (gen_throughput > 0): stalled under 150 s, stuck past it", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(300);
    await watch({ url: s.url }, 1, 0);
    await s.setMode("hang");
    const short = await watch({ url: s.url }, 3, 65, { startS: 10 });
    expect(short.last.state).toBe("stalled");
    const long = await watch({ url: s.url }, 1, 0, { history: short.history, startS: 170 });
    expect(long.last.state).toBe("stuck");
    expect(textOf(long.last, "no-progress")).toMatch(/throughput gauge stuck at/);
    expect(paths(s)).not.toContain("/health"); // its /health would run a generation
  });

  it("the one-shot check without --wait waits 75 s (SGLang's 150 s window), so a hang ends stuck, not stalled", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(300);
    await watch({ url: s.url }, 1, 0);
    await s.setMode("hang");
    let now = 1_800_000_000_000;
    const sleeps: number[] = [];
    // The check's clock moves by what it sleeps; the wall only a little.
    const sleep = async (ms: number) => {
      sleeps.push(ms);
      now += ms;
      await pause(Math.ceil(ms / 375)); // 200 ms of wall per 75 s wait
    };
    const r = await checkBackend({ url: s.url }, { waitSeconds: 30, sleep, now: () => now, read: { timeoutMs: 3000, probeTimeoutMs: 3000 } });
    // Two whole waits of 75 s, slept in re-read slices: a flat read inside SGLang's 40 s quiet time
    // (no change expected yet) between them does not end the check busy.
    expect(sleeps.reduce((a, b) => a + b, 0)).toBe(150_000);
    expect(Math.max(...sleeps)).toBe(BUSY_RECHECK_MS);
    expect(r).toMatchObject({ state: "stuck", engine: "sglang", waitSeconds: 75, reads: sleeps.length + 1, probeSent: false });
    expect(r.reasons[0]).toMatchObject({ rule: "check-wait-widened", text: expect.stringMatching(/waits 75 s between reads, not the default 30 s: SGLang needs at least 150 s/) });
    expect(slotTaking(s)).toHaveLength(0);
  });

  it("idle: probed once with /v1/completions, idle", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    const { last } = await watch({ url: s.url }, 1, 0);
    expect(last.state).toBe("idle");
    expect(slotTaking(s).map((r) => r.path)).toEqual(["/v1/completions"]);
  });

  it("restart: counters going down are a new process (no start time)", async () => {
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    s.load({ requests: 3, promptTokens: 100, maxTokens: 30 }); // these finish: counters above 0
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(400);
    const before = await watch({ url: s.url }, 2, 30);
    await s.restart({ weightsLoadSeconds: 0.3 });
    await s.whenListening();
    s.load({ requests: 1, promptTokens: 100, maxTokens: 1_000_000 });
    const after = await watch({ url: s.url }, 1, 0, { history: before.history, startS: 120 });
    expect(after.last.state).toBe("starting");
    expect(rules(after.last)).toContain("new-process");
  });
});

describe("TGI (the simulator's)", () => {
  it("busy: batch_inference_count moves while request_success stays flat: busy", async () => {
    const s = await sim({ engine: "tgi" });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(200);
    const { history, last } = await watch({ url: s.url }, 3, 60);
    expect(history[2].metrics!.finishedRequests).toBe(history[0].metrics!.finishedRequests);
    expect(last.state).toBe("busy");
    expect(slotTaking(s)).toHaveLength(0);
  });

  it("hang: stuck", async () => {
    const s = await sim({ engine: "tgi" });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(200);
    await s.setMode("hang");
    const { last } = await watch({ url: s.url }, 3, 67);
    expect(last.state).toBe("stuck");
  });

  it("idle: a 1-token /generate, idle", async () => {
    const s = await sim({ engine: "tgi" });
    const { last } = await watch({ url: s.url }, 1, 0);
    expect(last.state).toBe("idle");
    expect(slotTaking(s).map((r) => r.path)).toEqual(["/generate"]);
  });

  it("restart: counters going down are a new process", async () => {
    const s = await sim({ engine: "tgi" });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(300);
    const before = await watch({ url: s.url }, 2, 30);
    await s.restart({ weightsLoadSeconds: 0.3 });
    await s.whenListening();
    s.load({ requests: 1, promptTokens: 100, maxTokens: 1_000_000 });
    await pause(100);
    const after = await watch({ url: s.url }, 1, 0, { history: before.history, startS: 120 });
    expect(after.last.state).toBe("starting");
  });
});

describe("Ollama (the simulator's)", () => {
  it("liveness only, never probed, even with work it cannot show; loaded models on the reading", async () => {
    const s = await sim({ engine: "ollama" });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    const { verdicts, history } = await watch({ url: s.url }, 3, 70);
    expect(verdicts.map((v) => v.state)).toEqual(["no-metrics", "no-metrics", "no-metrics"]);
    expect(rules(verdicts[2])).toEqual(["no-metrics", "no-metrics-alive"]);
    expect(history.every((r) => r.engine === "ollama")).toBe(true);
    expect(slotTaking(s)).toHaveLength(0);
  });

  it("down when /api/version refuses twice", async () => {
    const s = await sim({ engine: "ollama" });
    const before = await watch({ url: s.url }, 1, 0);
    await s.crash();
    const { last } = await watch({ url: s.url }, 2, 5, { history: before.history, startS: 5 });
    expect(last.state).toBe("down");
  });
});
