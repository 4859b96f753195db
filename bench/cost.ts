/**
 * Benchmark 2: what one check costs the model server and the watcher, over real HTTP against the
 * simulator (sim/server.ts on 127.0.0.1), side by side with the old watchdog's chat request.
 * The simulator logs every request it receives with the load at that moment, so "requests",
 * "bytes" and "slots" are counted by the server, not estimated. Plus the parse-time ratio of our
 * Prometheus parser against parse-prometheus-text-format (bench/parse.ts).
 */
import { observe } from "../lib/check/observe";
import { DEFAULT_THRESHOLDS, type Reading } from "../lib/core/types";
import { httpRequest } from "../lib/net/http";
import { startSimulator, type ReceivedRequest, type Simulator } from "../sim/server";
import { runParseBench, type ParseBenchResult } from "./parse";
import { runWhenMain } from "./main";

/** Engine seconds per wall second: the old watchdog's 45 s deadline becomes 4.5 s of wall time. */
const TIME_SCALE = 10;
const OLD_TIMEOUT_ENGINE_S = 45;

export interface CheckCost {
  checks: number;
  /** Per check, as counted by the simulator. */
  httpRequestsPerCheck: number;
  bytesReadPerCheck: number;
  /** Completion requests (the only ones that take or wait for a slot) per check. */
  slotRequestsPerCheck: number;
  /** Of those, the ones that arrived while requests were running or waiting. */
  slotRequestsToBusyServer: number;
  wallMsPerCheck: number;
  /** CPU of this process (the watcher side) per check. */
  cpuMsPerCheck: number;
  /** The verdicts of the checks (stepwatch: state -> count), or what the old watchdog's request got. */
  outcome: string;
  /** stepwatch only: requests the bench added before a check to keep the server as loaded as the row says. */
  topUps?: number;
}

function counted(log: ReceivedRequest[]) {
  const served = log.filter((r) => r.kind !== "admin");
  const slot = served.filter((r) => r.completion);
  return { requests: served.length, slot: slot.length, slotBusy: slot.filter((r) => r.running + r.waiting > 0).length };
}

/**
 * The simulators' and the checks' clock: real time plus a skip. A run of checks moves it a poll
 * interval per check, so the engine really progresses between two reads and the watcher's rules
 * (re-probe only every idleProbeSeconds) apply as in production, without waiting for real.
 */
let skipMs = 0;
const clock = () => Date.now() + skipMs;

async function stepwatchChecks(sim: Simulator, checks: number, intervalMs: number, before?: () => number): Promise<CheckCost> {
  sim.resetLog();
  const history: Reading[] = [];
  let bytes = 0;
  let topUps = 0;
  const states = new Map<string, number>();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < checks; i++) {
    if (before) topUps += before();
    const { reading, verdict } = await observe({ url: sim.url }, history, { thresholds: DEFAULT_THRESHOLDS, now: clock });
    history.push(reading);
    bytes += reading.bytes ?? 0;
    states.set(verdict.state, (states.get(verdict.state) ?? 0) + 1);
    skipMs += intervalMs;
  }
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const c = counted(sim.received());
  return {
    checks,
    httpRequestsPerCheck: c.requests / checks,
    bytesReadPerCheck: bytes / checks,
    slotRequestsPerCheck: c.slot / checks,
    slotRequestsToBusyServer: c.slotBusy,
    wallMsPerCheck: wall / checks,
    cpuMsPerCheck: (cpu.user + cpu.system) / 1000 / checks,
    outcome: [...states].map(([k, v]) => (checks === 1 ? k : `${k} ${v}`)).join(", "),
    ...(before ? { topUps } : {}),
  };
}

/** The old watchdog's check: one real chat request, 45 s (engine time) to answer. */
async function oldWatchdogCheck(sim: Simulator): Promise<CheckCost> {
  sim.resetLog();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const res = await httpRequest(`${sim.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: sim.modelName, messages: [{ role: "user", content: "Are you there? Answer OK." }], max_tokens: 32 }),
    timeoutMs: (OLD_TIMEOUT_ENGINE_S * 1000) / TIME_SCALE,
    maxBytes: 1024 * 1024,
  });
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const c = counted(sim.received());
  return {
    checks: 1,
    httpRequestsPerCheck: c.requests,
    bytesReadPerCheck: res.bytes,
    slotRequestsPerCheck: c.slot,
    slotRequestsToBusyServer: c.slotBusy,
    wallMsPerCheck: wall,
    cpuMsPerCheck: (cpu.user + cpu.system) / 1000,
    outcome: res.outcome === "ok" ? `answered in ${((wall * TIME_SCALE) / 1000).toFixed(1)} s engine time` : `${res.outcome} (${res.error ?? ""})`,
  };
}

export interface CostResult {
  timeScale: number;
  server: { maxNumSeqs: number; engines: number; busyLoad: number };
  busy: { stepwatch: CheckCost; oldWatchdog: CheckCost };
  idle: { stepwatchFirst: CheckCost; stepwatchSteady: CheckCost; oldWatchdog: CheckCost };
  metricsBodyBytes: { oneEngine: number; eightEngines: number };
  parse: ParseBenchResult;
}

export async function runCostBench(opts: { quick?: boolean } = {}): Promise<CostResult> {
  const maxNumSeqs = 3;
  const busyLoad = 4; // the incident's batch job at its peak: every slot taken, one waiting
  const steadyChecks = opts.quick ? 24 : 120; // 2 or 10 minutes of 5 s polls
  const sim = await startSimulator({ maxNumSeqs, totalTokensPerSecondAtLimit: 27, timeScale: TIME_SCALE, clock });
  const sim8 = await startSimulator({ engines: 8, maxNumSeqs: 12, clock });
  try {
    // Idle: the first check probes (a slot for one token); later ones only read /metrics until
    // idleProbeSeconds has passed.
    const stepwatchFirst = await stepwatchChecks(sim, 1, 5000);
    const stepwatchSteady = await stepwatchChecks(sim, steadyChecks, 5000);
    const oldIdle = await oldWatchdogCheck(sim);

    // Busy: every slot taken and one waiting for the whole run. Each check moves the engine's clock
    // a poll interval (50 s of engine time at 10x), so the requests are long enough to outlast the
    // run (1M output tokens at 27 tok/s), and one that ends anyway is replaced before the next check:
    // the row measures checks of a server that is busy when it is read, which the verdicts show.
    const keepBusy = () => {
      const st = sim.state();
      const missing = busyLoad - (st.running + st.waiting);
      return missing > 0 ? sim.load({ requests: missing, promptTokens: 4000, maxTokens: 1_000_000 }) : 0;
    };
    keepBusy();
    const stepwatchBusy = await stepwatchChecks(sim, steadyChecks, 5000, keepBusy);
    keepBusy();
    const oldBusy = await oldWatchdogCheck(sim);

    const one = await httpRequest(`${sim.url}/metrics`, { timeoutMs: 5000, maxBytes: 8 << 20 });
    const eight = await httpRequest(`${sim8.url}/metrics`, { timeoutMs: 5000, maxBytes: 8 << 20 });
    const parse = await runParseBench({ quick: opts.quick });
    return {
      timeScale: TIME_SCALE,
      server: { maxNumSeqs, engines: 1, busyLoad },
      busy: { stepwatch: stepwatchBusy, oldWatchdog: oldBusy },
      idle: { stepwatchFirst, stepwatchSteady, oldWatchdog: oldIdle },
      metricsBodyBytes: { oneEngine: one.bytes, eightEngines: eight.bytes },
      parse,
    };
  } finally {
    await sim.close();
    await sim8.close();
  }
}

runWhenMain(__filename, () => runCostBench({ quick: process.argv.includes("--quick") }));
