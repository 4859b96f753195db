/**
 * The benchmarks: `npm run bench` (full, about 10 minutes on 2 cores) or `npm run bench -- --quick`
 * (fewer and shorter runs, under two minutes plus a `next build` when .next is missing or stale).
 * Writes bench/results.json and bench/RESULTS.md. Numbers are reported, never asserted.
 * Options: --quick, --only incident,cost,scale,storage,dashboard (storage needs incident;
 * dashboard needs storage), --render (rewrite RESULTS.md from results.json, measuring nothing).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runCostBench } from "./cost";
import { runDashboardBench } from "./dashboard";
import { runIncidentBench } from "./incident";
import { renderReport, type BenchResults } from "./report";
import { runScaleBench } from "./scale";
import { runStorageBench } from "./storage";

const SECTIONS = ["incident", "cost", "scale", "storage", "dashboard"] as const;
type Section = (typeof SECTIONS)[number];

function parseArgs(argv: string[]): { quick: boolean; only: Set<Section> } {
  const quick = argv.includes("--quick");
  const i = argv.indexOf("--only");
  if (i < 0) return { quick, only: new Set(SECTIONS) };
  const want = (argv[i + 1] ?? "").split(",").filter(Boolean);
  for (const w of want) if (!(SECTIONS as readonly string[]).includes(w)) throw new Error(`--only: unknown section "${w}" (${SECTIONS.join(", ")})`);
  return { quick, only: new Set(want as Section[]) };
}

function log(m: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}`);
}

async function section<T>(name: string, f: () => Promise<T> | T): Promise<T | { error: string }> {
  log(`${name}...`);
  const t0 = performance.now();
  try {
    const r = await f();
    log(`${name} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return r;
  } catch (e) {
    log(`${name} FAILED: ${(e as Error)?.stack ?? String(e)}`);
    return { error: (e as Error)?.message ?? String(e) };
  }
}

async function main(): Promise<void> {
  if (process.argv.includes("--render")) {
    // Rewrite RESULTS.md from the stored results.json (after a change of wording), without measuring.
    const dir = path.join(process.cwd(), "bench");
    const stored = JSON.parse(fs.readFileSync(path.join(dir, "results.json"), "utf8")) as BenchResults;
    fs.writeFileSync(path.join(dir, "RESULTS.md"), renderReport(stored));
    log("rewrote bench/RESULTS.md from bench/results.json");
    return;
  }
  const { quick, only } = parseArgs(process.argv.slice(2));
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-"));
  const started = Date.now();
  const t0 = performance.now();
  const results: BenchResults = {
    command: `npm run bench${quick ? " -- --quick" : ""}`,
    quick,
    startedAt: new Date(started).toISOString(),
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? "unknown",
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
      // Other work on the machine shares the 2 cores: the load average says how much there was.
      loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    },
  };
  try {
    const dayDb = path.join(work, "day.db");
    if (only.has("incident") || only.has("storage") || only.has("dashboard")) {
      results.incident = await section("incident replay", () => runIncidentBench({ quick, keepDayDbAs: dayDb }));
    }
    if (only.has("cost")) results.cost = await section("cost of one check", () => runCostBench({ quick }));
    if ((only.has("storage") || only.has("dashboard")) && fs.existsSync(dayDb)) {
      results.storage = await section("storage and history", () => runStorageBench({ dayDbPath: dayDb, workDir: work, quick }));
    }
    if (only.has("scale")) results.scale = await section("watcher scale", () => runScaleBench({ quick, log }));
    if (only.has("dashboard") && results.storage && !("error" in results.storage)) {
      const historyDbPath = results.storage.historyDbPath;
      results.dashboard = await section("dashboard", () => runDashboardBench({ historyDbPath, workDir: work, quick, log }));
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  results.wallSeconds = Math.round((performance.now() - t0) / 1000);
  results.machine.loadAverageAtEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
  if (results.storage && !("error" in results.storage)) results.storage.historyDbPath = "(temporary, removed)";

  const dir = path.join(process.cwd(), "bench");
  fs.writeFileSync(path.join(dir, "results.json"), JSON.stringify(results, null, 2) + "\n");
  fs.writeFileSync(path.join(dir, "RESULTS.md"), renderReport(results));
  log(`wrote bench/results.json and bench/RESULTS.md (${results.wallSeconds} s)`);
  // Keep-alive sockets and the simulators' shared timer must not hold the process open.
  process.exit(0);
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
