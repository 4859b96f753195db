/**
 * What stepwatch asks each engine, over real sockets: node:http servers on 127.0.0.1 that answer
 * like llama-server, TGI and Ollama (bodies from the real scrapes and from llama.cpp's to_metrics()),
 * recording every request, so "a sleeping llama-server is never sent /metrics" and "Ollama is
 * never probed" are facts about the wire.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { observe } from "@/lib/check/observe";
import { readBackend } from "@/lib/check/read";
import type { Reading } from "@/lib/core/types";
import { ADAPTERS } from "@/lib/engines/registry";

const LLAMA = readFileSync(new URL("../fixtures/engines/llamacpp-to_metrics.prom", import.meta.url), "utf8");
const TGI = readFileSync(new URL("../fixtures/real-metrics/tgi-datadog-truncated.prom", import.meta.url), "utf8");
const T = { stuckAfterSeconds: 120, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900, startupGraceSeconds: 600 };

const open: Server[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
async function serve(handler: Handler): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      hits.push(`${req.method} ${req.url}`);
      handler(req, res, body);
    });
  });
  open.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}
const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
};
const notFound = (res: ServerResponse) => json(res, 404, { detail: "Not Found" });

/** A llama-server: /props, /metrics (with the start header), /v1/models, /v1/completions. */
function llamaServer(state: { sleeping?: boolean; loading?: boolean; metrics?: boolean; processing?: number }) {
  return serve((req, res, body) => {
    if (state.loading) return json(res, 503, { error: { code: 503, message: "Loading model", type: "unavailable_error" } });
    if (req.url === "/props") return json(res, 200, { default_generation_settings: {}, total_slots: 4, model_path: "/models/qwen3-8b-q4_k_m.gguf", is_sleeping: state.sleeping ?? false });
    if (req.url === "/metrics") {
      if (state.metrics === false) return json(res, 501, { error: { code: 501, message: "This server does not support metrics endpoint. Start it with `--metrics`", type: "not_supported_error" } });
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4", "process-start-time-unix": "1764580000" });
      return void res.end(LLAMA.replace(/^llamacpp:requests_processing .*$/m, `llamacpp:requests_processing ${state.processing ?? 1}`));
    }
    if (req.url === "/v1/models") return json(res, 200, { object: "list", data: [{ id: "qwen3-8b-q4_k_m.gguf" }] });
    if (req.url === "/v1/completions") return json(res, 200, { choices: [{ text: "pong", max: JSON.parse(body).max_tokens }] });
    if (req.url === "/health") return json(res, 200, { status: "ok" });
    notFound(res);
  });
}

describe("llama.cpp", () => {
  it("asleep: /props says so and /metrics is never asked (not needed while it sleeps)", async () => {
    const s = await llamaServer({ sleeping: true });
    const { reading, verdict } = await observe({ url: s.url }, [], { thresholds: T, read: { timeoutMs: 2000 } });
    expect(reading).toMatchObject({ engine: "llamacpp", asleep: true, metrics: null });
    expect(verdict.state).toBe("sleeping");
    expect(s.hits).toEqual(["GET /props"]);
  });

  it("awake: /props, then /metrics; the Process-Start-Time-Unix header is the process token", async () => {
    const s = await llamaServer({});
    const r = await readBackend({ url: s.url, engine: "llamacpp" }, { timeoutMs: 2000 });
    expect(r.engine).toBe("llamacpp");
    expect(r.metrics).toMatchObject({ running: 1, waiting: 0, steps: 61377, processToken: "1764580000" });
    expect(s.hits).toEqual(["GET /props", "GET /metrics"]);
  });

  it("idle: never probed (the engine loop's own /metrics answer proves it turns; a probe would restart its idle-sleep countdown)", async () => {
    const s = await llamaServer({ processing: 0 });
    const { reading, verdict } = await observe({ url: s.url }, [], { thresholds: T, read: { timeoutMs: 2000 } });
    expect(reading.probe).toBeUndefined();
    expect(verdict.state).toBe("idle");
    expect(verdict.reasons.map((r) => r.rule)).toContain("idle-loop-answered");
    expect(s.hits).toEqual(["GET /props", "GET /metrics"]);
  });

  it("without --metrics (501): no-metrics, and the reason names the flag", async () => {
    const s = await llamaServer({ metrics: false });
    const { reading, verdict } = await observe({ url: s.url }, [], { thresholds: T, read: { timeoutMs: 2000 } });
    expect(reading).toMatchObject({ engine: "llamacpp", noMetrics: true });
    expect(verdict.state).toBe("no-metrics");
    expect(verdict.reasons.find((r) => r.rule === "no-metrics")?.text).toMatch(/start llama-server with --metrics/);
    expect(s.hits).not.toContain("POST /v1/completions");
  });

  it("loading (503 Loading model on every endpoint): starting, never down", async () => {
    const s = await llamaServer({ loading: true });
    const history: Reading[] = [];
    for (let i = 0; i < 3; i++) {
      const { reading, verdict } = await observe({ url: s.url }, history, { thresholds: T, read: { timeoutMs: 2000 }, now: () => 1_000_000 + i * 300_000 });
      history.push(reading);
      expect(verdict.state).toBe("starting");
    }
    expect(s.hits.every((h) => h === "GET /props")).toBe(true);
  });
});

describe("TGI", () => {
  it("detected from its families; an idle TGI is probed with a 1-token generate", async () => {
    let asked: unknown = null;
    const s = await serve((req, res, body) => {
      if (req.url === "/metrics") return void res.end(TGI);
      if (req.url === "/generate") {
        asked = JSON.parse(body);
        return json(res, 200, { generated_text: " pong" });
      }
      notFound(res);
    });
    const { reading, verdict } = await observe({ url: s.url }, [], { thresholds: T, read: { timeoutMs: 2000 } });
    expect(reading.engine).toBe("tgi");
    expect(verdict.state).toBe("idle");
    expect(asked).toEqual({ inputs: "ping", parameters: { max_new_tokens: 1 } });
    expect(s.hits).toEqual(["GET /props", "GET /metrics", "POST /generate"]);
  });
});

describe("liveness without a slot", () => {
  it("SGLang's and TGI's /health can run a generation: when /metrics times out they are asked a static route instead", async () => {
    for (const [engine, path] of [
      ["sglang", "/v1/models"],
      ["tgi", "/info"],
      ["vllm", "/health"],
    ] as const) {
      const s = await serve((req, res) => {
        if (req.url === "/metrics") return; // never answers
        json(res, 200, req.url === "/info" ? { model_id: "m", version: "3.3.6" } : { object: "list", data: [{ id: "m" }] });
      });
      const r = await readBackend({ url: s.url, engine }, { timeoutMs: 300 });
      expect(r).toMatchObject({ outcome: "timeout", health: { outcome: "ok", status: 200 } });
      // vLLM's filtered /metrics/ answers here, but not an exposition: the plain /metrics is read.
      expect(s.hits).toEqual([...(engine === "vllm" ? [`GET ${ADAPTERS.vllm.reads.filtered!.lean!.path}`] : []), "GET /metrics", `GET ${path}`]);
    }
  });
});

describe("TGI before its first request", () => {
  it("an empty /metrics (nothing recorded yet) and /info saying TGI: 0 running, 0 waiting, probed, idle", async () => {
    const s = await serve((req, res) => {
      if (req.url === "/metrics") return void res.end("");
      if (req.url === "/info") return json(res, 200, { model_id: "bigscience/bloom-560m", version: "3.3.6", router: "text-generation-router" });
      if (req.url === "/generate") return json(res, 200, { generated_text: " pong" });
      notFound(res);
    });
    const { reading, verdict } = await observe({ url: s.url }, [], { thresholds: T, read: { timeoutMs: 2000 } });
    expect(reading).toMatchObject({ engine: "tgi", metrics: { running: 0, waiting: 0, models: ["bigscience/bloom-560m"] } });
    expect(verdict.state).toBe("idle");
    expect(s.hits).toEqual(["GET /props", "GET /metrics", "GET /info", "POST /generate"]);
  });
});

describe("Ollama", () => {
  it("no /metrics: recognised by /api/version, models from /api/ps, never probed", async () => {
    const s = await serve((req, res) => {
      if (req.url === "/api/version") return json(res, 200, { version: "0.33.0" });
      if (req.url === "/api/ps") return json(res, 200, { models: [{ name: "llama3.2:3b", model: "llama3.2:3b", size: 3_000_000_000, size_vram: 3_000_000_000 }] });
      if (req.url === "/") return void res.end("Ollama is running");
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("404 page not found");
    });
    const history: Reading[] = [];
    for (let i = 0; i < 3; i++) {
      const { reading, verdict } = await observe({ url: s.url }, history, { thresholds: T, read: { timeoutMs: 2000 }, now: () => 1_000_000 + i * 70_000 });
      history.push(reading);
      expect(reading.engine).toBe("ollama");
      expect(verdict.state).toBe("no-metrics");
      expect(verdict.reasons.map((r) => r.rule)).toEqual(["no-metrics", "no-metrics-alive"]);
      expect(verdict.reasons[1].text).toMatch(/llama3\.2:3b/);
    }
    // First read: /props and /metrics (404), then Ollama's own; later reads only Ollama's.
    expect(s.hits.slice(0, 4)).toEqual(["GET /props", "GET /metrics", "GET /api/version", "GET /api/ps"]);
    expect(s.hits.slice(4)).toEqual(["GET /api/version", "GET /api/ps", "GET /api/version", "GET /api/ps"]);
    expect(s.hits.some((h) => h.startsWith("POST"))).toBe(false);
  });

  it("seen as Ollama before, but vLLM answers now (restarted into another engine): detected again", async () => {
    const metrics = readFileSync(new URL("../fixtures/real-metrics/vllm-0.29.0-inferstack.prom", import.meta.url), "utf8");
    const s = await serve((req, res) => (req.url === "/metrics" ? void res.end(metrics) : notFound(res)));
    const r = await readBackend({ url: s.url }, { timeoutMs: 2000, engineHint: "ollama" });
    expect(r).toMatchObject({ engine: "vllm", metrics: { steps: 137 } });
  });

  it("configured as ollama and refusing twice: down", async () => {
    const s = await serve(() => undefined);
    const url = s.url;
    open.splice(0).forEach((srv) => {
      srv.closeAllConnections();
      srv.close();
    });
    const history: Reading[] = [];
    let state = "";
    for (let i = 0; i < 2; i++) {
      const { reading, verdict } = await observe({ url, engine: "ollama" }, history, { thresholds: T, read: { timeoutMs: 2000 }, now: () => 1_000_000 + i * 5000 });
      history.push(reading);
      state = verdict.state;
    }
    expect(state).toBe("down");
  });
});
