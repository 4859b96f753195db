/**
 * The benchmarks: `npm run bench` (full, about 10 minutes on 2 cores) or `npm run bench -- --quick`
 * (fewer and shorter runs, under two minutes plus a `next build` when .next is missing or stale).
 * Writes bench/results.json and bench/RESULTS.md. Numbers are reported, never asserted.
 * Options: --quick, --only incident,cost,peer,scale,storage,replay,dashboard,load,metrics,reads,cli,replicas (storage and replay need incident;
 * dashboard needs storage), --render (rewrite RESULTS.md from results.json, measuring nothing).
 * With --only, the sections not measured are kept from the stored results.json, and each section
 * records the run and commit it came from (results.sections), so a partial re-run never passes
 * old numbers off as new ones.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runCostBench } from "./cost";
import { runDashboardBench } from "./dashboard";
import { runIncidentBench } from "./incident";
import { cpuReferenceMs, cpuTicks, stealPercent } from "./machine";
import { runLoadBench } from "./load";
import { runPeerBench } from "./peer";
import { runMetricsScrapeBench } from "./metrics-scrape";
import { runReadCostBench } from "./read-cost";
import { runCliStartBench } from "./cli-start";
import { renderReport, SECTION_KEYS, type BenchResults, type SectionKey, type SectionRun } from "./report";
import { runScaleBench } from "./scale";
import { runStorageBench } from "./storage";
import { runReplayBench } from "./replay";
import { runReplicasBench } from "./replicas";

const SECTIONS = ["incident", "cost", "peer", "scale", "storage", "replay", "dashboard", "load", "metrics", "reads", "cli", "replicas"] as const;
type Section = (typeof SECTIONS)[number];

function parseArgs(argv: string[]): { quick: boolean; only: Set<Section>; partial: boolean } {
  const quick = argv.includes("--quick");
  const i = argv.indexOf("--only");
  if (i < 0) return { quick, only: new Set(SECTIONS), partial: false };
  const want = (argv[i + 1] ?? "").split(",").filter(Boolean);
  for (const w of want) if (!(SECTIONS as readonly string[]).includes(w)) throw new Error(`--only: unknown section "${w}" (${SECTIONS.join(", ")})`);
  return { quick, only: new Set(want as Section[]), partial: true };
}

/**
 * The commit under test, "+changes" when the measured code (not the bench's own outputs) differs
 * from it. Taken at the start and the end: other work may commit while the bench runs.
 */
function currentCommit(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "app", "components", "lib", "db", "bench", "instrumentation.ts", "next.config.ts", ":!bench/results.json", ":!bench/RESULTS.md"], {
      encoding: "utf8",
    }).trim();
    return dirty ? `${head}+changes` : head;
  } catch {
    return "unknown (no git)";
  }
}

function commitSpan(atStart: string, atEnd: string): string {
  return atStart === atEnd ? atStart : `${atStart} at the start, ${atEnd} at the end (commits landed during the run)`;
}

function log(m: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}`);
}

/** How fast the machine was just before each section measured, and the steal during it (bench/machine.ts). */
const machineOf: Partial<Record<SectionKey, { cpuReferenceMs: number; stealPercent: number | null }>> = {};

async function section<T>(key: SectionKey, name: string, f: () => Promise<T> | T): Promise<T | { error: string }> {
  const cpuReference = cpuReferenceMs();
  log(`${name}... (reference workload ${cpuReference} ms)`);
  const t0 = performance.now();
  const ticks = cpuTicks();
  try {
    const r = await f();
    log(`${name} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return r;
  } catch (e) {
    log(`${name} FAILED: ${(e as Error)?.stack ?? String(e)}`);
    return { error: (e as Error)?.message ?? String(e) };
  } finally {
    machineOf[key] = { cpuReferenceMs: cpuReference, stealPercent: stealPercent(ticks, cpuTicks()) };
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
  const { quick, only, partial } = parseArgs(process.argv.slice(2));
  const dir = path.join(process.cwd(), "bench");
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-"));
  const commitAtStart = currentCommit();
  const started = Date.now();
  const t0 = performance.now();
  const results: BenchResults = {
    command: `npm run bench${quick || partial ? " --" : ""}${quick ? " --quick" : ""}${partial ? ` --only ${[...only].join(",")}` : ""}`,
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
      results.incident = await section("incident", "incident replay", () => runIncidentBench({ quick, keepDayDbAs: dayDb }));
    } else if (only.has("replay")) {
      // Only for its database: `--only replay` keeps the stored incident figures rather than a run made as a by-product.
      await section("incident", "incident replay (for the replay record's database)", () => runIncidentBench({ quick, keepDayDbAs: dayDb }));
    }
    if (only.has("cost")) results.cost = await section("cost", "cost of one check", () => runCostBench({ quick }));
    if (only.has("peer")) results.peer = await section("peer", "stepwatch and Prometheus side by side", () => runPeerBench({ quick, log }));
    if ((only.has("storage") || only.has("dashboard")) && fs.existsSync(dayDb)) {
      results.storage = await section("storage", "storage and history", () => runStorageBench({ dayDbPath: dayDb, workDir: work, quick }));
    }
    if (only.has("replay") && fs.existsSync(dayDb)) {
      results.replay = await section("replay", "replay record and a 7-day replay", () => runReplayBench({ dayDbPath: dayDb, workDir: work, quick }));
    }
    if (only.has("scale")) results.scale = await section("scale", "watcher scale", () => runScaleBench({ quick, log }));
    if (only.has("dashboard") && results.storage && !("error" in results.storage)) {
      const historyDbPath = results.storage.historyDbPath;
      results.dashboard = await section("dashboard", "dashboard", () => runDashboardBench({ historyDbPath, workDir: work, quick, log }));
    }
    if (only.has("load")) results.load = await section("load", "load (200 clients)", () => runLoadBench({ quick, workDir: work, log }));
    if (only.has("metrics")) results.metrics = await section("metrics", "one /metrics scrape at 1000 backends", () => runMetricsScrapeBench({ quick }));
    if (only.has("reads")) results.reads = await section("reads", "what one read costs the model server", () => runReadCostBench({ quick }));
    if (only.has("cli")) results.cli = await section("cli", "the check CLI's start-up", () => runCliStartBench({ quick }));
    if (only.has("replicas")) results.replicas = await section("replicas", "one replica on SQLite against two on PostgreSQL", () => runReplicasBench({ quick, log }));
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  results.wallSeconds = Math.round((performance.now() - t0) / 1000);
  results.machine.loadAverageAtEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
  if (results.storage && !("error" in results.storage)) results.storage.historyDbPath = "(temporary, removed)";

  const thisRun: SectionRun = {
    startedAt: results.startedAt,
    command: results.command,
    commit: commitSpan(commitAtStart, currentCommit()),
    loadAverageAtStart: results.machine.loadAverageAtStart,
    loadAverageAtEnd: results.machine.loadAverageAtEnd,
  };
  results.sections = {};
  for (const k of SECTION_KEYS) if (results[k] !== undefined) results.sections[k] = { ...thisRun, ...machineOf[k] };
  if (partial) keepStoredSections(results, path.join(dir, "results.json"));
  keepNotes(results, path.join(dir, "results.json"));

  fs.writeFileSync(path.join(dir, "results.json"), JSON.stringify(results, null, 2) + "\n");
  fs.writeFileSync(path.join(dir, "RESULTS.md"), renderReport(results));
  log(`wrote bench/results.json and bench/RESULTS.md (${results.wallSeconds} s)`);
  // Keep-alive sockets and the simulators' shared timer must not hold the process open.
  process.exit(0);
}

/**
 * The hand-written analysis (results.json `notes`) and what was measured by hand elsewhere
 * (`handMeasured`) survive a re-run: the notes are about goals, and the
 * report shows it next to the new figures, with their run and commit, so a note that no longer
 * fits the numbers shows as such and is rewritten by hand.
 */
function keepNotes(results: BenchResults, file: string): void {
  if (!fs.existsSync(file)) return;
  const stored = JSON.parse(fs.readFileSync(file, "utf8")) as BenchResults;
  if (stored.notes) results.notes = stored.notes;
  if (stored.handMeasured) results.handMeasured = stored.handMeasured;
}

/** A partial run keeps the sections it did not measure from the stored results, with where they came from. */
function keepStoredSections(results: BenchResults, file: string): void {
  if (!fs.existsSync(file)) return;
  const stored = JSON.parse(fs.readFileSync(file, "utf8")) as BenchResults;
  for (const k of SECTION_KEYS) {
    if (results[k] !== undefined || stored[k] === undefined) continue;
    (results as unknown as Record<SectionKey, unknown>)[k] = stored[k];
    results.sections![k] = stored.sections?.[k] ?? { startedAt: stored.startedAt, command: stored.command, commit: "not recorded", loadAverageAtStart: stored.machine.loadAverageAtStart, loadAverageAtEnd: stored.machine.loadAverageAtEnd };
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
