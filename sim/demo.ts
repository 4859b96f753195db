/**
 * The embedded demo fleet: what a newcomer's first command shows (README.md, the first command).
 *
 * Two simulated GB10 backends behind a simulated least-connection proxy, the incident's load (a
 * batch job of 2 to 4 long requests, both servers at their limit of 12 at times, idle pauses), and
 * a scripted day so every state appears live: gb10-a hangs a couple of minutes in (stuck until an
 * operator restarts it from the dashboard), gb10-b crashes a few minutes in and comes back by
 * itself as a new process (down, then starting). The script repeats every cycle.
 *
 * Beside them, the mixed fleet people actually run: gb10-llama (llama.cpp's llama-server, 4 slots,
 * --sleep-idle-seconds) and gb10-sglang (SGLang) under a lighter batch job of long generations
 * (minutes each, so for minutes nothing finishes and the finish counters stay flat), with a long
 * idle pause in which llama.cpp falls asleep, and a scripted SGLang hang (its gauges go stale).
 *
 * Demo-short timings, on purpose: weights load in 20 s instead of minutes, and stepwatch calls a
 * backend stuck after 30 s instead of 120 s, so a visitor sees the whole story in minutes.
 */
import { startIncidentLoad, type IncidentLoad, type LoadPhase } from "./load";
import { startLeastConnProxy, type LeastConnProxy } from "./proxy";
import { startSimulator, type Simulator } from "./server";

export interface DemoOptions {
  /** Speeds up the engines, the load and the script together (1 = real GB10 speed). */
  timeScale?: number;
  /** Wall seconds a restarted demo backend refuses connections (default 20). */
  weightsLoadSeconds?: number;
  host?: string;
}

/** The stepwatch config for the demo fleet, in the shape lib/config.ts validates. */
export interface DemoConfig {
  pollIntervalSeconds: number;
  stuckAfterSeconds: number;
  probeTimeoutSeconds: number;
  idleProbeSeconds: number;
  restartCooldownSeconds: number;
  recoveryTimeoutSeconds: number;
  backends: Array<{ id: string; url: string; model: string; restart: { webhook: { url: string; method: "POST" } } }>;
  proxies: Array<{ id: string; url: string; backends: string[] }>;
  operators: Array<{ name: string; password: string }>;
}

export type DemoBackendId = "gb10-a" | "gb10-b" | "gb10-llama" | "gb10-sglang";

export interface DemoFleet {
  config: DemoConfig;
  simulators: Record<DemoBackendId, Simulator>;
  proxy: LeastConnProxy;
  /** The incident's load on the two vLLM backends. */
  load: IncidentLoad;
  /** The lighter batch job on llama.cpp and SGLang. */
  sideLoad: IncidentLoad;
  stop(): Promise<void>;
}

/** The scripted day, wall seconds at timeScale 1 from the start of each cycle. */
export const DEMO_SCRIPT = {
  cycleSeconds: 900,
  hangAt: 120,
  crashAt: 240,
  crashForSeconds: 60,
  /** gb10-sglang's scheduler hangs (stuck until restarted, or until the cycle ends). */
  sglangHangAt: 420,
  /** gb10-llama sleeps after this long without a task (its --sleep-idle-seconds). */
  llamaSleepIdleSeconds: 60,
} as const;

/**
 * The llama.cpp / SGLang batch job (seconds at timeScale 1): long generations, and a pause longer
 * than llama.cpp's idle timeout so it falls asleep (then the next batch wakes it).
 */
export const SIDE_SCHEDULE: readonly LoadPhase[] = [
  { seconds: 180, concurrency: 2 },
  { seconds: 240, concurrency: 3 },
  { seconds: 280, concurrency: 1 },
  // Running requests finish first (up to ~4 min), then llama.cpp's idle timer runs out.
  { seconds: 420, concurrency: 0 },
];

export async function startDemoFleet(opts: DemoOptions = {}): Promise<DemoFleet> {
  const timeScale = opts.timeScale ?? 1;
  const weightsLoadSeconds = opts.weightsLoadSeconds ?? 20;
  const common = { host: opts.host ?? "127.0.0.1", timeScale, weightsLoadSeconds, modelName: "gb10/llama-3.1-70b-fp8" };
  const started: Simulator[] = [];
  let proxy: LeastConnProxy | null = null;
  try {
    started.push(await startSimulator(common), await startSimulator(common));
    started.push(
      await startSimulator({
        ...common,
        engine: "llamacpp",
        modelName: "gb10/llama-3.3-70b-instruct-q4_k_m",
        // A Q4 70B in llama.cpp on a GB10: ~6 tok/s alone, 4 slots share ~14 tok/s.
        singleRequestTokensPerSecond: 6,
        totalTokensPerSecondAtLimit: 14,
        engineOptions: { sleepIdleSeconds: DEMO_SCRIPT.llamaSleepIdleSeconds / timeScale, wakeSeconds: 5 / timeScale },
      }),
      await startSimulator({ ...common, engine: "sglang", modelName: "gb10/qwen2.5-72b-instruct-fp8" }),
    );
    proxy = await startLeastConnProxy({ backends: started.slice(0, 2).map((s) => s.url), host: common.host });
  } catch (err) {
    await Promise.allSettled(started.map((s) => s.close()));
    throw err;
  }
  const [a, b, llama, sglang] = started;
  const load = startIncidentLoad({ targets: [a.url, b.url], timeScale, model: common.modelName, offsetsSeconds: [0, 60] });
  // One job per backend (each sends its own model name); prompts stay inside a llama.cpp slot's context.
  const sideJob = (sim: Simulator, offset: number) =>
    startIncidentLoad({ targets: [sim.url], timeScale, model: sim.modelName, schedule: SIDE_SCHEDULE, offsetsSeconds: [offset], promptTokens: [200, 2000], maxTokens: [600, 1500], longPromptEvery: 0, seed: 7 + offset });
  const sideJobs = [sideJob(llama, 0), sideJob(sglang, 90)];
  const sideLoad: IncidentLoad = {
    stats: () => {
      const [x, y] = sideJobs.map((j) => j.stats());
      return { sent: x.sent + y.sent, succeeded: x.succeeded + y.succeeded, failed: x.failed + y.failed, inFlight: x.inFlight + y.inFlight, desired: [...x.desired, ...y.desired] };
    },
    stop: async () => {
      await Promise.all(sideJobs.map((j) => j.stop()));
    },
  };

  const timers = new Set<NodeJS.Timeout>();
  const at = (seconds: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, (seconds * 1000) / timeScale);
    timers.add(timer);
  };
  const report = (what: string) => (err: unknown) => console.error(`[demo] ${what} failed:`, err);
  const cycle = () => {
    at(DEMO_SCRIPT.hangAt, () => {
      if (a.phase() === "listening" && a.mode() === "normal") a.setMode("hang").catch(report("hang gb10-a"));
    });
    at(DEMO_SCRIPT.crashAt, () => {
      if (b.phase() === "listening") b.crash({ forSeconds: DEMO_SCRIPT.crashForSeconds / timeScale }).catch(report("crash gb10-b"));
    });
    at(DEMO_SCRIPT.sglangHangAt, () => {
      if (sglang.phase() === "listening" && sglang.mode() === "normal") sglang.setMode("hang").catch(report("hang gb10-sglang"));
    });
    at(DEMO_SCRIPT.cycleSeconds, () => {
      // Nobody restarted the hung ones this cycle: do it so the next cycle can hang them again.
      if (a.phase() === "listening" && a.mode() !== "normal") a.restart().catch(report("restart gb10-a"));
      if (sglang.phase() === "listening" && sglang.mode() !== "normal") sglang.restart().catch(report("restart gb10-sglang"));
      cycle();
    });
  };
  cycle();

  const backend = (id: string, sim: Simulator) => ({
    id,
    url: sim.url,
    model: sim.modelName,
    restart: { webhook: { url: `${sim.url}/_sim/restart`, method: "POST" as const } },
  });
  const config: DemoConfig = {
    pollIntervalSeconds: 2,
    stuckAfterSeconds: 30, // demo-short; the product default is 120
    probeTimeoutSeconds: 10,
    idleProbeSeconds: 60,
    restartCooldownSeconds: 60, // demo-short; the product default is 600
    recoveryTimeoutSeconds: 120, // weights load in 20 s here
    backends: [backend("gb10-a", a), backend("gb10-b", b), backend("gb10-llama", llama), backend("gb10-sglang", sglang)],
    proxies: [{ id: "gb10-proxy", url: proxy.url, backends: ["gb10-a", "gb10-b"] }],
    operators: [{ name: "demo", password: "demo" }],
  };

  let stopped = false;
  return {
    config,
    simulators: { "gb10-a": a, "gb10-b": b, "gb10-llama": llama, "gb10-sglang": sglang },
    proxy,
    load,
    sideLoad,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await Promise.all([load.stop(), sideLoad.stop()]);
      await Promise.allSettled([...started.map((s) => s.close()), proxy!.close()]);
    },
  };
}
