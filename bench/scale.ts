/**
 * Benchmark 3: how far one watcher scales. One simulator process serves every backend (a child,
 * so its CPU is not counted); for each (N, interval) a fresh watcher process (bench/scale-worker.ts)
 * polls the first N of them and reports its CPU share, memory and poll lag.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { firstJsonLine, startSimulatorFleet, startTsx } from "./child";
import type { ScaleRun, ScaleSpec } from "./scale-worker";

export interface ScalePlanItem {
  backends: number;
  intervalSeconds: number;
  warmupSeconds: number;
  measureSeconds: number;
}

export function scalePlan(quick: boolean): ScalePlanItem[] {
  if (quick) {
    return [
      { backends: 100, intervalSeconds: 5, warmupSeconds: 5, measureSeconds: 8 },
      { backends: 1000, intervalSeconds: 5, warmupSeconds: 6, measureSeconds: 10 },
      { backends: 100, intervalSeconds: 1, warmupSeconds: 3, measureSeconds: 5 },
    ];
  }
  const plan: ScalePlanItem[] = [];
  for (const intervalSeconds of [5, 1]) {
    for (const backends of [10, 100, 500, 1000]) {
      plan.push({ backends, intervalSeconds, warmupSeconds: intervalSeconds === 5 ? 11 : 4, measureSeconds: intervalSeconds === 5 ? 30 : 15 });
    }
  }
  return plan;
}

export interface ScaleResult {
  simulatorProcess: string;
  runs: Array<ScaleRun | { backends: number; intervalSeconds: number; error: string }>;
}

export async function runScaleBench(opts: { quick?: boolean; log?: (m: string) => void } = {}): Promise<ScaleResult> {
  const log = opts.log ?? (() => {});
  const plan = scalePlan(!!opts.quick);
  const most = Math.max(...plan.map((p) => p.backends));
  const { child: sim, urls } = await startSimulatorFleet(most);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-scale-spec-"));
  try {
    const runs: ScaleResult["runs"] = [];
    for (const item of plan) {
      log(`scale: ${item.backends} backends every ${item.intervalSeconds} s`);
      const spec: ScaleSpec = { urls: urls.slice(0, item.backends), intervalSeconds: item.intervalSeconds, warmupSeconds: item.warmupSeconds, measureSeconds: item.measureSeconds };
      const file = path.join(dir, `spec-${item.backends}-${item.intervalSeconds}.json`);
      fs.writeFileSync(file, JSON.stringify(spec));
      const worker = startTsx("bench/scale-worker.ts", [file]);
      try {
        runs.push(await firstJsonLine<ScaleRun>(worker, (item.warmupSeconds + item.measureSeconds + 60) * 1000, "scale worker"));
      } catch (e) {
        runs.push({ backends: item.backends, intervalSeconds: item.intervalSeconds, error: (e as Error).message.slice(0, 2000) });
      } finally {
        await worker.stop();
      }
    }
    return { simulatorProcess: `one child process serving ${most} simulated backends on 127.0.0.1 (lib/sim/cli.ts --count ${most})`, runs };
  } finally {
    await sim.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (/[\\/]bench[\\/]scale\.ts$/.test(process.argv[1] ?? "")) {
  runScaleBench({ quick: process.argv.includes("--quick"), log: (m) => console.error(m) }).then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
