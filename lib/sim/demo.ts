/**
 * The embedded demo fleet: what a newcomer's first command shows (README.md, the first command).
 *
 * Two simulated GB10 backends behind a simulated least-connection proxy, the incident's load (a
 * batch job of 2 to 4 long requests, both servers at their limit of 12 at times, idle pauses), and
 * a scripted day so every state appears live: gb10-a hangs a couple of minutes in (stuck until an
 * operator restarts it from the dashboard), gb10-b crashes a few minutes in and comes back by
 * itself as a new process (down, then starting). The script repeats every cycle.
 *
 * Demo-short timings, on purpose: weights load in 20 s instead of minutes, and stepwatch calls a
 * backend stuck after 30 s instead of 120 s, so a visitor sees the whole story in minutes.
 */
import { startIncidentLoad, type IncidentLoad } from "./load";
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
  proxies: Array<{ id: string; url: string }>;
  operators: Array<{ name: string; password: string }>;
}

export interface DemoFleet {
  config: DemoConfig;
  simulators: Record<"gb10-a" | "gb10-b", Simulator>;
  proxy: LeastConnProxy;
  load: IncidentLoad;
  stop(): Promise<void>;
}

/** The scripted day, wall seconds at timeScale 1 from the start of each cycle. */
export const DEMO_SCRIPT = {
  cycleSeconds: 900,
  hangAt: 120,
  crashAt: 240,
  crashForSeconds: 60,
} as const;

export async function startDemoFleet(opts: DemoOptions = {}): Promise<DemoFleet> {
  const timeScale = opts.timeScale ?? 1;
  const weightsLoadSeconds = opts.weightsLoadSeconds ?? 20;
  const common = { host: opts.host ?? "127.0.0.1", timeScale, weightsLoadSeconds, modelName: "gb10/llama-3.1-70b-fp8" };
  const started: Simulator[] = [];
  let proxy: LeastConnProxy | null = null;
  try {
    started.push(await startSimulator(common), await startSimulator(common));
    proxy = await startLeastConnProxy({ backends: started.map((s) => s.url), host: common.host });
  } catch (err) {
    await Promise.allSettled(started.map((s) => s.close()));
    throw err;
  }
  const [a, b] = started;
  const load = startIncidentLoad({ targets: [a.url, b.url], timeScale, model: common.modelName, offsetsSeconds: [0, 60] });

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
    at(DEMO_SCRIPT.cycleSeconds, () => {
      // Nobody restarted gb10-a this cycle: do it so the next cycle can hang it again.
      if (a.phase() === "listening" && a.mode() !== "normal") a.restart().catch(report("restart gb10-a"));
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
    backends: [backend("gb10-a", a), backend("gb10-b", b)],
    proxies: [{ id: "gb10-proxy", url: proxy.url }],
    operators: [{ name: "demo", password: "demo" }],
  };

  let stopped = false;
  return {
    config,
    simulators: { "gb10-a": a, "gb10-b": b },
    proxy,
    load,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await load.stop();
      await Promise.allSettled([a.close(), b.close(), proxy!.close()]);
    },
  };
}
