/**
 * Starts the real, built app (`next start`, needs a prior `next build`) on a free port with a temp
 * config and DB, in its own process group so the whole tree is killed afterwards.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export { freePort } from "../../sim/free-port";
import { freePort } from "../../sim/free-port";

const ROOT = path.resolve(__dirname, "../..");
// Run Next's CLI with this node directly, so the pid is the server itself (no npm/npx wrapper).
const NEXT_CLI = require.resolve("next/dist/bin/next", { paths: [ROOT] });


export function assertBuilt(): void {
  if (!fs.existsSync(path.join(ROOT, ".next", "BUILD_ID"))) {
    throw new Error("no production build in .next: run `npx next build` first (the README's test command does)");
  }
}

export interface RunningApp {
  url: string;
  port: number;
  proc: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process ended. */
  exited: Promise<number | string>;
  stop(): Promise<void>;
}

export async function spawnApp(env: Record<string, string>, port?: number): Promise<RunningApp> {
  const p = port ?? (await freePort());
  const proc = spawn(process.execPath, [NEXT_CLI, "start", "-p", String(p), "-H", "127.0.0.1"], {
    cwd: ROOT,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", NODE_ENV: "production", ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  proc.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | string>((resolve) => proc.once("exit", (code, sig) => resolve(code ?? sig ?? "unknown")));
  let done = false;
  void exited.then(() => (done = true));
  return {
    url: `http://127.0.0.1:${p}`,
    port: p,
    proc,
    output: () => out,
    exited,
    async stop() {
      if (done || proc.pid === undefined) return;
      try {
        process.kill(-proc.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      const killer = setTimeout(() => {
        try {
          process.kill(-proc.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }, 5000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** GET JSON from the app; null while it does not answer yet. */
export async function getJson<T = unknown>(url: string): Promise<{ status: number; body: T } | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  } catch {
    return null;
  }
}

/** Polls until `check` gives a truthy value (returned), or fails naming what was awaited. */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 20_000, intervalMs = 200): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
