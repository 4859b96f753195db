/**
 * The real prometheus_client serving a registry shaped like vLLM's (tests/support/prom-vllm.py), for
 * the filtered read's tests and the bench: Debian's python3-prometheus-client (`.ci/run` installs it
 * when missing), found at STEPWATCH_PYTHON or /usr/bin/python3 (not a pyenv shim without the package).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export const VLLM_FIXTURE = path.join(__dirname, "../fixtures/real-metrics/vllm-0.29.0-inferstack.prom");

export interface PathStats {
  requests: number;
  bytes: number;
  /** The most name[] values one request asked. */
  names: number;
  /** Requests that asked for a histogram's `_bucket` samples (vLLM's latency histograms). */
  withBuckets: number;
}

export interface PromVllm {
  url: string;
  pid: number;
  /** What the server sent per path, and its own CPU time (seconds), from its GET /stats. */
  stats(): Promise<{ paths: Record<string, PathStats | undefined>; cpuSeconds: number }>;
  close(): Promise<void>;
}

export async function startPromVllm(mode: "single" | "multi", fixture = VLLM_FIXTURE): Promise<PromVllm> {
  const python = process.env.STEPWATCH_PYTHON ?? "/usr/bin/python3";
  const dir = mode === "multi" ? mkdtempSync(path.join(tmpdir(), "prom-multiproc-")) : null;
  const child: ChildProcess = spawn(python, [path.join(__dirname, "prom-vllm.py"), fixture, mode, ...(dir ? [dir] : [])], { stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`prom-vllm.py did not print its port within 15 s: ${err}`)), 15_000);
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n");
      if (line.length > 1) {
        clearTimeout(timer);
        resolve(Number(line[0]));
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`prom-vllm.py exited (${code}) before listening: ${err}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    pid: child.pid!,
    async stats() {
      const res = await fetch(`${url}/stats`, { signal: AbortSignal.timeout(5000) });
      return (await res.json()) as { paths: Record<string, PathStats | undefined>; cpuSeconds: number };
    },
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      }
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
