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
import { startSimulator, type Simulator, type SimulatorOptions } from "@/sim/server";
import { startLeastConnProxy, type LeastConnProxy } from "@/sim/proxy";
import { freePort } from "@/sim/free-port";

const ROOT = path.resolve(__dirname, "../..");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");
const CLI = path.join(ROOT, "lib/cli/check.ts");

/** The rule ids of a run's reasons, in order. */
const rules = (r: Run) => r.json.reasons.map((x) => x.rule);

interface Run {
  code: number;
  json: Record<string, unknown> & { state: string; reasons: Array<{ rule: string; text: string }>; reads: number; probeSent: boolean };
  stderr: string;
}

/**
 * `deadlineMs` is the test's deadline for the process (killed after it): a check that should
 * need no wait is given --wait 300 and a deadline far below it, so a wait fails the test.
 */
function check(url: string, ...args: string[]): Promise<Run> {
  return checkWithin(60_000, url, ...args);
}

function checkWithin(deadlineMs: number, url: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(TSX, [CLI, url, "--json", ...args], { cwd: ROOT, timeout: deadlineMs }, (err, stdout, stderr) => {
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
    // engine auto: the first read asks /props (a 404 here; llama.cpp's sleep flag), then /metrics;
    // once vLLM is known, its filtered /metrics/ (lib/engines/vllm.ts).
    expect(s.received().map((x) => x.path)).toEqual(["/props", "/metrics", "/metrics/"]);
  });

  it("stuck: work running and no progress across both waits, exit 1, nothing sent but reads", async () => {
    const s = await sim();
    s.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    await until(() => s.state().running === 2 && s.state().counters.steps > 0, "2 running");
    await s.setMode("hang");
    const r = await check(s.url, "--wait", "0.3");
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ state: "stuck", healthy: false, running: 2, reads: 3, probeSent: false });
    // --json carries each reason as { rule, text }: the rule that fired, and the words a person reads.
    expect(r.json.reasons).toContainEqual({ rule: "no-progress", text: expect.stringMatching(/^2 running, 0 waiting, 0 new steps in .* across 3 reads/) });
    expect(rules(r)).toContain("no-progress-stuck");
    expect(completions(s)).toHaveLength(0);
  });

  it("busy with the default --wait 30: answered at the first proof of progress, not after the whole wait", async () => {
    const s = await sim();
    s.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    await until(() => s.state().running === 2 && s.state().counters.steps > 0, "2 running and decoding");
    // The deadline is below one --wait: a check that sleeps the whole wait is killed and fails.
    const r = await checkWithin(25_000, s.url);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "busy", healthy: true, running: 2, probeSent: false, reads: 2, waitSeconds: 30 });
    expect(rules(r)).toContain("progress");
    // Two reads of /metrics: the first, and the re-read a moment later that saw progress.
    expect(s.received().filter((x) => x.kind === "metrics")).toHaveLength(2);
    expect(completions(s)).toHaveLength(0);
  });

  it("stuck still takes the whole window: re-read every moment, judged only after two waits", async () => {
    const s = await sim();
    s.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    await until(() => s.state().running === 2 && s.state().counters.steps > 0, "2 running");
    await s.setMode("hang");
    const r = await check(s.url, "--wait", "3");
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ state: "stuck", running: 2, probeSent: false });
    expect(rules(r)).toContain("no-progress-stuck");
    // More reads than the three of the window (the re-reads between), and the first and the last
    // are at least two waits apart (the simulator's own clock of when each arrived).
    const reads = s.received().filter((x) => x.kind === "metrics");
    expect(reads.length).toBeGreaterThan(3);
    expect(r.json.reads).toBe(reads.length);
    expect(reads.at(-1)!.at - reads[0].at).toBeGreaterThanOrEqual(2 * 3000);
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
    expect(rules(r)).toContain("progress");
    expect(s.state().counters.steps).toBe(before.steps); // really no steps: only the KV cache moved
    expect(completions(s)).toHaveLength(0);
  });

  it("running 0, waiting 3, no progress: not idle, no probe, stuck", async () => {
    const s = await sim();
    await s.setMode("waiting-hang", { waiting: 3 });
    const r = await check(s.url, "--wait", "0.3");
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ state: "stuck", running: 0, waiting: 3, probeSent: false });
    expect(rules(r)).toContain("queued-not-scheduled");
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
    expect(rules(r)).toContain("new-process");
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
    expect(rules(r)).toContain("new-process");
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
    expect(rules(r)).toContain("down-refused");
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

  it("a sleeping vLLM (POST /sleep): sleeping, exit 0, no probe", async () => {
    const s = await sim();
    await fetch(`${s.url}/sleep?level=1`, { method: "POST" });
    const r = await check(s.url, "--wait", "0.2");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "sleeping", healthy: true, probeSent: false, engine: "vllm", restartRecommended: false });
    expect(completions(s)).toHaveLength(0);
  });

  it("a probe answered 401 (no API key given): exit 3, the configuration problem in words", async () => {
    const s = await sim({ apiKey: "sk-right" });
    const r = await check(s.url, "--wait", "0.2");
    expect(r.code).toBe(3);
    expect(r.json).toMatchObject({ state: "unknown", configProblem: "the probe needs the API key: 401" });
    const good = await check(s.url, "--wait", "0.2", "--api-key", "sk-right");
    expect(good.code).toBe(0);
  });

  it("a pooling model (completions 404): one fallback to /v1/embeddings, idle, exit 0", async () => {
    const s = await sim({ pooling: true });
    const r = await check(s.url, "--wait", "0.2");
    expect(r.code).toBe(0);
    expect(r.json.state).toBe("idle");
    expect(completions(s).map((x) => x.path)).toEqual(["/v1/completions", "/v1/embeddings"]);
  });

  it("a dead backend in the CLI: down (exit 2), but no restart recommended within startupGraceSeconds", async () => {
    const s = await sim();
    await s.crash();
    const r = await check(s.url, "--wait", "0.2");
    expect(r.code).toBe(2);
    expect(r.json).toMatchObject({ state: "down", restartRecommended: false });
    expect(r.json.reasons[0]).toMatchObject({ rule: "down-grace", text: expect.stringMatching(/restart recommended after 10 min/) });
  });

  it("a refused port is down after two reads a moment apart, without the --wait pause", async () => {
    const port = await freePort(); // nothing listens there
    const r = await checkWithin(30_000, `http://127.0.0.1:${port}`, "--wait", "300");
    expect(r.code).toBe(2);
    expect(r.json).toMatchObject({ state: "down", healthy: false, reads: 2, probeSent: false });
    expect(rules(r)).toContain("down-refused");
  });

  it("without --json: the state, then each reason's words on its own line (never its rule id)", async () => {
    const port = await freePort(); // nothing listens there
    const out = await new Promise<{ code: number; stdout: string }>((resolve) =>
      execFile(TSX, [CLI, `http://127.0.0.1:${port}`, "--wait", "300"], { cwd: ROOT, timeout: 30_000 }, (err, stdout) => resolve({ code: (err?.code as number) ?? 0, stdout })),
    );
    expect(out.code).toBe(2);
    expect(out.stdout).toMatch(/: DOWN \(/);
    expect(out.stdout).toMatch(/^ {2}- down for .*; may be loading weights; restart recommended after 10 min$/m);
    expect(out.stdout).toMatch(/^ {2}- connection refused on \/metrics and \/health on 2 consecutive reads/m);
    expect(out.stdout).not.toMatch(/down-grace|\[object Object\]/);
  });

  it("a refused proxy is down after two reads a moment apart too", async () => {
    const port = await freePort();
    const r = await checkWithin(30_000, `http://127.0.0.1:${port}`, "--proxy", "--wait", "300");
    expect(r).toMatchObject({ code: 2, json: { state: "down", reads: 2 } });
  });

  it("a host that does not resolve is a usage error at once (exit 64), not unknown after the waits", async () => {
    for (const extra of [[], ["--proxy"]]) {
      const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(TSX, [CLI, "http://stepwatch-no-such-host.invalid:8000", "--json", "--wait", "300", ...extra], { cwd: ROOT, timeout: 30_000 }, (err, stdout, stderr) =>
          resolve({ code: (err?.code as number) ?? 0, stdout, stderr }),
        ),
      );
      expect(r.code).toBe(64);
      expect(r.stderr).toMatch(/cannot resolve the host of http:\/\/stepwatch-no-such-host\.invalid:8000 \((ENOTFOUND|EAI_AGAIN)\): check the URL/);
      expect(r.stdout).toBe("");
    }
  });

  it("a URL that serves no metrics is answered after one read, without the waits", async () => {
    const asked: string[] = [];
    const notFound = await plainServer((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      res.writeHead(404, { "content-type": "text/html" }).end("<html>not here</html>");
    });
    const r = await checkWithin(30_000, notFound, "--wait", "300");
    expect(r.code).toBe(3);
    expect(r.json).toMatchObject({ state: "unknown", reads: 1, probeSent: false });
    // One read of an `auto` backend: /props (llama.cpp), /metrics, /api/version (Ollama), /v1/models; then no wait.
    expect(asked).toEqual(["GET /props", "GET /metrics", "GET /api/version", "GET /v1/models"]);

    const html = await plainServer((_req, res) => void res.writeHead(200, { "content-type": "text/html" }).end("<html>a web page</html>"));
    const page = await checkWithin(30_000, html, "--wait", "300");
    expect(page).toMatchObject({ code: 3, json: { reads: 1, probeSent: false } });

    const locked = await plainServer((_req, res) => void res.writeHead(401).end());
    const noKey = await checkWithin(30_000, locked, "--wait", "300");
    expect(noKey).toMatchObject({ code: 3, json: { state: "unknown", reads: 1 } });
    expect(noKey.json.reasons.map((x) => x.text).join(" ")).toMatch(/HTTP 401/);
  });

  it("reading a load balancer's /metrics without --proxy warns: the start time jumps between servers", async () => {
    const a = await sim();
    // A server up for an hour already (its clock says so), as behind a real balancer.
    const b = await sim({ clock: () => Date.now() - 3_600_000 });
    expect(a.state().processStartTime).not.toBe(b.state().processStartTime);
    // Work on both (sent to each directly), so the check reads three times and probes nothing.
    a.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    b.load({ requests: 2, promptTokens: 100, maxTokens: 100_000 });
    await until(() => a.state().running === 2 && b.state().running === 2, "work on both");
    const proxy = await startLeastConnProxy({ backends: [a.url, b.url] });
    closers.push(() => proxy.close());
    const r = await check(proxy.url, "--wait", "0.3");
    expect(r.json.reads).toBe(3);
    const answeredBy = proxy.received().filter((x) => x.path === "/metrics" || x.path === "/metrics/").map((x) => x.backend);
    expect(new Set(answeredBy).size).toBe(2);
    expect(r.json.warnings).toHaveLength(1);
    expect((r.json.warnings as string[])[0]).toMatch(/look like they came from different servers: the process start time went back between reads/);
    expect(r.stderr).toMatch(/check: warning: the reads of \/metrics look like they came from different servers/);
    expect(r.json.probeSent).toBe(false);

    // One server read three times: no warning.
    const direct = await check(a.url, "--wait", "0.3");
    expect(direct.json.warnings).toEqual([]);
    expect(direct.stderr).toBe("");
  });

  it("SGLang: a --wait whose window (2 x --wait) is under its 150 s is exit 64 naming the flag, never a wrong verdict", async () => {
    const run = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(TSX, [CLI, ...args, "--json"], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: (err?.code as number) ?? 0, stdout, stderr })),
      );
    const s = await sim({ engine: "sglang", engineOptions: { warmupSeconds: 0 } });
    // Configured: refused before anything is sent.
    const configured = await run(s.url, "--engine", "sglang", "--wait", "30");
    expect(configured.code).toBe(64);
    expect(configured.stderr).toMatch(/check: SGLang needs at least 150 s without progress before it can be called stuck, and --wait 30 gives a window of 60 s \(2 x --wait\): use --wait 75 or more/);
    expect(configured.stdout).toBe("");
    expect(s.received()).toHaveLength(0);
    // Detected (auto) on a server with work: refused after the first read, no probe, no waits.
    s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await until(() => s.state().running === 2, "work on the SGLang server");
    const detected = await run(s.url, "--wait", "0.2");
    expect(detected.code).toBe(64);
    expect(detected.stderr).toMatch(/--wait 0\.2 gives a window of 0\.4 s .*use --wait 75 or more/);
    expect(s.received().filter((r) => r.path === "/metrics")).toHaveLength(1);
    expect(completions(s)).toHaveLength(0);
  });

  it("usage errors exit 64 and say what is wrong", async () => {
    const r = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(TSX, [CLI, "not a url"], { cwd: ROOT }, (err, _o, stderr) => resolve({ code: (err?.code as number) ?? 0, stderr })),
    );
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/"not a url" is not an http\(s\) URL/);
    const bad = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(TSX, [CLI, "http://127.0.0.1:1", "--engine", "triton"], { cwd: ROOT }, (err, _o, stderr) => resolve({ code: (err?.code as number) ?? 0, stderr })),
    );
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/--engine must be one of auto, vllm, llamacpp, sglang, tgi, ollama, got "triton"/);
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
