/**
 * Child processes of the benchmarks (the simulator fleet, the watcher under test, next start):
 * started directly with node (no npx wrapper, so the pid is the process itself and its CPU is its
 * own), stopped by pid with a deadline, never by name.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { buildSync } from "esbuild";
import fs from "node:fs";
import path from "node:path";

export interface Child {
  proc: ChildProcess;
  /** stderr and stdout seen so far (bounded), for error messages. */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  exited: Promise<number | null>;
}

const OUTPUT_LIMIT = 64 * 1024;

export function startChild(command: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Child {
  const proc = spawn(command, args, { cwd: opts.cwd ?? process.cwd(), env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const keep = (b: Buffer) => {
    out += b.toString("utf8");
    if (out.length > OUTPUT_LIMIT) out = out.slice(-OUTPUT_LIMIT);
  };
  proc.stdout!.on("data", keep);
  proc.stderr!.on("data", keep);
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  return {
    proc,
    output: () => out,
    exited,
    async stop(graceMs = 5000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      const timer = new Promise<"late">((r) => setTimeout(() => r("late"), graceMs).unref());
      if ((await Promise.race([exited, timer])) === "late") {
        proc.kill("SIGKILL");
        await exited;
      }
    },
  };
}

/** Resolves with the first stdout line that parses as JSON; rejects on exit or after `timeoutMs`. */
export function firstJsonLine<T>(child: Child, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let buf = "";
    const done = (f: () => void) => {
      clearTimeout(timer);
      child.proc.stdout!.off("data", onData);
      f();
    };
    const onData = (b: Buffer) => {
      buf += b.toString("utf8");
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith("{")) continue;
        try {
          const json = JSON.parse(line) as T;
          return done(() => resolve(json));
        } catch {
          // not our line; keep reading
        }
      }
    };
    const timer = setTimeout(() => done(() => reject(new Error(`${what}: no JSON line within ${timeoutMs} ms; output:\n${child.output()}`))), timeoutMs);
    child.proc.stdout!.on("data", onData);
    void child.exited.then((code) => done(() => reject(new Error(`${what} exited (${code}) before it was ready; output:\n${child.output()}`))));
  });
}

const bundles = new Map<string, string>();

/**
 * `node [nodeFlags] <script bundled> ...args`: the script and everything it imports compiled to one
 * plain JavaScript file first (esbuild, into bench/tmp/, once per benchmark run), as the product
 * runs (next build compiles the watcher into the server). Under tsx the process carries the
 * TypeScript loader: ~47 MB more RSS here and a loader thread, which are not the watcher's.
 */
export function startBundled(script: string, args: string[], nodeFlags: string[] = []): Child {
  return startChild(process.execPath, [...nodeFlags, bundled(script), ...args]);
}

/**
 * `script` and what it imports as one JavaScript file in bench/tmp/ (built once per benchmark
 * run), its absolute path: for startBundled, and for a worker thread's script (bench/scale.ts's
 * read threads, run as next build runs lib/watcher/read-worker.ts: compiled).
 */
export function bundled(script: string): string {
  let out = bundles.get(script);
  if (!out) {
    out = path.resolve("bench", "tmp", `${path.basename(script, path.extname(script))}.bundle.cjs`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    // better-sqlite3 is a native module: loaded from node_modules, as next does (serverExternalPackages).
    // import.meta.url: only lib/watcher/read-pool.ts's own thread script uses it, which a bundle
    // replaces with its own (WatcherOptions.spawnReadThread); CommonJS has no import.meta.
    buildSync({ entryPoints: [script], outfile: out, bundle: true, platform: "node", format: "cjs", target: "node20", external: ["better-sqlite3", "pg-native"], define: { "import.meta.url": "undefined" }, logLevel: "warning" });
    bundles.set(script, out);
  }
  return out;
}

/** `node [nodeFlags] --import tsx <script> ...args`: TypeScript without the npx/tsx wrapper processes. */
export function startTsx(script: string, args: string[], nodeFlags: string[] = []): Child {
  return startChild(process.execPath, [...nodeFlags, "--import", "tsx", script, ...args]);
}

/**
 * One simulator child process serving `count` simulated vLLM servers, each on its own 127.0.0.1 port.
 * Bundled by default (startBundled), like the watcher worker: under tsx the loader costs the fleet
 * CPU and memory on the cores the watcher is measured on. `bundled: false` runs it under tsx;
 * `script` another copy of sim/cli.ts (bench/sim-cost.ts compares one commit's with another's).
 */
export async function startSimulatorFleet(
  count: number,
  readyTimeoutMs = 120_000,
  extraArgs: string[] = [],
  opts: { bundled?: boolean; nodeFlags?: string[]; script?: string } = {},
): Promise<{ child: Child; urls: string[] }> {
  const args = ["--count", String(count), ...extraArgs];
  const nodeFlags = opts.nodeFlags ?? [];
  const script = opts.script ?? "sim/cli.ts";
  const child = opts.bundled === false ? startTsx(script, args, nodeFlags) : startBundled(script, args, nodeFlags);
  try {
    const ready = await firstJsonLine<{ simulators: Array<{ url: string }> }>(child, readyTimeoutMs, "simulator fleet");
    return { child, urls: ready.simulators.map((s) => s.url) };
  } catch (e) {
    await child.stop();
    throw e;
  }
}

/**
 * CPU seconds (user + system) used so far by `pid` and every process below it, from /proc (Linux;
 * null elsewhere). A whole tree, in case next start ever runs its server in a child.
 */
export function cpuSecondsOfTree(pid: number | undefined): number | null {
  if (!pid || !fs.existsSync("/proc")) return null;
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const s = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      // Fields after the parenthesised command name (which may hold spaces): state ppid ... utime(14) stime(15).
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      stats.set(Number(e), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // the process exited while we looked
    }
  }
  if (!stats.has(pid)) return null;
  let ticks = 0;
  const todo = [pid];
  const seen = new Set<number>();
  while (todo.length) {
    const p = todo.pop()!;
    if (seen.has(p)) continue;
    seen.add(p);
    ticks += stats.get(p)?.ticks ?? 0;
    for (const [q, st] of stats) if (st.ppid === p) todo.push(q);
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ: 100 on every Linux the project runs on (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_SECOND = 100;
