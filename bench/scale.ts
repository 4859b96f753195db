/**
 * Benchmark 3: how far one watcher scales. One simulator process serves every backend (a child,
 * so its CPU is not counted); for each (N, interval) a fresh watcher process (bench/scale-worker.ts)
 * polls the first N of them and reports its CPU share, memory and poll lag.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { bundled, firstJsonLine, startBundled, startSimulatorFleet } from "./child";
import type { ScaleRun, ScaleSpec } from "./scale-worker";
import { runWhenMain } from "./main";

export interface ScalePlanItem {
  backends: number;
  intervalSeconds: number;
  /** node flags of the watcher process (a heap cap: the README's memory setting), none by default. */
  nodeFlags?: string[];
  /** The config's readThreads; "auto" (what ships) by default. */
  readThreads?: "auto" | number;
  warmupSeconds: number;
  measureSeconds: number;
}

/**
 * The README's heap setting for a 1000-backend watcher: V8 lets a busy heap grow far past what it
 * keeps (~465 B per Reading in history, 72 readings per backend at 5 s), and a cap makes it collect
 * sooner instead. 64 MB + ~96 KB per backend.
 */
export const HEAP_CAP_1000 = "--max-old-space-size=160";

export function scalePlan(quick: boolean): ScalePlanItem[] {
  if (quick) {
    return [
      { backends: 100, intervalSeconds: 5, warmupSeconds: 5, measureSeconds: 8 },
      { backends: 1000, intervalSeconds: 5, warmupSeconds: 8, measureSeconds: 10 },
      { backends: 5000, intervalSeconds: 5, warmupSeconds: 30, measureSeconds: 10 },
      { backends: 100, intervalSeconds: 1, warmupSeconds: 3, measureSeconds: 5 },
    ];
  }
  return [
    { backends: 100, intervalSeconds: 5, warmupSeconds: 11, measureSeconds: 30 },
    { backends: 1000, intervalSeconds: 5, warmupSeconds: 11, measureSeconds: 30 },
    { backends: 1000, intervalSeconds: 5, warmupSeconds: 11, measureSeconds: 30, nodeFlags: [HEAP_CAP_1000] },
    // Past the start: every backend's first reads and first idle probe come in the first interval
    // or two, and 5000 of them take ~30 s to work through on two cores (RESULTS.md, 5000 note).
    { backends: 5000, intervalSeconds: 5, warmupSeconds: 40, measureSeconds: 30 },
    { backends: 5000, intervalSeconds: 5, warmupSeconds: 40, measureSeconds: 30, readThreads: 0 },
    { backends: 100, intervalSeconds: 1, warmupSeconds: 4, measureSeconds: 15 },
    { backends: 1000, intervalSeconds: 1, warmupSeconds: 4, measureSeconds: 15 },
  ];
}

/**
 * The simulated servers keep an idle connection this long (VLLM_HTTP_TIMEOUT_KEEP_ALIVE=15, what
 * the README asks of a fleet polled every 5 s): with uvicorn's default 5 s a watcher polling every
 * 5 s opens a new connection per read, which 5000 backends would make 1000 connections a second
 * (the peer section measures both settings at 1000 backends).
 */
export const SCALE_KEEP_ALIVE_SECONDS = 15;
/** Simulated servers per simulator process: 5000 in one process would make it the bottleneck. */
const SIMULATORS_PER_PROCESS = 2500;

export interface ScaleResult {
  simulatorProcess: string;
  keepAliveSeconds?: number;
  runs: Array<ScaleRun | { backends: number; intervalSeconds: number; error: string }>;
}

export async function runScaleBench(opts: { quick?: boolean; log?: (m: string) => void } = {}): Promise<ScaleResult> {
  const log = opts.log ?? (() => {});
  const plan = scalePlan(!!opts.quick);
  const most = Math.max(...plan.map((p) => p.backends));
  const fleets: Array<Awaited<ReturnType<typeof startSimulatorFleet>>> = [];
  const urls: string[] = [];
  const stopFleets = () => Promise.all(fleets.map((f) => f.child.stop()));
  try {
    for (let left = most; left > 0; left -= SIMULATORS_PER_PROCESS) {
      const f = await startSimulatorFleet(Math.min(left, SIMULATORS_PER_PROCESS), 180_000, ["--http-keep-alive-seconds", String(SCALE_KEEP_ALIVE_SECONDS)]);
      fleets.push(f);
      urls.push(...f.urls);
    }
  } catch (e) {
    await stopFleets();
    throw e;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-scale-spec-"));
  try {
    const runs: ScaleResult["runs"] = [];
    for (const item of plan) {
      log(`scale: ${item.backends} backends every ${item.intervalSeconds} s${item.nodeFlags ? ` (${item.nodeFlags.join(" ")})` : ""}${item.readThreads !== undefined ? ` (readThreads ${item.readThreads})` : ""}`);
      const spec: ScaleSpec = {
        urls: urls.slice(0, item.backends),
        intervalSeconds: item.intervalSeconds,
        warmupSeconds: item.warmupSeconds,
        measureSeconds: item.measureSeconds,
        readThreads: item.readThreads,
        readWorkerEntry: bundled("lib/watcher/read-worker.ts"),
      };
      const file = path.join(dir, `spec-${item.backends}-${item.intervalSeconds}-${item.readThreads ?? "auto"}.json`);
      fs.writeFileSync(file, JSON.stringify(spec));
      const worker = startBundled("bench/scale-worker.ts", [file], item.nodeFlags ?? []);
      try {
        const run = await firstJsonLine<ScaleRun>(worker, (item.warmupSeconds + item.measureSeconds + 60) * 1000, "scale worker");
        runs.push(item.nodeFlags ? { ...run, nodeFlags: item.nodeFlags } : run);
      } catch (e) {
        runs.push({ backends: item.backends, intervalSeconds: item.intervalSeconds, error: (e as Error).message.slice(0, 2000) });
      } finally {
        await worker.stop();
      }
    }
    return {
      simulatorProcess: `${fleets.length} child process${fleets.length > 1 ? "es" : ""} serving ${most} simulated backends on 127.0.0.1 (sim/cli.ts bundled by esbuild, --count ${Math.min(most, SIMULATORS_PER_PROCESS)} --http-keep-alive-seconds ${SCALE_KEEP_ALIVE_SECONDS} each)`,
      keepAliveSeconds: SCALE_KEEP_ALIVE_SECONDS,
      runs,
    };
  } finally {
    await stopFleets();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

runWhenMain(__filename, () => runScaleBench({ quick: process.argv.includes("--quick"), log: (m) => console.error(m) }));
