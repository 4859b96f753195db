/**
 * Issue 10 over real HTTP: the simulator, in the mode each real-vLLM case needs, read and judged by
 * observe() (the watcher's and the CLI's one path), with the simulator's own record of what it was
 * sent. The check's clock is injected (reads "67 s apart") while the engine runs faster than real
 * time, so windows of minutes take a fraction of a second and nothing asserts a timing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { observe } from "@/lib/check/observe";
import type { BackendTarget } from "@/lib/check/read";
import type { Reading, Thresholds, Verdict } from "@/lib/core/types";
import { startSimulator, type Simulator, type SimulatorOptions } from "@/sim/server";
import { call, waitFor } from "./sim-support";

const T: Thresholds = { stuckAfterSeconds: 120, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900, startupGraceSeconds: 600 };
const sims: Simulator[] = [];
async function sim(opts: SimulatorOptions = {}): Promise<Simulator> {
  const s = await startSimulator({ weightsLoadSeconds: 0.2, timeScale: 20, ...opts });
  sims.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads `n` times, the check's clock `gapS` apart, the wall a little apart; returns every verdict. */
async function watch(target: BackendTarget, n: number, gapS: number, opts: { timeoutMs?: number; history?: Reading[]; startS?: number } = {}) {
  const history = opts.history ?? [];
  const verdicts: Verdict[] = [];
  for (let i = 0; i < n; i++) {
    const at = 1_800_000_000_000 + ((opts.startS ?? 0) + i * gapS) * 1000;
    if (i > 0) await pause(150);
    const { reading, verdict } = await observe(target, history, { thresholds: T, now: () => at, read: { timeoutMs: opts.timeoutMs ?? 3000, probeTimeoutMs: 2000 } });
    history.push(reading);
    verdicts.push(verdict);
  }
  return { history, verdicts, last: verdicts[verdicts.length - 1] };
}
const probes = (s: Simulator) => s.received().filter((r) => r.completion);

describe("sleep mode (vLLM 0.29: engine_sleep_state, /sleep, /wake_up)", () => {
  it("asleep: sleeping, never probed, never stuck; /health stays 200; after /wake_up it is probed and idle", async () => {
    const s = await sim();
    expect((await call(`${s.url}/sleep?level=1`, { method: "POST" })).status).toBe(200);
    expect(JSON.parse((await call(`${s.url}/is_sleeping`)).body)).toEqual({ is_sleeping: true });
    const asleep = await watch({ url: s.url }, 3, 70);
    expect(asleep.verdicts.map((v) => v.state)).toEqual(["sleeping", "sleeping", "sleeping"]);
    expect(asleep.last).toMatchObject({ healthy: true, restartRecommended: false });
    expect(asleep.last.reasons[0]).toMatchObject({ rule: "sleeping", text: expect.stringMatching(/sleep level 1/) });
    expect(probes(s)).toHaveLength(0);
    expect((await call(`${s.url}/health`)).status).toBe(200);

    expect((await call(`${s.url}/wake_up`, { method: "POST" })).status).toBe(200);
    const awake = await watch({ url: s.url }, 1, 70, { history: asleep.history, startS: 210 });
    expect(awake.last.state).toBe("idle");
    expect(probes(s)).toHaveLength(1);
  });

  it("a completion sent while asleep pends (neither fails nor wakes the engine) and is answered after /wake_up", async () => {
    const s = await sim();
    await call(`${s.url}/sleep?level=2`, { method: "POST" });
    let done = false;
    const answer = call(`${s.url}/v1/completions`, { body: { prompt: "hi", max_tokens: 2 }, timeoutMs: 20_000 }).then((a) => {
      done = true;
      return a;
    });
    await pause(300);
    expect(done).toBe(false);
    expect(JSON.parse((await call(`${s.url}/is_sleeping`)).body)).toEqual({ is_sleeping: true });
    const { last } = await watch({ url: s.url }, 1, 0);
    expect(last.state).toBe("sleeping");
    expect(last.reasons[0]).toMatchObject({ rule: "sleeping", text: expect.stringMatching(/sleep level 2: weights discarded/) });
    await call(`${s.url}/wake_up`, { method: "POST" });
    expect((await answer).status).toBe(200);
  });
});

describe("waiting that is not the engine's fault (num_requests_waiting_by_reason)", () => {
  it("only deferred requests waiting: busy, never stuck, never probed", async () => {
    const s = await sim();
    await s.setMode("deferred", { waiting: 3 });
    const { verdicts } = await watch({ url: s.url }, 4, 70);
    expect(verdicts.map((v) => v.state)).toEqual(["busy", "busy", "busy", "busy"]);
    expect(verdicts[3].reasons.map((r) => r.rule)).toContain("deferred-only");
    expect(probes(s)).toHaveLength(0);
  });
});

describe("data parallel: one wedged engine hides behind the others", () => {
  it("engine 1 of 2 holds requests and never steps while engine 0 progresses: stuck, naming the engine", async () => {
    const s = await sim({ engines: 2 });
    s.load({ requests: 4, promptTokens: 100, maxTokens: 1_000_000 });
    await waitFor("both engines decoding", () => s.state() && s.model.engines.every((e) => e.numRunning === 2 && e.stats.steps > 0));
    await s.setMode("hang-engine");
    const { verdicts, last } = await watch({ url: s.url }, 3, 67);
    expect(verdicts[2].state).toBe("stuck");
    expect(last.restartRecommended).toBe(true);
    expect(last.reasons.find((r) => r.rule === "dp-stuck")?.text).toMatch(/^engine 1 of 2: 2 running, 0 waiting, 0 new steps in 134 s/);
    expect(last.rates.stepsPerSecond).toBeGreaterThan(0); // the sums still progress
    expect(probes(s)).toHaveLength(0);
  });
});

describe("what is not progress", () => {
  it("clients aborting requests on a wedged engine do not make it look alive", async () => {
    const s = await sim();
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await waitFor("decoding", () => s.state().running === 2 && s.state().counters.steps > 0);
    await s.setMode("wedged");
    const target = { url: s.url };
    const history: Reading[] = [];
    let v: Verdict | undefined;
    for (let i = 0; i < 3; i++) {
      // Impatient clients: each gives up after 100 ms; the wedged engine counts the abort.
      await Promise.all([1, 2].map(() => call(`${s.url}/v1/completions`, { body: { prompt: "x", max_tokens: 5 }, timeoutMs: 100 })));
      await waitFor("aborts counted", () => s.model.engines[0].stats.finished.abort >= 2 * (i + 1));
      const at = 1_800_000_000_000 + i * 67_000;
      const step = await observe(target, history, { thresholds: T, now: () => at, read: { timeoutMs: 3000 } });
      history.push(step.reading);
      v = step.verdict;
    }
    expect(s.model.engines[0].stats.finished.abort).toBeGreaterThanOrEqual(6);
    expect(v!.state).toBe("stuck");
  });

  it("preemption churn moves the KV cache without a token: stuck, and the reason says churn", async () => {
    const s = await sim();
    s.load({ requests: 1, promptTokens: 100, maxTokens: 1_000_000 });
    await waitFor("decoding", () => s.state().counters.steps > 0);
    await s.setMode("churn");
    const { history, last } = await watch({ url: s.url }, 3, 67);
    const kv = history.map((r) => r.metrics!.kvCacheUsage);
    expect(new Set(kv).size).toBeGreaterThan(1);
    expect(last.state).toBe("stuck");
    expect(last.reasons.find((r) => r.rule === "no-progress")?.text).toMatch(/preemptions meanwhile \(KV-cache churn is not progress\)/);
  });
});

describe("probes that cannot succeed", () => {
  it("401 (the API key is missing): not stuck, a configuration problem in words; with the key: idle", async () => {
    const s = await sim({ apiKey: "sk-right" });
    const { verdicts, last } = await watch({ url: s.url }, 3, 70);
    expect(verdicts.map((v) => v.state)).toEqual(["unknown", "unknown", "unknown"]);
    expect(last.configProblem).toBe("the probe needs the API key: 401");
    const ok = await watch({ url: s.url, apiKey: "sk-right" }, 1, 0);
    expect(ok.last.state).toBe("idle");
  });

  it("a pooling model: completions 404, one fallback to /v1/embeddings, and that probe is remembered", async () => {
    const s = await sim({ pooling: true, modelName: "bge-m3" });
    const first = await watch({ url: s.url }, 1, 0);
    expect(first.last.state).toBe("idle");
    expect(first.history[0].probe).toMatchObject({ ok: true, kind: "embeddings", fallbackFrom: "completions" });
    expect(probes(s).map((r) => r.path)).toEqual(["/v1/completions", "/v1/embeddings"]);
    s.resetLog();
    const again = await watch({ url: s.url }, 1, 0, { history: first.history, startS: 61 });
    expect(again.last.state).toBe("idle");
    expect(probes(s).map((r) => r.path)).toEqual(["/v1/embeddings"]);
  });

  it("probe: none judges idle from metrics alone and sends nothing", async () => {
    const s = await sim();
    const { last } = await watch({ url: s.url, probe: "none" }, 2, 70);
    expect(last.state).toBe("idle");
    expect(probes(s)).toHaveLength(0);
  });
});

describe("down is a fact; a restart recommendation needs more", () => {
  it("refusing while it loads weights: down at once, restart recommended only after startupGraceSeconds", async () => {
    const s = await sim({ weightsLoadSeconds: 3600 });
    await watch({ url: s.url }, 1, 0);
    await s.restart();
    const { history, verdicts } = await watch({ url: s.url }, 3, 60, { startS: 10 });
    expect(verdicts[2]).toMatchObject({ state: "down", restartRecommended: false });
    expect(verdicts[2].reasons[0]).toMatchObject({ rule: "down-grace", text: expect.stringMatching(/down for 2 min; may be loading weights; restart recommended after 10 min/) });
    const later = await watch({ url: s.url }, 1, 0, { history, startS: 700 });
    expect(later.last).toMatchObject({ state: "down", restartRecommended: true });
  });

  it("a /metrics that times out while /health answers 200: unknown for minutes, never down", async () => {
    const s = await sim({ slowMetricsSeconds: 30 });
    await s.setMode("slow-metrics");
    const { history, verdicts } = await watch({ url: s.url }, 4, 100, { timeoutMs: 300 });
    expect(history.every((r) => r.outcome === "timeout" && r.health?.outcome === "ok")).toBe(true);
    expect(verdicts.map((v) => v.state)).toEqual(["unknown", "unknown", "unknown", "unknown"]);
    expect(verdicts[3].restartRecommended).toBe(false);
    expect(verdicts[3].reasons.map((r) => r.rule)).toContain("metrics-timeout");
  });
});
