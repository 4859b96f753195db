/**
 * Start simulated vLLM servers from the command line (npm run sim -- ...). Prints ONE JSON line
 * on stdout once everything listens (tests, Playwright and the benchmark wait for it), then runs
 * until SIGTERM/SIGINT, when it closes everything and exits 0.
 *
 *   npx tsx sim/cli.ts --port 8001 --port 8002 --proxy 8100 --load
 *   npx tsx sim/cli.ts --ports 9000-9999 --time-scale 10          (benchmark fleet)
 *   npx tsx sim/cli.ts --demo                                     (the demo fleet + its config)
 *   npx tsx sim/cli.ts --engine llamacpp --sleep-idle-seconds 60  (another engine, sim/engines/)
 */
import { startDemoFleet } from "./demo";
import { startIncidentLoad, type IncidentLoad } from "./load";
import { startLeastConnProxy, type LeastConnProxy } from "./proxy";
import { ENGINE_KINDS, parseEngineKind } from "./engines";
import { SIM_MODES, type SimMode } from "./model";
import { startSimulator, type Simulator, type SimulatorOptions } from "./server";

export interface CliArgs {
  ports: number[];
  count: number | null;
  proxyPort: number | null;
  load: boolean;
  demo: boolean;
  mode: SimMode | null;
  /** Keep running when the parent process dies (default: exit, see watchParent). */
  stayIfOrphaned: boolean;
  sim: SimulatorOptions;
}

const USAGE = `usage: sim [--port N]... [--ports A-B] [--count N] [--host H] [--model NAME] [--engines N]
  [--max-num-seqs N] [--weights-load-seconds S] [--time-scale X] [--multi-api-server] [--api-key K]
  [--http-keep-alive-seconds S]
  [--mode ${SIM_MODES.join("|")}] [--proxy PORT] [--load] [--demo] [--stay-if-orphaned]
  [--engine ${ENGINE_KINDS.join("|")}] [--sleep-idle-seconds S] [--metrics-cached-while-asleep]
  [--to-metrics] [--progress-counters] [--keep-alive-seconds S]`;

function num(flag: string, value: string | undefined): number {
  const n = Number(value);
  if (value === undefined || value === "" || !Number.isFinite(n)) throw new Error(`${flag} needs a number, got ${JSON.stringify(value)}\n${USAGE}`);
  return n;
}

function port(flag: string, value: string | undefined): number {
  const n = num(flag, value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${flag}: ${value} is not a port`);
  return n;
}

/** Parse argv (without node and the script). Pure, so it is unit-tested. */
export function parseCliArgs(argv: string[]): CliArgs {
  const out: CliArgs = { ports: [], count: null, proxyPort: null, load: false, demo: false, mode: null, stayIfOrphaned: false, sim: {} };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = () => argv[++i];
    switch (flag) {
      case "--port":
        out.ports.push(port(flag, next()));
        break;
      case "--ports": {
        const v = next();
        const m = /^(\d+)-(\d+)$/.exec(v ?? "");
        if (!m) throw new Error(`--ports needs A-B, got ${JSON.stringify(v)}`);
        const [from, to] = [port(flag, m[1]), port(flag, m[2])];
        if (to < from) throw new Error(`--ports ${v}: the range is empty`);
        for (let p = from; p <= to; p++) out.ports.push(p);
        break;
      }
      case "--count":
        out.count = num(flag, next());
        break;
      case "--host":
        out.sim.host = next();
        break;
      case "--model":
        out.sim.modelName = next();
        break;
      case "--engines":
        out.sim.engines = num(flag, next());
        break;
      case "--max-num-seqs":
        out.sim.maxNumSeqs = num(flag, next());
        break;
      case "--weights-load-seconds":
        out.sim.weightsLoadSeconds = num(flag, next());
        break;
      case "--time-scale":
        out.sim.timeScale = num(flag, next());
        break;
      case "--multi-api-server":
        out.sim.multiApiServer = true;
        break;
      case "--http-keep-alive-seconds":
        out.sim.httpKeepAliveSeconds = num(flag, next());
        break;
      case "--api-key":
        out.sim.apiKey = next();
        break;
      case "--engine":
        out.sim.engine = parseEngineKind(next(), "--engine");
        break;
      // Engine knobs (sim/engines/types.ts FrontOptions): each engine reads its own.
      case "--sleep-idle-seconds":
        out.sim.engineOptions = { ...out.sim.engineOptions, sleepIdleSeconds: num(flag, next()) };
        break;
      case "--metrics-cached-while-asleep":
        out.sim.engineOptions = { ...out.sim.engineOptions, metricsWakeFromSleep: false };
        break;
      case "--to-metrics":
        out.sim.engineOptions = { ...out.sim.engineOptions, toMetrics: true };
        break;
      case "--progress-counters":
        out.sim.engineOptions = { ...out.sim.engineOptions, progressCounters: true };
        break;
      case "--keep-alive-seconds":
        out.sim.engineOptions = { ...out.sim.engineOptions, keepAliveSeconds: num(flag, next()) };
        break;
      case "--mode": {
        const v = next();
        if (!(SIM_MODES as readonly string[]).includes(v ?? "")) throw new Error(`--mode must be one of ${SIM_MODES.join(", ")}`);
        out.mode = v as SimMode;
        break;
      }
      case "--proxy":
        out.proxyPort = port(flag, next());
        break;
      case "--load":
        out.load = true;
        break;
      case "--demo":
        out.demo = true;
        break;
      case "--stay-if-orphaned":
        out.stayIfOrphaned = true;
        break;
      case "--help":
      case "-h":
        throw new Error(USAGE);
      default:
        throw new Error(`unknown flag ${flag}\n${USAGE}`);
    }
  }
  return out;
}

/**
 * Exit when the parent dies. Started through the tsx wrapper (npx tsx, npm run sim), a SIGTERM
 * sent to the wrapper alone kills it without passing the signal on, which would leave this
 * process orphaned and still holding its ports. One slow timer per CLI process, not per backend.
 */
function watchParent(onOrphaned: () => void): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      onOrphaned();
    }
  }, 1000);
  timer.unref();
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let args: CliArgs;
  try {
    args = parseCliArgs(argv);
  } catch (err) {
    process.stderr.write(`sim: ${(err as Error).message}\n`);
    process.exit(64);
  }
  const closers: Array<() => Promise<void>> = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const c of closers.reverse()) await c().catch(() => undefined);
    process.exit(code);
  };
  process.on("SIGTERM", () => void stop(0));
  process.on("SIGINT", () => void stop(0));
  if (!args.stayIfOrphaned) watchParent(() => void stop(0));

  try {
    if (args.demo) {
      const fleet = await startDemoFleet({ timeScale: args.sim.timeScale, weightsLoadSeconds: args.sim.weightsLoadSeconds, host: args.sim.host });
      closers.push(fleet.stop);
      process.stdout.write(`${JSON.stringify({ ready: true, demo: true, config: fleet.config })}\n`);
      return;
    }
    const ports = args.ports.length ? args.ports : Array.from({ length: args.count ?? 1 }, () => 0);
    const sims: Simulator[] = [];
    closers.push(async () => {
      await Promise.allSettled(sims.map((s) => s.close()));
    });
    // Start in batches: a thousand listens at once is fine for the kernel but not for error reports.
    for (let i = 0; i < ports.length; i += 100) {
      const batch = await Promise.all(ports.slice(i, i + 100).map((p) => startSimulator({ ...args.sim, port: p })));
      sims.push(...batch);
    }
    if (args.mode) await Promise.all(sims.map((s) => s.setMode(args.mode!)));
    let proxy: LeastConnProxy | null = null;
    if (args.proxyPort !== null) {
      proxy = await startLeastConnProxy({ backends: sims.map((s) => s.url), port: args.proxyPort, host: args.sim.host });
      closers.push(proxy.close);
    }
    let load: IncidentLoad | null = null;
    if (args.load) {
      // Ollama's OpenAI routes need the model's name; the others accept it.
      load = startIncidentLoad({ targets: sims.map((s) => s.url), timeScale: args.sim.timeScale, apiKey: args.sim.apiKey, model: sims[0]?.modelName });
      closers.push(load.stop);
    }
    process.stdout.write(
      `${JSON.stringify({ ready: true, pid: process.pid, simulators: sims.map((s) => ({ url: s.url, port: s.port })), proxy: proxy ? { url: proxy.url } : null, load: !!load })}\n`,
    );
  } catch (err) {
    process.stderr.write(`sim: ${(err as Error).message}\n`);
    await stop(2);
  }
}

// Run only as a script, not when a test imports parseCliArgs.
if (typeof require !== "undefined" && typeof module !== "undefined" && require.main === module) void main();
