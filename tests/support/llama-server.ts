/**
 * The real llama.cpp server for the real-engine suite (tests/integration/real-llamacpp.test.ts):
 * its path comes from STEPWATCH_LLAMA_SERVER (.ci/run sets it; CONTRIBUTING says how to get one),
 * and a missing one fails the suite loudly instead of skipping it. Plus a counting proxy, so a
 * test can say exactly what stepwatch sent to the engine.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { call, waitFor } from "../integration/sim-support";
import { freePort } from "../../sim/free-port";

export function llamaServerPath(): string {
  const bin = process.env.STEPWATCH_LLAMA_SERVER;
  if (!bin) {
    throw new Error(
      "STEPWATCH_LLAMA_SERVER is not set: the real-engine suite needs llama.cpp's llama-server " +
        "(.ci/run sets it to ../shared/engines/llama.cpp/llama-server; CONTRIBUTING.md says how to build one)",
    );
  }
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    throw new Error(`STEPWATCH_LLAMA_SERVER=${bin} is not an executable file: the real-engine suite needs llama.cpp's llama-server`);
  }
  const model = path.join(path.dirname(bin), "tiny-random-llama.gguf");
  if (!existsSync(model)) throw new Error(`${model} is missing: the real-engine suite needs the tiny model next to llama-server`);
  return bin;
}

export interface LlamaServer {
  url: string;
  port: number;
  pid: number;
  log(): string;
  exited: Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Starts llama-server on 127.0.0.1 (a free port unless given) and waits for /health 200 (or 401 with a key). */
export async function startLlama(extra: string[] = [], opts: { port?: number; metrics?: boolean } = {}): Promise<LlamaServer> {
  const bin = llamaServerPath();
  const port = opts.port ?? (await freePort());
  const model = path.join(path.dirname(bin), "tiny-random-llama.gguf");
  const args = ["-m", model, "--host", "127.0.0.1", "--port", String(port), ...(opts.metrics === false ? [] : ["--metrics"]), "-np", "2", "-c", "8192", "-t", "1", ...extra];
  const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => {
    running.delete(child);
    resolve();
  }));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`llama-server on ${url} to answer /health (log: ${out.slice(-500)})`, async () => (await call(`${url}/health`, { timeoutMs: 2000 })).status === 200, 30_000, 100);
  return {
    url,
    port,
    pid: child.pid!,
    log: () => out,
    exited,
    async kill(signal = "SIGKILL") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Kills every llama-server this file started (afterEach). */
export async function stopAllLlama(): Promise<void> {
  await Promise.all(
    [...running].map((c) => {
      const gone = new Promise<void>((r) => c.once("exit", () => r()));
      if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
      return gone;
    }),
  );
}

/** A reverse proxy in front of `target` that records every request it forwards ("GET /metrics"). */
export async function countingProxy(target: string): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const t = new URL(target);
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const up = http.request({ host: t.hostname, port: t.port, path: req.url, method: req.method, headers: req.headers, agent: false }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/** A body that keeps a slot decoding for a long time; the logit_bias bans the byte tokens (ids 3-258), whose random output can end a request with HTTP 500 (the engine README). */
export function longCompletion(nPredict = 20000): string {
  const ban: Array<[number, boolean]> = [];
  for (let id = 3; id <= 258; id++) ban.push([id, false]);
  return JSON.stringify({ prompt: "hello world", n_predict: nPredict, ignore_eos: true, logit_bias: ban });
}

/** Sends `n` long completions, aborted by the returned function (or when the server dies). */
export function sendLong(url: string, n: number): { stop(): void } {
  const ac = new AbortController();
  for (let i = 0; i < n; i++) void call(`${url}/completion`, { body: longCompletion(), timeoutMs: 600_000, signal: ac.signal });
  return { stop: () => ac.abort() };
}

/** One value of a family in llama-server's /metrics text (read directly, not through stepwatch). */
export async function metricValue(url: string, family: string): Promise<number | null> {
  const a = await call(`${url}/metrics`, { timeoutMs: 5000 });
  const m = new RegExp(`^${family.replace(/[:]/g, "\\:")} (\\S+)$`, "m").exec(a.body);
  return m ? Number(m[1]) : null;
}

/**
 * Stops only the engine's main thread (tests/support/wedge.py: ptrace that one thread, no group
 * SIGSTOP) for up to 60 s, as a loop stuck inside a device call; the returned function releases it.
 */
export async function wedgeMainThread(pid: number): Promise<() => void> {
  const wedge = spawn("python3", [path.join(__dirname, "wedge.py"), String(pid), "60"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  wedge.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  wedge.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const release = () => {
    if (wedge.exitCode === null) wedge.kill("SIGKILL");
  };
  try {
    await waitFor("the wedge script to stop the main thread", () => out.includes("stopped tid") || out.includes("failed"), 20_000, 50);
  } catch (err) {
    release();
    throw err;
  }
  if (!out.includes("stopped tid")) {
    release();
    throw new Error(`wedge.py could not stop thread ${pid}: ${out}`);
  }
  return release;
}
