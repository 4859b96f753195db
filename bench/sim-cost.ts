/**
 * What the simulated fleet itself costs per /metrics answer: one simulator child process (as the
 * benchmarks start it, bench/child.ts startSimulatorFleet) serving N backends, each scraped every
 * `interval` seconds over keep-alive (undici, one connection per backend), and the CPU of the
 * simulator's process tree (/proc) over the window divided by the answers it gave. The scraper
 * runs in this process, so its CPU is not counted. Not part of `npm run bench`: it measures the
 * benchmarks' own infrastructure (the fleet shares the machine's cores with the watcher measured).
 *
 *   npx tsx bench/sim-cost.ts [--backends 1000] [--interval 5] [--seconds 30] [--warmup 6] [--tsx]
 *     [--keep-alive 15] [--load 0.25] [--cpu-prof DIR] [--cli OTHER/sim/cli.ts]
 * --cli: the simulator of another checkout (a worktree of an older commit), for a before/after.
 * --load F: a share F of the backends gets background requests (the bench fleet is idle otherwise).
 */
import fs from "node:fs";
import { Agent, request } from "undici";
import { cpuSecondsOfTree, startSimulatorFleet } from "./child";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
function argText(name: string): string | null {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? null) : null;
}

async function main(): Promise<void> {
  const backends = arg("backends", 1000);
  const interval = arg("interval", 5);
  const seconds = arg("seconds", 30);
  const warmup = arg("warmup", 6);
  const keepAlive = arg("keep-alive", 15);
  const loadShare = arg("load", 0);
  const tsx = process.argv.includes("--tsx");
  const prof = argText("cpu-prof");
  const { child, urls } = await startSimulatorFleet(backends, 180_000, ["--http-keep-alive-seconds", String(keepAlive)], {
    bundled: !tsx,
    nodeFlags: prof ? ["--cpu-prof", "--cpu-prof-dir", prof] : [],
    ...(argText("cli") && { script: argText("cli")! }),
  });
  const agent = new Agent({ connections: 1, keepAliveTimeout: keepAlive * 1000 - 1000, keepAliveMaxTimeout: keepAlive * 1000 - 1000 });
  let answers = 0;
  let bytes = 0;
  let failed = 0;
  let counting = false;
  const scrape = async (url: string) => {
    try {
      const res = await request(`${url}/metrics`, { dispatcher: agent });
      const body = await res.body.text();
      if (counting) {
        if (res.statusCode === 200) answers++;
        else failed++;
        bytes += body.length;
      }
    } catch {
      if (counting) failed++;
    }
  };
  try {
    const loaded = Math.round(backends * loadShare);
    for (let i = 0; i < loaded; i++) {
      // Background work inside the engines (not over HTTP): long requests, so engines step all along.
      const r = await request(`${urls[i]}/_sim/load`, { method: "POST", body: JSON.stringify({ requests: 6, promptTokens: 800, maxTokens: 100000 }), headers: { "content-type": "application/json" }, dispatcher: agent });
      await r.body.text();
    }
    // Each backend read once per interval, the reads spread evenly over it (as the watcher does).
    const gap = (interval * 1000) / urls.length;
    const t0 = performance.now();
    let next = 0;
    const timer = setInterval(() => {
      const due = Math.floor((performance.now() - t0) / gap);
      for (; next <= due; next++) void scrape(urls[next % urls.length]);
    }, 10);
    await new Promise((r) => setTimeout(r, warmup * 1000));
    const cpu0 = cpuSecondsOfTree(child.proc.pid)!;
    const w0 = performance.now();
    counting = true;
    await new Promise((r) => setTimeout(r, seconds * 1000));
    counting = false;
    const cpu1 = cpuSecondsOfTree(child.proc.pid)!;
    const wall = (performance.now() - w0) / 1000;
    clearInterval(timer);
    const cpu = cpu1 - cpu0;
    const rss = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.proc.pid}/status`, "utf8"));
    const cores = cpu / wall;
    const out = {
      simulator: `${argText("cli") ?? "sim/cli.ts"} ${tsx ? "tsx" : "bundled"}`,
      backends,
      intervalSeconds: interval,
      loadedBackends: loaded,
      wallSeconds: Math.round(wall * 10) / 10,
      answers,
      failed,
      meanBodyBytes: answers ? Math.round(bytes / (answers + failed)) : 0,
      cpuSeconds: Math.round(cpu * 100) / 100,
      rssMb: rss ? Math.round(Number(rss[1]) / 1024) : null,
      cores: Math.round(cores * 1000) / 1000,
      msPerAnswer: answers ? Math.round(((cpu * 1000) / answers) * 1000) / 1000 : null,
      coresPer1000At5s: answers ? Math.round(((cpu / answers) * 200) * 1000) / 1000 : null,
      cores5000At5s: answers ? Math.round(((cpu / answers) * 1000) * 1000) / 1000 : null,
    };
    console.log(JSON.stringify(out));
  } finally {
    await agent.close().catch(() => undefined);
    await child.stop(prof ? 20_000 : 5000);
  }
}

void main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
