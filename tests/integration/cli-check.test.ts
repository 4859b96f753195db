/**
 * The incident's cases end to end: the real CLI process (`npm run check`'s entry) against the
 * simulator over real HTTP on 127.0.0.1, asserting the exit code, the JSON, and the simulator's
 * own record of what it was sent (no probe ever reaches a server with work).
 */
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator, type SimulatorOptions } from "@/lib/sim/server";
import { startLeastConnProxy, type LeastConnProxy } from "@/lib/sim/proxy";

const ROOT = path.resolve(__dirname, "../..");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");
const CLI = path.join(ROOT, "lib/cli/check.ts");

interface Run {
  code: number;
  json: Record<string, unknown> & { state: string; reasons: string[]; reads: number; probeSent: boolean };
  stderr: string;
}

function check(url: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(TSX, [CLI, url, "--json", ...args], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      try {
        resolve({ code, json: JSON.parse(stdout), stderr });
      } catch {
        reject(new Error(`CLI exited ${code} without JSON: ${stdout}\n${stderr}`));
      }
    });
  });
}

const sims: Simulator[] = [];
const closers: Array<() => Promise<void>> = [];
async function sim(opts: SimulatorOptions = {}): Promise<Simulator> {
  const s = await startSimulator({ weightsLoadSeconds: 0.2, ...opts });
  sims.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const completions = (s: Simulator) => s.received().filter((r) => r.completion);

describe("check CLI against the simulator", () => {
  it("idle: one probe answers, exit 0", async () => {
    const s = await sim();
    const r = await check(s.url, "--wait", "0.3");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ url: s.url, state: "idle", healthy: true, running: 0, waiting: 0, probeSent: true, reads: 1 });
    expect(completions(s)).toHaveLength(1);
    expect(completions(s)[0]).toMatchObject({ running: 0, waiting: 0 });
  });

  it("busy at its limit (12 running, 2 waiting): healthy, rates reported, and no request sent to it", async () => {
    const s = await sim();
    s.load({ requests: 14, promptTokens: 200, maxTokens: 100_000 });
    await until(() => s.state().running === 12 && s.state().counters.steps > 0, "12 running and decoding");
    const r = await check(s.url, "--wait", "0.5");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "busy", healthy: true, running: 12, waiting: 2, probeSent: false, reads: 2 });
    expect(r.json.generationTokensPerSecond as number).toBeGreaterThan(0);
    expect(r.json.stepsPerSecond as number).toBeGreaterThan(0);
    expect(completions(s)).toHaveLength(0);
    expect(s.received().map((x) => x.path)).toEqual(["/metrics", "/metrics"]);
  });

  it("stuck: work running and no progress across both waits, exit 1, nothing sent but reads", async () => {
    const s = await sim();
    s.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    await until(() => s.state().running === 2 && s.state().counters.steps > 0, "2 running");
    await s.setMode("hang");
    const r = await check(s.url, "--wait", "0.3");
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ state: "stuck", healthy: false, running: 2, reads: 3, probeSent: false });
    expect(r.json.reasons.join(" ")).toMatch(/2 running, 0 waiting, 0 new steps in .* across 3 reads/);
    expect(completions(s)).toHaveLength(0);
  });

  it("a short pause is not stuck: the engine resumes between the reads", async () => {
    const s = await sim();
    s.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    await until(() => s.state().counters.steps > 0, "steps");
    await s.setMode("hang");
    const running = check(s.url, "--wait", "1");
    // Paused across the first wait (read 1 -> read 2), running again before read 3.
    await until(() => s.received().filter((x) => x.kind === "metrics").length === 2, "the second read");
    await s.setMode("normal");
    const r = await running;
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "busy", reads: 3 });
    expect(completions(s)).toHaveLength(0);
  });

  it("a long prompt is not stuck: steps and tokens flat, the KV cache grows chunk by chunk", async () => {
    const s = await sim({ prefillTokensPerSecond: 400, chunkSize: 100 });
    s.load({ requests: 1, promptTokens: 30_000, maxTokens: 10 });
    await until(() => s.state().running === 1, "prefill running");
    const before = s.state().counters;
    const r = await check(s.url, "--wait", "0.6");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "busy", running: 1 });
    expect(r.json.reasons.join(" ")).toMatch(/prefill in progress/);
    expect(s.state().counters.steps).toBe(before.steps); // really no steps: only the KV cache moved
    expect(completions(s)).toHaveLength(0);
  });

  it("running 0, waiting 3, no progress: not idle, no probe, stuck", async () => {
    const s = await sim();
    await s.setMode("waiting-hang", { waiting: 3 });
    const r = await check(s.url, "--wait", "0.3");
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ state: "stuck", running: 0, waiting: 3, probeSent: false });
    expect(r.json.reasons.join(" ")).toMatch(/not being scheduled/);
    expect(completions(s)).toHaveLength(0);
  });

  it("a restart between reads: counters of two processes are not compared; the new process is probed", async () => {
    const s = await sim();
    s.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    await until(() => s.state().counters.steps > 0, "steps");
    const firstStart = s.state().processStartTime;
    const running = check(s.url, "--wait", "1.2");
    await until(() => s.received().some((x) => x.kind === "metrics"), "the first read");
    await s.restart({ weightsLoadSeconds: 0.1 });
    const r = await running;
    expect(r.json.processStartTime).not.toBe(firstStart);
    expect(r.json.reasons.join(" ")).toMatch(/new process since the last read \(start time/);
    expect(r).toMatchObject({ code: 0, json: { state: "idle", probeSent: true } });
    expect(completions(s).every((c) => c.running === 0 && c.waiting === 0)).toBe(true);
  });

  it("a restart without a start-time metric (several API servers): a counter going down is the signal", async () => {
    const s = await sim({ multiApiServer: true });
    s.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    await until(() => s.state().counters.steps > 3, "steps");
    const running = check(s.url, "--wait", "1.2");
    await until(() => s.received().some((x) => x.kind === "metrics"), "the first read");
    await s.restart({ weightsLoadSeconds: 0.1 });
    const r = await running;
    expect(r.json.processStartTime).toBeNull();
    expect(r.json.reasons.join(" ")).toMatch(/a counter went down/);
    expect(r).toMatchObject({ code: 0, json: { state: "idle" } });
  });

  it("a server without vLLM metrics: cannot judge (exit 3), never stuck, no probe", async () => {
    const s = await sim();
    await s.setMode("no-metrics");
    const r = await check(s.url, "--wait", "0.2");
    expect(r.code).toBe(3);
    expect(r.json).toMatchObject({ state: "no-metrics", probeSent: false });
    expect(completions(s)).toHaveLength(0);
  });

  it("garbage /metrics: a reading with an error, exit 3, no crash", async () => {
    const garbage = await plainServer((req, res) => {
      if (req.url === "/metrics") return void res.end('vllm:num_requests_running{engine="0" 1\n\u0000\u0001 garbage {{{\n');
      res.writeHead(404).end();
    });
    const r = await check(garbage, "--wait", "0.2");
    expect(r.code).toBe(3);
    expect(["unknown", "no-metrics"]).toContain(r.json.state);
    expect(r.stderr).toBe("");
  });

  it("a dead backend: refused on two consecutive reads, exit 2", async () => {
    const s = await sim();
    await s.crash();
    const r = await check(s.url, "--wait", "0.2");
    expect(r.code).toBe(2);
    expect(r.json).toMatchObject({ state: "down", healthy: false, reads: 2 });
    expect(r.json.reasons.join(" ")).toMatch(/connection refused on \/metrics and \/health on 2 consecutive reads/);
  });

  it("a slow /metrics answer: one timeout is not down", async () => {
    const s = await sim();
    let delayed = false;
    const slow = await plainServer((req, res) => {
      if (req.url === "/metrics" && !delayed) {
        delayed = true;
        return void setTimeout(() => res.end(""), 1500); // past --timeout 0.4
      }
      forward(s.url, req, res);
    });
    const r = await check(slow, "--wait", "0.2", "--timeout", "0.4");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "idle", reads: 2 });
  });

  it("data-parallel: running and waiting are summed over engines", async () => {
    const s = await sim({ engines: 2 });
    s.load({ requests: 6, promptTokens: 100, maxTokens: 100_000 });
    await until(() => s.state().running === 6, "6 running");
    const r = await check(s.url, "--wait", "0.4");
    expect(r.json).toMatchObject({ state: "busy", running: 6 });
    expect(completions(s)).toHaveLength(0);
  });

  it("a proxy is asked only /v1/models (its /metrics would come from a different backend each time)", async () => {
    const a = await sim();
    const b = await sim();
    const proxy: LeastConnProxy = await startLeastConnProxy({ backends: [a.url, b.url] });
    closers.push(() => proxy.close());
    // Why: consecutive reads of /metrics through the proxy are answered by two different servers.
    for (let i = 0; i < 4; i++) await (await fetch(`${proxy.url}/metrics`)).text();
    expect(a.received().filter((x) => x.kind === "metrics").length).toBeGreaterThan(0);
    expect(b.received().filter((x) => x.kind === "metrics").length).toBeGreaterThan(0);
    proxy.resetLog();
    a.resetLog();
    b.resetLog();

    const r = await check(proxy.url, "--proxy");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "up", healthy: true, probeSent: false, models: [a.modelName] });
    expect(proxy.received().map((x) => `${x.method} ${x.path}`)).toEqual(["GET /v1/models"]);
    expect([...a.received(), ...b.received()].filter((x) => x.kind === "metrics")).toHaveLength(0);

    await proxy.close();
    const down = await check(proxy.url, "--proxy", "--wait", "0.2");
    expect(down).toMatchObject({ code: 2, json: { state: "down" } });
  });

  it("a proxy that fails once is asked once more: one miss is not down (the watcher's rule)", async () => {
    const asked: string[] = [];
    const url = await plainServer((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      if (asked.length === 1) return void res.writeHead(503, { "content-type": "text/plain" }).end("reloading");
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data: [{ id: "m1", object: "model" }] }));
    });
    const r = await check(url, "--proxy", "--wait", "0.2");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "up", healthy: true, reads: 2, models: ["m1"] });
    expect(asked).toEqual(["GET /v1/models", "GET /v1/models"]);
  });

  it("usage errors exit 64 and say what is wrong", async () => {
    const r = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(TSX, [CLI, "not a url"], { cwd: ROOT }, (err, _o, stderr) => resolve({ code: (err?.code as number) ?? 0, stderr })),
    );
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/"not a url" is not an http\(s\) URL/);
  });
});

async function plainServer(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function forward(base: string, req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const answer = await fetch(`${base}${req.url}`, {
      method: req.method,
      headers: { "content-type": String(req.headers["content-type"] ?? "application/json") },
      body: req.method === "POST" ? Buffer.concat(chunks) : undefined,
    });
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "text/plain" });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
}
