/**
 * Bad answers over real sockets: every one ends in a Reading that says what happened, never an
 * exception and never a false "stuck". Servers are plain node:http / node:net fakes on 127.0.0.1.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from "node:net";
import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
import { getEventListeners } from "node:events";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { httpRequest } from "@/lib/net/http";
import { readBackend, readProxy, probeBackend } from "@/lib/check/read";
import { ADAPTERS } from "@/lib/engines/registry";

/** vLLM's filtered exposition (lib/engines/vllm.ts), asked once the engine is known. */
// A read without a FilterMemory (these, and the CLI's) asks the lean filter: no latency histograms.
const VLLM_FILTERED = ADAPTERS.vllm.reads.filtered!.lean!.path;

const METRICS = readFileSync(new URL("../fixtures/real-metrics/vllm-0.29.0-inferstack.prom", import.meta.url), "utf8");
const open: Array<Server | NetServer> = [];

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createHttpServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  open.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

async function rawServer(onConnection: (socket: import("node:net").Socket) => void): Promise<string> {
  const server = createNetServer(onConnection);
  open.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closedPort(): Promise<string> {
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

afterEach(async () => {
  for (const s of open.splice(0)) {
    (s as Server).closeAllConnections?.();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

describe("httpRequest: every failure is data", () => {
  it("connection refused", async () => {
    const r = await httpRequest(`${await closedPort()}/metrics`, { timeoutMs: 2000, maxBytes: 1024 });
    expect(r.outcome).toBe("refused");
    expect(r.error).toBe("connection refused");
  });

  it("a connection reset in the middle of the body", async () => {
    const url = await rawServer((socket) => {
      socket.once("data", () => {
        socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\nvllm:num_requests_running 1\n");
        setTimeout(() => socket.resetAndDestroy(), 20);
      });
    });
    const r = await httpRequest(`${url}/metrics`, { timeoutMs: 2000, maxBytes: 1 << 20 });
    expect(r.outcome).toBe("reset");
  });

  it("no answer: the deadline fires and the request is aborted", async () => {
    const { url } = await serve(() => {
      /* never answers */
    });
    const r = await httpRequest(`${url}/metrics`, { timeoutMs: 300, maxBytes: 1024 });
    expect(r.outcome).toBe("timeout");
    expect(r.error).toMatch(/within 300 ms/);
  });

  it("a server that drips one byte at a time is cut at the deadline, not waited on forever", async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      const timer = setInterval(() => res.write("#"), 50);
      res.on("close", () => clearInterval(timer));
    });
    const r = await httpRequest(`${url}/metrics`, { timeoutMs: 400, maxBytes: 1 << 20 });
    expect(r.outcome).toBe("timeout");
    expect(r.bytes).toBeGreaterThan(0);
    expect(r.bytes).toBeLessThan(100);
  });

  it("a 50 MB body is cut at the cap and says why", async () => {
    const chunk = Buffer.alloc(64 * 1024, "a");
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      let sent = 0;
      const pump = () => {
        while (sent < 50 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      res.on("error", () => {});
      pump();
    });
    const r = await httpRequest(`${url}/metrics`, { timeoutMs: 5000, maxBytes: 1024 * 1024 });
    expect(r.outcome).toBe("too-large");
    expect(r.error).toMatch(/larger than the 1 MB cap/);
    expect(r.bytes).toBeLessThan(2 * 1024 * 1024);
  });

  it("a redirect is not followed to another host", async () => {
    const other = await serve((_req, res) => res.end("secret-free"));
    const { url } = await serve((_req, res) => {
      res.writeHead(302, { location: `${other.url}/metrics` });
      res.end();
    });
    const r = await httpRequest(`${url}/metrics`, { timeoutMs: 2000, maxBytes: 1024, headers: { authorization: "Bearer k" } });
    expect(r.outcome).toBe("http-error");
    expect(r.error).toMatch(/redirect .* \(not followed\)/);
    expect(other.hits).toEqual([]);
  });

  it("the watcher's long-lived signal keeps no listener per request, and aborting it ends a read at once", async () => {
    const { url } = await serve((req, res) => {
      if (req.url === "/slow") return; // never answers
      res.end("ok");
    });
    const shutdown = new AbortController();
    const listeners: number[] = [];
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 30; i++) {
        const r = await httpRequest(`${url}/fast`, { timeoutMs: 2000, maxBytes: 1024, signal: shutdown.signal });
        expect(r.outcome).toBe("ok");
      }
      listeners.push(getEventListeners(shutdown.signal, "abort").length);
    }
    // One for every request made under it (lib/net/http.ts joinOuter), never one per request.
    expect(listeners).toEqual([1, 1]);
    const pending = httpRequest(`${url}/slow`, { timeoutMs: 10_000, maxBytes: 1024, signal: shutdown.signal });
    setTimeout(() => shutdown.abort(), 50);
    const r = await pending;
    expect(r).toMatchObject({ outcome: "error", error: "aborted by stepwatch (shutting down)" });
    expect(r.latencyMs).toBeLessThan(10_000);
  });

  it("a gzip body is decoded", async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
      res.end(gzipSync(METRICS));
    });
    const r = await readBackend({ url }, { timeoutMs: 2000 });
    expect(r.outcome).toBe("ok");
    expect(r.metrics?.steps).toBe(137);
  });
});

describe("readBackend: a failed or strange answer is a Reading with an error", () => {
  it("refused: /health is asked too, so 'down' can be decided", async () => {
    const url = await closedPort();
    const r = await readBackend({ url }, { timeoutMs: 1000 });
    expect(r).toMatchObject({ outcome: "refused", metrics: null, health: { outcome: "refused" } });
  });

  it("HTTP 500 on /metrics: a failed read, no other request (vLLM's filtered /metrics/ first, refused too)", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(500);
      res.end("boom");
    });
    const r = await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 1000 });
    expect(r).toMatchObject({ outcome: "http-error", status: 500, metrics: null, error: "HTTP 500" });
    expect(s.hits).toEqual([`GET ${VLLM_FILTERED}`, "GET /metrics"]);
    // engine "auto" on a first read asks /props first (a sleeping llama-server must not get /metrics).
    s.hits.length = 0;
    await readBackend({ url: s.url }, { timeoutMs: 1000 });
    expect(s.hits).toEqual(["GET /props", "GET /metrics"]);
  });

  it("HTML instead of metrics: not vLLM's, liveness from /v1/models", async () => {
    const s = await serve((req, res) => {
      if (req.url === "/v1/models") return void res.end(JSON.stringify({ object: "list", data: [{ id: "m1" }] }));
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>Welcome to nginx</body></html>");
    });
    const r = await readBackend({ url: s.url }, { timeoutMs: 1000 });
    expect(r.noMetrics).toBe(true);
    expect(r.error).toMatch(/not Prometheus text|no vLLM metrics/);
    expect(r.models).toEqual({ outcome: "ok", status: 200, ids: ["m1"] });
    expect(s.hits).toEqual(["GET /props", "GET /metrics", "GET /v1/models"]);
  });

  it("JSON instead of metrics is no engine's; another engine's metrics are read by its adapter, unless vLLM is configured", async () => {
    const sglang = readFileSync(new URL("../fixtures/real-metrics/sglang-0.5.10-datadog.prom", import.meta.url), "utf8");
    const json = await serve((req, res) => res.end(req.url === "/v1/models" ? '{"data":[]}' : '{"status":"ok"}'));
    const r = await readBackend({ url: json.url }, { timeoutMs: 1000 });
    expect(r.metrics).toBeNull();
    expect(r.noMetrics).toBe(true);
    const s = await serve((req, res) => res.end(req.url === "/v1/models" ? '{"data":[]}' : sglang));
    const auto = await readBackend({ url: s.url }, { timeoutMs: 1000 });
    expect(auto).toMatchObject({ engine: "sglang", metrics: { running: 0, waiting: 0 } });
    const vllm = await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 1000 });
    expect(vllm).toMatchObject({ metrics: null, noMetrics: true, error: "configured engine vLLM, but /metrics carries SGLang's families" });
  });

  it("the API key goes with the requests to the configured backend", async () => {
    const seen: Array<string | undefined> = [];
    const s = await serve((req, res) => {
      seen.push(req.headers.authorization);
      res.end(METRICS);
    });
    await readBackend({ url: s.url, apiKey: "sk-test", engine: "vllm" }, { timeoutMs: 1000 });
    expect(seen).toEqual(["Bearer sk-test"]);
  });
});

describe("readBackend: an idle keep-alive connection closed under a read", () => {
  const answer = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(METRICS)}\r\n\r\n${METRICS}`;

  /** A server like uvicorn: keep-alive with no Keep-Alive hint; `onRequest` decides per connection and request. */
  async function keepAliveServer(onRequest: (conn: number, nth: number, socket: import("node:net").Socket) => void) {
    const seen: Array<[number, number]> = [];
    /** Each request's line ("GET /metrics"), in order. */
    const lines: string[] = [];
    let conns = 0;
    const url = await rawServer((socket) => {
      const conn = ++conns;
      let nth = 0;
      socket.on("error", () => {});
      socket.on("data", (d) => {
        const text = d.toString("latin1");
        if (!text.includes("\r\n\r\n")) return;
        nth++;
        seen.push([conn, nth]);
        lines.push(text.split(" ").slice(0, 2).join(" "));
        onRequest(conn, nth, socket);
      });
    });
    return { url, seen, lines };
  }

  /** The second request on the first connection meets a server that just closed it; every other gets `reply`. */
  const staleSecond = (reply: string) => (conn: number, nth: number, socket: import("node:net").Socket) => {
    if (conn === 1 && nth === 2) socket.resetAndDestroy(); // the server dropped the idle connection as we reused it
    else socket.write(reply);
  };

  /** A pool of one keep-alive connection, so a second read reuses the first one's. */
  async function oneConnection(f: (dispatcher: Agent) => Promise<void>): Promise<void> {
    const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 1 });
    try {
      await f(dispatcher);
    } finally {
      await dispatcher.close();
    }
  }

  const json = (body: unknown) => {
    const text = JSON.stringify(body);
    return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
  };

  it("a reused connection reset before any byte is asked once more on a new one: the read is good", async () => {
    const s = await keepAliveServer(staleSecond(answer));
    await oneConnection(async (dispatcher) => {
      const first = await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 2000, dispatcher });
      expect(first.outcome).toBe("ok");
      const second = await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 2000, dispatcher });
      expect(second.outcome).toBe("ok");
      expect(second.metrics?.steps).toBe(137);
      expect(second.health).toBeUndefined();
      expect(s.seen).toEqual([
        [1, 1],
        [1, 2],
        [2, 1],
      ]);
    });
  });

  it("a server that resets every connection at once is asked twice, then /health, and the reading says reset", async () => {
    const s = await keepAliveServer((_conn, _nth, socket) => socket.resetAndDestroy());
    const r = await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 2000 });
    expect(r.outcome).toBe("reset");
    expect(r.health?.outcome).toBe("reset");
    expect(s.seen).toHaveLength(3); // /metrics, /metrics again, /health
  });

  it("every read's GET has the retry, not only /metrics: a proxy's /v1/models on a reused connection", async () => {
    const s = await keepAliveServer(staleSecond(json({ object: "list", data: [{ id: "m" }] })));
    await oneConnection(async (dispatcher) => {
      expect(await readProxy({ url: s.url }, { timeoutMs: 2000, dispatcher })).toMatchObject({ outcome: "ok", models: ["m"] });
      expect(await readProxy({ url: s.url }, { timeoutMs: 2000, dispatcher })).toMatchObject({ outcome: "ok", models: ["m"] });
      expect(s.seen).toEqual([
        [1, 1],
        [1, 2],
        [2, 1],
      ]);
      expect(s.lines).toEqual(["GET /v1/models", "GET /v1/models", "GET /v1/models"]);
    });
  });

  it("a sleeping llama.cpp's /props on a reused connection is asked again, so /metrics (not needed while it sleeps) is never sent", async () => {
    const s = await keepAliveServer(staleSecond(json({ is_sleeping: true, total_slots: 1, model_path: "/models/qwen.gguf" })));
    await oneConnection(async (dispatcher) => {
      await readBackend({ url: s.url, engine: "llamacpp" }, { timeoutMs: 2000, dispatcher });
      const r = await readBackend({ url: s.url, engine: "llamacpp" }, { timeoutMs: 2000, dispatcher });
      expect(r).toMatchObject({ outcome: "ok", asleep: true, engine: "llamacpp" });
      expect(s.lines).toEqual(["GET /props", "GET /props", "GET /props"]);
    });
  });

  it("the probe (a POST that takes a slot) is never asked again, even on a reused connection reset before any byte", async () => {
    const s = await keepAliveServer(staleSecond(answer));
    await oneConnection(async (dispatcher) => {
      expect((await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 2000, dispatcher })).outcome).toBe("ok");
      const p = await probeBackend({ url: s.url, model: "m" }, { probeTimeoutMs: 2000, dispatcher });
      expect(p.ok).toBe(false);
      expect(p.error).toMatch(/connection reset/);
      // The filtered /metrics/ answered with the whole body (the query ignored): that is the read.
      expect(s.lines).toEqual([`GET ${VLLM_FILTERED}`, "POST /v1/completions"]);
    });
  });

  it("a reset in the middle of an answer is not asked again", async () => {
    const s = await keepAliveServer((_conn, _nth, socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\nvllm:num_requests_running 1\n");
      setTimeout(() => socket.resetAndDestroy(), 20);
    });
    const r = await readBackend({ url: s.url, engine: "vllm" }, { timeoutMs: 2000 });
    expect(r.outcome).toBe("reset");
    expect(s.seen).toHaveLength(2); // /metrics, then /health
  });
});

describe("probe and proxy", () => {
  it("the probe asks for one token and is aborted at its deadline", async () => {
    let body = "";
    let aborted = false;
    const s = await serve((req, res) => {
      req.on("data", (c) => (body += c));
      res.on("close", () => (aborted = !res.writableEnded));
    });
    const p = await probeBackend({ url: s.url, model: "m" }, { probeTimeoutMs: 300 });
    expect(p.ok).toBe(false);
    expect(p.error).toMatch(/within/);
    expect(JSON.parse(body)).toMatchObject({ model: "m", max_tokens: 1 });
    await expect.poll(() => aborted, { timeout: 2000 }).toBe(true);
  });

  it("a proxy is asked /v1/models and nothing else", async () => {
    const s = await serve((_req, res) => res.end(JSON.stringify({ data: [{ id: "a" }, { id: "b" }] })));
    const r = await readProxy({ url: s.url }, { timeoutMs: 1000 });
    expect(r).toMatchObject({ outcome: "ok", models: ["a", "b"] });
    expect(s.hits).toEqual(["GET /v1/models"]);
  });
});

describe("endpoint", () => {
  it("appends the path to the configured URL's path and keeps its query", async () => {
    const { endpoint } = await import("@/lib/check/read");
    expect(endpoint("http://h:8000", "/metrics")).toBe("http://h:8000/metrics");
    expect(endpoint("http://h:8000/vllm/", "/metrics")).toBe("http://h:8000/vllm/metrics");
    expect(endpoint("http://h/?token=x", "/v1/models")).toBe("http://h/v1/models?token=x");
  });
});
