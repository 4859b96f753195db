/**
 * Benchmark: stepwatch's watcher side by side with the peer an operator would run instead,
 * Debian's Prometheus (/usr/bin/prometheus), in ONE run: both read the SAME simulated fleet (one
 * simulator child process) at the same interval, at the same time, and the CPU of each process tree
 * is read from /proc over the SAME window. The machine is shared (2 cores, other work compiling):
 * whatever noise there is, both peers see it at once, so the ratio is the figure to read, not
 * either number alone.
 *
 * - watcher: bench/scale-worker.ts (the real startWatcher, observe, a temp SQLite file). It
 *   announces its measured window on stdout; the window's two ends are where both trees' CPU and
 *   Prometheus's scrape count are read.
 * - Prometheus: a static scrape config of the same N targets, scrape_interval = the watcher's
 *   interval, a temp TSDB. Scrapes are counted by Prometheus itself
 *   (prometheus_target_interval_length_seconds_count, one per scrape after a target's first).
 *
 * CPU per read = watcher tree CPU / reads started in the window; CPU per scrape = Prometheus tree
 * CPU / scrapes in the window. The simulator's CPU is reported, not counted for either.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { parsePrometheus } from "../lib/metrics/prometheus";
import { httpRequest } from "../lib/net/http";
import { freePort } from "../sim/free-port";
import { bundled, cpuSecondsOfTree, firstJsonLine, startBundled, startChild, startSimulatorFleet, type Child } from "./child";
import { rssMbOf } from "./dashboard";
import type { ScaleRun, ScaleSpec } from "./scale-worker";
import { round } from "./stats";
import { runWhenMain } from "./main";

export const PROMETHEUS_BIN = "/usr/bin/prometheus";

export interface PeerPlanItem {
  backends: number;
  intervalSeconds: number;
  /** The simulator's idle keep-alive (uvicorn's --timeout-keep-alive; vLLM: VLLM_HTTP_TIMEOUT_KEEP_ALIVE). */
  keepAliveSeconds: number;
  warmupSeconds: number;
  measureSeconds: number;
}

export function peerPlan(quick: boolean): PeerPlanItem[] {
  const w = quick ? { warmupSeconds: 12, measureSeconds: 15 } : { warmupSeconds: 15, measureSeconds: 30 };
  return [
    { backends: 1000, intervalSeconds: 5, keepAliveSeconds: 5, ...w },
    { backends: 1000, intervalSeconds: 5, keepAliveSeconds: 15, ...w },
  ];
}

export interface PeerSide {
  cpuSeconds: number;
  /** Reads (watcher) or scrapes (Prometheus) in the window. */
  operations: number;
  cpuMsPerOperation: number;
  cpuCores: number;
  rssMb: number | null;
}

export interface PeerRun {
  backends: number;
  intervalSeconds: number;
  keepAliveSeconds: number;
  windowSeconds: number;
  watcher: PeerSide & {
    failedReads: number;
    failedOutcomes: ScaleRun["failedOutcomes"];
    pollLagMsP99: number;
    states: Record<string, number>;
    selfCpuCores: number;
    /** TCP connections opened and requests that failed on one (a stale keep-alive connection, asked again). */
    connectionsOpened?: number;
    requestErrors?: number;
  };
  prometheus: PeerSide & {
    version: string;
    targetsUp: number | null;
    /** Prometheus's own scrape-interval summary: how far its scrapes drift from the interval. */
    intervalP99Seconds: number | null;
    headSeries: number | null;
  };
  simulatorCpuCores: number | null;
  /** watcher CPU per read / Prometheus CPU per scrape: at most 1 is the goal. */
  ratio: number;
  loadAverage: { start: number[]; end: number[] };
}

export interface PeerResult {
  prometheusVersion: string;
  runs: Array<PeerRun | (PeerPlanItem & { error: string })>;
}

function prometheusVersion(): string {
  try {
    const out = execFileSync(PROMETHEUS_BIN, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return /version (\S+)/.exec(out)?.[1] ?? "unknown";
  } catch (e) {
    throw new Error(`${PROMETHEUS_BIN} is needed for the peer benchmark (apt-get install prometheus): ${(e as Error).message}`);
  }
}

function prometheusConfig(targets: string[], intervalSeconds: number): string {
  // JSON is YAML: no YAML library needed to write the config.
  return JSON.stringify({
    global: { scrape_interval: `${intervalSeconds}s`, scrape_timeout: `${intervalSeconds}s` },
    scrape_configs: [{ job_name: "stepwatch-sim", metrics_path: "/metrics", static_configs: [{ targets: targets.map((u) => new URL(u).host) }] }],
  });
}

async function promSelf(base: string): Promise<{ scrapes: number; intervalP99: number | null; headSeries: number | null }> {
  const res = await httpRequest(`${base}/metrics`, { timeoutMs: 10_000, maxBytes: 16 << 20 });
  if (res.outcome !== "ok") throw new Error(`Prometheus /metrics: ${res.error ?? res.outcome}`);
  const p = parsePrometheus(res.body);
  let scrapes = 0;
  let intervalP99: number | null = null;
  let headSeries: number | null = null;
  for (const s of p.samples) {
    if (s.name === "prometheus_target_interval_length_seconds_count") scrapes += s.value;
    else if (s.name === "prometheus_target_interval_length_seconds" && s.labels.quantile === "0.99") intervalP99 = s.value;
    else if (s.name === "prometheus_tsdb_head_series") headSeries = s.value;
  }
  return { scrapes, intervalP99, headSeries };
}

async function targetsUp(base: string): Promise<number | null> {
  const res = await httpRequest(`${base}/api/v1/query?query=${encodeURIComponent("sum(up)")}`, { timeoutMs: 10_000, maxBytes: 1 << 20 });
  if (res.outcome !== "ok") return null;
  try {
    const j = JSON.parse(res.body) as { data?: { result?: Array<{ value?: [number, string] }> } };
    const v = j.data?.result?.[0]?.value?.[1];
    return v === undefined ? null : Number(v);
  } catch {
    return null;
  }
}

async function waitReady(base: string, prom: Child, deadlineMs: number): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (prom.proc.exitCode !== null) throw new Error(`prometheus exited (${prom.proc.exitCode}):\n${prom.output()}`);
    const r = await httpRequest(`${base}/-/ready`, { timeoutMs: 1000, maxBytes: 4096 });
    if (r.outcome === "ok") return;
    await delay(200);
  }
  throw new Error(`prometheus not ready within ${deadlineMs} ms:\n${prom.output()}`);
}

async function onePeerRun(item: PeerPlanItem, urls: string[], simPid: number | undefined, dir: string, version: string): Promise<PeerRun> {
  const targets = urls.slice(0, item.backends);
  const cfg = path.join(dir, `prometheus-${item.backends}-${item.keepAliveSeconds}.yml`);
  fs.writeFileSync(cfg, prometheusConfig(targets, item.intervalSeconds));
  const tsdb = fs.mkdtempSync(path.join(dir, "tsdb-"));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const prom = startChild(PROMETHEUS_BIN, [
    `--config.file=${cfg}`,
    `--storage.tsdb.path=${tsdb}`,
    `--web.listen-address=127.0.0.1:${port}`,
    "--log.level=warn",
  ]);
  let worker: Child | null = null;
  try {
    await waitReady(base, prom, 30_000);
    const spec: ScaleSpec = { urls: targets, intervalSeconds: item.intervalSeconds, warmupSeconds: item.warmupSeconds, measureSeconds: item.measureSeconds, announceWindow: true, readWorkerEntry: bundled("lib/watcher/read-worker.ts") };
    const specFile = path.join(dir, `peer-spec-${item.backends}-${item.keepAliveSeconds}.json`);
    fs.writeFileSync(specFile, JSON.stringify(spec));
    worker = startBundled("bench/scale-worker.ts", [specFile]);
    const limit = (item.warmupSeconds + item.measureSeconds + 60) * 1000;
    await firstJsonLine<{ window: string }>(worker, limit, "peer watcher (window start)");
    // Both ends of the window: the same instants for both peers (the reads of /proc take a few ms).
    const load0 = os.loadavg();
    const t0 = performance.now();
    const w0 = cpuSecondsOfTree(worker.proc.pid);
    const p0 = cpuSecondsOfTree(prom.proc.pid);
    const s0 = cpuSecondsOfTree(simPid);
    const self0 = await promSelf(base);
    const run = await firstJsonLine<ScaleRun>(worker, limit, "peer watcher (result)");
    const w1 = cpuSecondsOfTree(worker.proc.pid);
    const p1 = cpuSecondsOfTree(prom.proc.pid);
    const s1 = cpuSecondsOfTree(simPid);
    const wall = (performance.now() - t0) / 1000;
    const self1 = await promSelf(base);
    const up = await targetsUp(base);
    const promRss = rssMbOf(prom.proc.pid);
    if (w0 === null || w1 === null || p0 === null || p1 === null) throw new Error("no /proc: the peer benchmark needs Linux");
    const wCpu = w1 - w0;
    const pCpu = p1 - p0;
    const scrapes = self1.scrapes - self0.scrapes;
    const wPer = (wCpu * 1000) / Math.max(1, run.reads);
    const pPer = (pCpu * 1000) / Math.max(1, scrapes);
    return {
      backends: item.backends,
      intervalSeconds: item.intervalSeconds,
      keepAliveSeconds: item.keepAliveSeconds,
      windowSeconds: round(wall, 1),
      watcher: {
        cpuSeconds: round(wCpu, 2),
        operations: run.reads,
        cpuMsPerOperation: round(wPer, 3),
        cpuCores: round(wCpu / wall, 3),
        rssMb: run.rssMb.max,
        failedReads: run.failedReads,
        failedOutcomes: run.failedOutcomes,
        connectionsOpened: run.connectionsOpened,
        requestErrors: run.requestErrors,
        pollLagMsP99: run.pollLagMs.p99,
        states: run.states,
        selfCpuCores: run.cpuCores,
      },
      prometheus: {
        version,
        cpuSeconds: round(pCpu, 2),
        operations: scrapes,
        cpuMsPerOperation: round(pPer, 3),
        cpuCores: round(pCpu / wall, 3),
        rssMb: promRss,
        targetsUp: up,
        intervalP99Seconds: self1.intervalP99 === null ? null : round(self1.intervalP99, 3),
        headSeries: self1.headSeries,
      },
      simulatorCpuCores: s0 === null || s1 === null ? null : round((s1 - s0) / wall, 3),
      ratio: round(wPer / pPer, 3),
      loadAverage: { start: load0.map((x) => round(x, 2)), end: os.loadavg().map((x) => round(x, 2)) },
    };
  } finally {
    await worker?.stop();
    await prom.stop(10_000);
    fs.rmSync(tsdb, { recursive: true, force: true });
  }
}

export async function runPeerBench(opts: { quick?: boolean; log?: (m: string) => void; plan?: PeerPlanItem[] } = {}): Promise<PeerResult> {
  const log = opts.log ?? (() => {});
  const version = prometheusVersion();
  const plan = opts.plan ?? peerPlan(!!opts.quick);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-peer-"));
  const runs: PeerResult["runs"] = [];
  try {
    // One simulator fleet per keep-alive setting (it is a listen option of each server).
    for (const keepAliveSeconds of [...new Set(plan.map((p) => p.keepAliveSeconds))]) {
      const items = plan.filter((p) => p.keepAliveSeconds === keepAliveSeconds);
      const most = Math.max(...items.map((p) => p.backends));
      const { child: sim, urls } = await startSimulatorFleet(most, 120_000, ["--http-keep-alive-seconds", String(keepAliveSeconds)]);
      try {
        for (const item of items) {
          log(`peer: ${item.backends} backends every ${item.intervalSeconds} s, server keep-alive ${keepAliveSeconds} s: watcher and Prometheus side by side`);
          try {
            runs.push(await onePeerRun(item, urls, sim.proc.pid, dir, version));
          } catch (e) {
            runs.push({ ...item, error: (e as Error).message.slice(0, 2000) });
          }
        }
      } finally {
        await sim.stop();
      }
    }
    return { prometheusVersion: version, runs };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

runWhenMain(__filename, () => {
  const quick = process.argv.includes("--quick");
  const only = process.argv.find((a) => a.startsWith("--keep-alive="));
  const plan = peerPlan(quick).filter((p) => !only || p.keepAliveSeconds === Number(only.split("=")[1]));
  return runPeerBench({ quick, plan, log: (m) => console.error(m) });
});
