import { afterEach, describe, expect, it } from "vitest";
import { parseVllmMetrics } from "@/lib/engines/vllm";
import { startSimulator, type Simulator, type SimulatorOptions } from "@/sim/server";
import { tickerActive } from "@/sim/ticker";
import { call, waitFor } from "./sim-support";

const sims: Simulator[] = [];
async function sim(opts: SimulatorOptions = {}): Promise<Simulator> {
  const s = await startSimulator({ weightsLoadSeconds: 0.3, ...opts });
  sims.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

async function metrics(s: Simulator) {
  const a = await call(`${s.url}/metrics`);
  expect(a.status).toBe(200);
  const p = parseVllmMetrics(a.body);
  expect(p.error).toBeUndefined();
  return p.metrics!;
}

describe("simulator endpoints", () => {
  it("serves V1 /metrics (text/plain 0.0.4), /health, /v1/models, and JSON 404s", async () => {
    const s = await sim({ modelName: "test/model" });
    const m = await call(`${s.url}/metrics`);
    expect(m.headers?.["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(m.body).toMatch(/^# HELP /);
    const parsed = parseVllmMetrics(m.body).metrics!;
    expect(parsed).toMatchObject({ running: 0, waiting: 0, steps: 0, models: ["test/model"] });
    expect(parsed.processStartTime).toBeCloseTo(Date.now() / 1000, -1);

    expect((await call(`${s.url}/health`)).status).toBe(200);
    const models = JSON.parse((await call(`${s.url}/v1/models`)).body);
    expect(models).toMatchObject({ object: "list", data: [{ id: "test/model", object: "model", owned_by: "vllm" }] });
    const missing = await call(`${s.url}/nope`);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toEqual({ detail: "Not Found" });
    expect((await call(`${s.url}/v1/completions`)).status).toBe(405);
  });

  it("keeps an idle connection open like the engine's own server: no Keep-Alive hint but llama.cpp's, closed after httpKeepAliveSeconds", async () => {
    const http = await import("node:http");
    /** Two GETs of /metrics on one agent socket; the headers of the first and whether the second reused its connection. */
    const twice = async (s: Simulator, gapMs: number) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const sockets: unknown[] = [];
      const get = () =>
        new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
          const req = http.get(`${s.url}/metrics`, { agent }, (res) => {
            res.resume();
            res.on("end", () => resolve(res.headers));
          });
          req.on("socket", (sock) => sockets.push(sock));
          req.on("error", reject);
        });
      const headers = await get();
      await new Promise((r) => setTimeout(r, gapMs));
      await get();
      agent.destroy();
      return { headers, reused: sockets[0] === sockets[1] };
    };
    const vllm = await sim({ httpKeepAliveSeconds: 1 });
    const a = await twice(vllm, 100);
    expect(a.headers.connection).toBe("keep-alive");
    expect(a.headers["keep-alive"]).toBeUndefined(); // uvicorn sends none
    expect(a.reused).toBe(true);
    // Past the timeout the server has closed it: the second GET needs a new connection.
    expect((await twice(vllm, 1500)).reused).toBe(false);
    const llama = await sim({ engine: "llamacpp", httpKeepAliveSeconds: 1 });
    expect((await twice(llama, 100)).headers["keep-alive"]).toBe("timeout=1"); // cpp-httplib's hint
  });

  it("answers a completion on an idle server at once, honouring max_tokens", async () => {
    const s = await sim();
    const a = await call(`${s.url}/v1/completions`, { body: { model: s.modelName, prompt: "Say OK", max_tokens: 3 } });
    expect(a.status).toBe(200);
    const body = JSON.parse(a.body);
    expect(body).toMatchObject({ object: "text_completion", model: s.modelName, choices: [{ finish_reason: "length" }], usage: { completion_tokens: 3 } });
    const chat = JSON.parse((await call(`${s.url}/v1/chat/completions`, { body: { messages: [{ role: "user", content: "hi" }], max_tokens: 2 } })).body);
    expect(chat).toMatchObject({ object: "chat.completion", choices: [{ message: { role: "assistant" }, finish_reason: "length" }], usage: { completion_tokens: 2 } });
    const m = await metrics(s);
    expect(m).toMatchObject({ running: 0, finishedRequests: 2, generationTokens: 5 });
    expect(s.completionsReceivedWhileBusy()).toEqual([]);
  });

  it("streams SSE chunks that end with data: [DONE]", async () => {
    const s = await sim({ timeScale: 10 });
    const a = await call(`${s.url}/v1/chat/completions`, { body: { messages: [{ role: "user", content: "hi" }], max_tokens: 6, stream: true } });
    expect(a.status).toBe(200);
    expect(a.headers?.["content-type"]).toMatch(/^text\/event-stream/);
    const events = a.body.split("\n\n").filter(Boolean);
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, "")));
    expect(chunks[0].choices[0].delta.role).toBe("assistant");
    expect(chunks.at(-1).choices[0].finish_reason).toBe("length");
    expect(chunks.map((c) => c.choices[0].delta.content).join("").length).toBeGreaterThan(0);
  });

  it("queues a completion behind 12 running requests, records it as received while busy, and frees it on abort", async () => {
    const s = await sim();
    s.load({ requests: 12, promptTokens: 100, maxTokens: 20_000 });
    const abort = new AbortController();
    const probe = call(`${s.url}/v1/completions`, { body: { prompt: "ping", max_tokens: 1 }, signal: abort.signal });
    await waitFor("the probe to be queued", () => s.state().waiting === 1);
    expect(s.state().running).toBe(12);
    const m = await metrics(s);
    expect(m).toMatchObject({ running: 12, waiting: 1 });
    const busy = s.completionsReceivedWhileBusy();
    expect(busy).toHaveLength(1);
    expect(busy[0]).toMatchObject({ path: "/v1/completions", running: 12, waiting: 0, completion: true });
    abort.abort();
    expect((await probe).error).toBeDefined();
    await waitFor("the aborted probe to leave the queue", () => s.state().waiting === 0);
    expect(s.model.engines[0].stats.finished.abort).toBe(1);
  });

  it("guards /v1/* with the API key, but not /metrics or /health", async () => {
    const s = await sim({ apiKey: "sekret" });
    expect((await call(`${s.url}/v1/models`)).status).toBe(401);
    expect((await call(`${s.url}/v1/models`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await call(`${s.url}/v1/models`, { headers: { authorization: "Bearer sekret" } })).status).toBe(200);
    expect((await call(`${s.url}/metrics`)).status).toBe(200);
    expect((await call(`${s.url}/health`)).status).toBe(200);
  });

  it("rejects a foreign model (404), bad JSON (400) and an over-long request (400) like vLLM", async () => {
    const s = await sim();
    const foreign = await call(`${s.url}/v1/completions`, { body: { model: "other", prompt: "x", max_tokens: 1 } });
    expect(foreign.status).toBe(404);
    expect(JSON.parse(foreign.body)).toMatchObject({ object: "error", type: "NotFoundError", message: "The model `other` does not exist." });
    expect((await call(`${s.url}/v1/completions`, { body: "{not json" })).status).toBe(400);
    const long = await call(`${s.url}/v1/completions`, { body: { prompt: "x", max_tokens: 40_000 } });
    expect(long.status).toBe(400);
    expect(JSON.parse(long.body).message).toMatch(/maximum context length is 32768/);
  });
});

describe("simulator failure modes", () => {
  it("hang: /health stays 200, counters freeze with work running, a new completion queues", async () => {
    const s = await sim({ timeScale: 20 });
    s.load({ requests: 2, promptTokens: 50, maxTokens: 20_000 });
    await waitFor("steps", async () => (await metrics(s)).steps! > 0);
    await s.setMode("hang");
    const a = await metrics(s);
    const probe = call(`${s.url}/v1/completions`, { body: { prompt: "ping", max_tokens: 1 }, timeoutMs: 300 });
    expect((await probe).error).toBe("TIMEOUT");
    expect((await call(`${s.url}/health`)).status).toBe(200);
    const b = await metrics(s);
    expect(b).toMatchObject({ running: 2, steps: a.steps, generationTokens: a.generationTokens, kvCacheUsage: a.kvCacheUsage });
    await s.setMode("normal");
    await waitFor("progress after the hang", async () => (await metrics(s)).steps! > a.steps!);
  });

  it("waiting-hang: running 0, waiting N, nothing moves", async () => {
    const s = await sim();
    await s.setMode("waiting-hang", { waiting: 2 });
    const a = await metrics(s);
    expect(a).toMatchObject({ running: 0, waiting: 2 });
    await new Promise((r) => setTimeout(r, 100));
    expect(await metrics(s)).toEqual(a);
  });

  it("no-metrics: /metrics is an HTML 404, the rest still serves", async () => {
    const s = await sim();
    await s.setMode("no-metrics");
    const m = await call(`${s.url}/metrics`);
    expect(m.status).toBe(404);
    expect(m.headers?.["content-type"]).toMatch(/^text\/html/);
    expect(parseVllmMetrics(m.body).metrics).toBeNull();
    expect((await call(`${s.url}/v1/models`)).status).toBe(200);
    expect((await call(`${s.url}/v1/completions`, { body: { prompt: "x", max_tokens: 1 } })).status).toBe(200);
  });

  it("restart: in-flight requests get 500, connections are refused while weights load, then a new process", async () => {
    const s = await sim({ weightsLoadSeconds: 0.4 });
    await call(`${s.url}/v1/completions`, { body: { prompt: "x", max_tokens: 2 } });
    const before = await metrics(s);
    expect(before.finishedRequests).toBe(1);
    const inflight = call(`${s.url}/v1/completions`, { body: { prompt: "x", max_tokens: 10_000 } });
    await waitFor("the in-flight request", () => s.state().running === 1);
    await s.restart();
    const failed = await inflight;
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.body)).toEqual({ error: "cannot schedule new futures after shutdown" });
    expect(s.phase()).toBe("loading");
    expect((await call(`${s.url}/health`)).error).toBe("ECONNREFUSED");
    expect((await call(`${s.url}/metrics`)).error).toBe("ECONNREFUSED");
    await s.whenListening();
    const after = await metrics(s);
    expect(after.processStartTime!).toBeGreaterThan(before.processStartTime!);
    expect(after).toMatchObject({ running: 0, steps: 0, generationTokens: 0, finishedRequests: 0 });
    expect(new URL(s.url).port).toBe(String(s.port)); // same port as before
  });

  it("a hang is cured by a restart; no-metrics survives one", async () => {
    const s = await sim({ weightsLoadSeconds: 0.05 });
    await s.setMode("hang");
    await s.restart();
    await s.whenListening();
    expect(s.mode()).toBe("normal");
    await s.setMode("no-metrics");
    await s.restart();
    await s.whenListening();
    expect(s.mode()).toBe("no-metrics");
  });

  it("crash: refused until recover(), which brings a new process", async () => {
    const s = await sim();
    const start = (await metrics(s)).processStartTime!;
    const inflight = call(`${s.url}/v1/completions`, { body: { prompt: "x", max_tokens: 10_000 } });
    await waitFor("the in-flight request", () => s.state().running === 1);
    await s.crash();
    expect((await inflight).error).toBe("ECONNRESET");
    expect(s.phase()).toBe("crashed");
    expect((await call(`${s.url}/health`)).error).toBe("ECONNREFUSED");
    await new Promise((r) => setTimeout(r, 50));
    expect((await call(`${s.url}/health`)).error).toBe("ECONNREFUSED");
    await s.recover();
    expect((await metrics(s)).processStartTime!).toBeGreaterThan(start);
  });

  it("crash forSeconds comes back by itself as a new process", async () => {
    const s = await sim();
    await s.crash({ forSeconds: 0.2 });
    expect((await call(`${s.url}/metrics`)).error).toBe("ECONNREFUSED");
    await waitFor("the crashed server to come back", async () => (await call(`${s.url}/health`)).status === 200);
    expect(s.state().generation).toBe(2);
  });

  it("multi-API-server: no process_start_time_seconds over HTTP either", async () => {
    const s = await sim({ multiApiServer: true });
    expect((await metrics(s)).processStartTime).toBeNull();
  });

  it("data-parallel: one series per engine", async () => {
    const s = await sim({ engines: 2 });
    s.load({ requests: 3, maxTokens: 5000 });
    const text = (await call(`${s.url}/metrics`)).body;
    expect(text.match(/^vllm:num_requests_running\{/gm)).toHaveLength(2);
    expect((await metrics(s)).running).toBe(3);
  });
});

describe("simulator admin API (/_sim/)", () => {
  it("switches modes, loads, reports state, the received log, and resets it", async () => {
    const s = await sim();
    const loaded = await call(`${s.url}/_sim/load`, { body: { requests: 3, promptTokens: 50, maxTokens: 5000 } });
    expect(loaded.status).toBe(200);
    expect(JSON.parse(loaded.body)).toMatchObject({ submitted: 3, running: 3 });
    const hung = await call(`${s.url}/_sim/mode`, { body: { mode: "hang" } });
    expect(JSON.parse(hung.body)).toMatchObject({ mode: "hang", running: 3 });
    const state = JSON.parse((await call(`${s.url}/_sim/state`)).body);
    expect(state).toMatchObject({ phase: "listening", mode: "hang", running: 3, waiting: 0, generation: 1, exposesProcessStartTime: true });
    await call(`${s.url}/metrics`);
    const log = JSON.parse((await call(`${s.url}/_sim/received`)).body) as Array<{ path: string; kind: string }>;
    expect(log.map((r) => r.kind)).toEqual(["admin", "admin", "admin", "metrics", "admin"]);
    expect((await call(`${s.url}/_sim/reset-log`, { method: "POST" })).status).toBe(200);
    expect(s.received()).toEqual([]);
    expect((await call(`${s.url}/_sim/mode`, { body: { mode: "sleepy" } })).status).toBe(400);
    expect((await call(`${s.url}/_sim/load`, { body: {} })).status).toBe(400);
  });

  it("POST /_sim/restart answers 202, then refuses, then comes back by itself", async () => {
    const s = await sim({ weightsLoadSeconds: 0.3 });
    const before = s.state().processStartTime;
    const a = await call(`${s.url}/_sim/restart`, { method: "POST" });
    expect(a.status).toBe(202);
    await waitFor("the socket to close", async () => (await call(`${s.url}/health`)).error === "ECONNREFUSED");
    await waitFor("the server to come back", async () => (await call(`${s.url}/health`)).status === 200);
    expect(s.state().processStartTime).toBeGreaterThan(before);
  });

  it("POST /_sim/crash {forSeconds} answers 202 and comes back as a new process", async () => {
    const s = await sim();
    expect((await call(`${s.url}/_sim/crash`, { body: { forSeconds: 0.2 } })).status).toBe(202);
    await waitFor("the socket to close", async () => (await call(`${s.url}/health`)).error === "ECONNREFUSED");
    await waitFor("the server to come back", async () => (await call(`${s.url}/health`)).status === 200);
    expect(s.state().generation).toBe(2);
  });

  it("close() frees everything: no listener, no shared timer", async () => {
    const s = await sim();
    const pending = call(`${s.url}/v1/completions`, { body: { prompt: "x", max_tokens: 10_000 } });
    await waitFor("the in-flight request", () => s.state().running === 1);
    expect(tickerActive()).toBe(true);
    await s.close();
    expect((await pending).error).toBeDefined();
    expect(tickerActive()).toBe(false);
    expect((await call(`${s.url}/health`)).error).toBe("ECONNREFUSED");
  });
});
