/**
 * Benchmark: what one run of the check CLI costs to start (issue 30: "start-up under 150 ms and
 * RSS under 60 MB", against today's invocation, in one run). Side by side, interleaved run by run:
 * - the bundled file, `node dist/stepwatch.cjs` (built here first: `npm run build:cli`);
 * - the bundle as it was built before scripts/build-cli.ts (esbuild's defaults: not minified, all of
 *   undici's index), built here from the same sources into bench/tmp: what the minify and the lean
 *   undici (scripts/cli-undici.cjs) changed, in the same run;
 * - from the sources, `npx tsx lib/cli/check.ts` (npx, then tsx compiling TypeScript);
 * - `node -e 0`: Node itself, the floor no bundle goes below. On a loaded machine the absolute
 *   times move with the load; the ratio to this row, in the same run, is the figure that carries.
 * Each twice: `check --help` (start-up alone) and a check of a closed port with `--wait 0` (start-up
 * plus two refused reads: the whole code path, exit 2). And the bundle once more, checking a busy
 * vLLM (the simulator, two long requests decoding) with the default `--wait 30`: the issue's "a busy
 * vLLM answered in under 3 s", at the first proof of progress instead of after the whole wait. Each run under /usr/bin/time: wall time
 * (timed here around it), user + system CPU of the whole process tree, and the peak RSS of the
 * largest process in it (getrusage's ru_maxrss of the waited-for children: npx and tsx are
 * several node processes, so the tree's total is higher than that figure for them; the bundle is
 * one process).
 *
 * `npx tsx bench/cli-start.ts [--quick]` prints the result as JSON; `npm run bench -- --only cli`
 * puts it in bench/results.json and RESULTS.md.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { buildSync } from "esbuild";
import fs from "node:fs";
import path from "node:path";
import { freePort } from "../sim/free-port";
import { startSimulatorFleet } from "./child";
import { summarize, type Summary } from "./stats";
import { runWhenMain } from "./main";

export interface CliStartRow {
  what: string;
  command: string;
  runs: number;
  exitCode: number | null;
  wallMs: Summary;
  cpuMs: Summary;
  /** Peak RSS of the largest process of the run, MB. */
  maxRssMb: Summary;
}

export interface CliStartResult {
  runs: number;
  bundleBytes: number;
  /** The bundle built as before scripts/build-cli.ts (not minified, undici's whole index). */
  beforeBytes?: number;
  rows: CliStartRow[];
}

function once(argv: string[]): { wallMs: number; cpuMs: number; rssMb: number; code: number | null } {
  const t0 = performance.now();
  // %e is too coarse (10 ms): wall time is taken here; /usr/bin/time gives the tree's CPU and peak RSS.
  const r = spawnSync("/usr/bin/time", ["-f", "SWTIME %U %S %M", ...argv], { encoding: "utf8", timeout: 60_000 });
  const wallMs = performance.now() - t0;
  const m = /SWTIME (\S+) (\S+) (\d+)/.exec(r.stderr ?? "");
  if (!m) throw new Error(`${argv.join(" ")}: no /usr/bin/time figures: ${r.stderr}`);
  // /usr/bin/time reports the command's own exit code as its own.
  return { wallMs, cpuMs: (Number(m[1]) + Number(m[2])) * 1000, rssMb: Number(m[3]) / 1024, code: r.status };
}

export async function runCliStartBench(opts: { quick: boolean }): Promise<CliStartResult> {
  const runs = opts.quick ? 5 : 10;
  // Measure the bundle of these sources, not a stale one.
  execFileSync("npm", ["run", "--silent", "build:cli"], { stdio: "inherit" });
  const bundle = path.resolve("dist/stepwatch.cjs");
  const before = path.resolve("bench/tmp/stepwatch-before.cjs");
  buildSync({ entryPoints: ["lib/cli/check.ts"], outfile: before, bundle: true, platform: "node", target: "node20", format: "cjs", logLevel: "warning" });
  const closed = `http://127.0.0.1:${await freePort()}`; // nothing listens: refused, twice
  // Busy for the whole run: two requests that outlast it, decoding before the first check. A process
  // of its own: the runs below are spawnSync, which holds this event loop.
  const { child: busy, urls } = await startSimulatorFleet(1, 60_000);
  try {
    const post = await fetch(`${urls[0]}/_sim/load`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ requests: 2, promptTokens: 100, maxTokens: 10_000_000 }) });
    if (!post.ok) throw new Error(`the busy simulator refused its load: HTTP ${post.status}`);
    for (let i = 0; i < 100; i++) {
      const st = (await (await fetch(`${urls[0]}/_sim/state`)).json()) as { running: number; counters: { steps: number } };
      if (st.running === 2 && st.counters.steps > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    return measureVariants(runs, bundle, before, closed, urls[0]);
  } finally {
    await busy.stop();
  }
}

function measureVariants(runs: number, bundle: string, before: string, closed: string, busyUrl: string): CliStartResult {
  const variants: Array<{ what: string; argv: string[] }> = [
    // The floor: Node itself starting and exiting, which no bundle can go below.
    { what: "node alone (floor): node -e 0", argv: [process.execPath, "-e", "0"] },
    { what: "bundle, --help", argv: [process.execPath, bundle, "check", "--help"] },
    { what: "bundle as built before (not minified, all of undici), --help", argv: [process.execPath, before, "check", "--help"] },
    { what: "npx tsx (today), --help", argv: ["npx", "tsx", "lib/cli/check.ts", "--help"] },
    { what: "bundle, closed port (--wait 0)", argv: [process.execPath, bundle, "check", closed, "--wait", "0", "--json"] },
    { what: "npx tsx (today), closed port (--wait 0)", argv: ["npx", "tsx", "lib/cli/check.ts", closed, "--wait", "0", "--json"] },
    // The default --wait (30 s): answered busy at the first proof of progress (exit 0).
    { what: "bundle, busy vLLM (default --wait 30)", argv: [process.execPath, bundle, "check", busyUrl, "--json"] },
  ];
  // One warm-up of each (the page cache, npx's lookup), not counted.
  for (const v of variants) once(v.argv);
  const samples = variants.map(() => [] as Array<ReturnType<typeof once>>);
  // Interleaved: a change in the machine's load between runs hits every variant alike.
  for (let i = 0; i < runs; i++) variants.forEach((v, j) => samples[j].push(once(v.argv)));
  return {
    runs,
    bundleBytes: fs.statSync(bundle).size,
    beforeBytes: fs.statSync(before).size,
    rows: variants.map((v, j) => ({
      what: v.what,
      command: v.argv.map((a) => (a === process.execPath ? "node" : a === bundle ? "dist/stepwatch.cjs" : a === before ? "bench/tmp/stepwatch-before.cjs" : a)).join(" "),
      runs,
      exitCode: samples[j].at(-1)!.code,
      wallMs: summarize(samples[j].map((s) => s.wallMs)),
      cpuMs: summarize(samples[j].map((s) => s.cpuMs)),
      maxRssMb: summarize(samples[j].map((s) => s.rssMb)),
    })),
  };
}

const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d }) : "n/a");

export function cliStartSection(r: CliStartResult, measured = ""): string {
  const node = r.rows.find((x) => x.what.startsWith("node alone"));
  const times = (a: number, b: number | undefined) => (b ? `${f(a / b, 1)}x` : "-");
  const rows = r.rows.map(
    (x) =>
      `| ${x.what} | \`${x.command}\` | ${x.exitCode} | ${f(x.wallMs.p50)} ms (p90 ${f(x.wallMs.p90)}) | ${times(x.wallMs.p50, node?.wallMs.p50)} | ${f(x.cpuMs.p50)} ms | ${times(x.cpuMs.p50, node?.cpuMs.p50)} | ${f(x.maxRssMb.p50, 1)} MB | ${node ? `${x.maxRssMb.p50 >= node.maxRssMb.p50 ? "+" : ""}${f(x.maxRssMb.p50 - node.maxRssMb.p50, 1)} MB` : "-"} |`,
  );
  return `## 8. The check CLI's start-up

${measured}

Each command ${r.runs} times, interleaved, after one warm-up (\`bench/cli-start.ts\`): the bundled CLI
(\`dist/stepwatch.cjs\`, ${f(r.bundleBytes / 1024)} KB, built by \`npm run build:cli\` first: minified, undici's Agent
and Client without the rest of undici nor its HTTP/2 half; \`replay\`/\`advise\` and the config's zod in a second file they alone load) against the same sources bundled as before${r.beforeBytes ? ` (${f(r.beforeBytes / 1024)} KB)` : ""} and today's
invocation from the sources, with Node alone (\`node -e 0\`) as the floor: "x node" is each median over that row's, in the same run,
the figure that carries across a loaded machine (the absolute ms move with the load: see the machine line above). \`--help\` is start-up alone; a closed port with \`--wait 0\` is start-up plus the
whole check (two refused reads, \`down\`, exit 2); a busy vLLM (the simulator with two requests decoding) with the default
\`--wait 30\` is the whole check answering \`busy\` (exit 0) at its first proof of progress. Wall time is timed around \`/usr/bin/time\`; CPU is user +
system of the whole process tree; RSS is the peak of the largest process (\`npx tsx\` runs several node
processes, so its tree holds more than that; the bundle is one process). Medians.

| run | command | exit | wall | x node | CPU | x node | peak RSS | over node |
|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}
`;
}

runWhenMain(__filename, () => runCliStartBench({ quick: process.argv.includes("--quick") }));
