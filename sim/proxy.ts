/**
 * A least-connection HTTP reverse proxy over simulated backends, like the one in the incident.
 *
 * It exists to show why stepwatch never reads /metrics through a proxy: each request goes to the
 * backend with the fewest open requests (ties taken in turn), so two consecutive /metrics reads
 * come from two different servers and their counters cannot be compared. Every request it
 * receives is recorded, so a test can prove stepwatch only asked it for /v1/models.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readBodyCapped } from "./body";

export interface ProxyOptions {
  /** Backend base URLs (http://host:port). */
  backends: string[];
  port?: number;
  host?: string;
  /** Wall clock, ms. */
  clock?: () => number;
}

export interface ProxyReceived {
  method: string;
  path: string;
  at: number;
  /** The backend that answered, null when none could. */
  backend: string | null;
  status: number | null;
}

export interface LeastConnProxy {
  readonly url: string;
  readonly port: number;
  readonly backends: readonly string[];
  received(): ProxyReceived[];
  resetLog(): void;
  /** Open requests per backend right now. */
  active(): Record<string, number>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 4 * 1024 * 1024;
const LOG_LIMIT = 10_000;

interface Upstream {
  base: string;
  url: URL;
  active: number;
}

function connectFailure(err: NodeJS.ErrnoException): boolean {
  // Nothing reached the backend: safe to try the next one (nginx's proxy_next_upstream error).
  return err.code === "ECONNREFUSED" || err.code === "EHOSTUNREACH" || err.code === "ECONNRESET";
}

export async function startLeastConnProxy(opts: ProxyOptions): Promise<LeastConnProxy> {
  if (opts.backends.length === 0) throw new Error("startLeastConnProxy needs at least one backend");
  const host = opts.host ?? "127.0.0.1";
  const clock = opts.clock ?? Date.now;
  const upstreams: Upstream[] = opts.backends.map((b) => ({ base: b.replace(/\/+$/, ""), url: new URL(b), active: 0 }));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  let log: ProxyReceived[] = [];
  let turn = 0;

  /** Backends by open requests, ties broken in turn so idle backends alternate. */
  function order(): Upstream[] {
    const n = upstreams.length;
    const ranked = upstreams.map((u, i) => ({ u, i, rank: (i - turn + n) % n }));
    ranked.sort((a, b) => a.u.active - b.u.active || a.rank - b.rank);
    return ranked.map((r) => r.u);
  }

  function readBody(req: IncomingMessage): Promise<Buffer> {
    return readBodyCapped(req, MAX_BODY_BYTES, {
      tooLarge: () => new Error("body too large"),
      closed: () => new Error("client closed the connection before the body ended"),
    });
  }


  /** Send to one backend; resolves false when it could not be reached (try the next). */
  function forward(u: Upstream, req: IncomingMessage, res: ServerResponse, body: Buffer, entry: ProxyReceived): Promise<boolean> {
    return new Promise((resolve) => {
      u.active++;
      let released = false;
      const release = () => {
        if (!released) {
          released = true;
          u.active--;
        }
      };
      const headers = { ...req.headers, host: u.url.host, "content-length": String(body.length) };
      delete headers["transfer-encoding"];
      const up = http.request(
        { protocol: u.url.protocol, hostname: u.url.hostname, port: u.url.port, method: req.method, path: req.url, headers, agent },
        (upRes) => {
          entry.backend = u.base;
          entry.status = upRes.statusCode ?? null;
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
          upRes.on("end", release);
          upRes.on("error", () => {
            release();
            res.destroy();
          });
          resolve(true);
        },
      );
      // The client gave up (a timeout): the backend request is cancelled too.
      res.on("close", () => {
        release();
        if (!res.writableFinished) up.destroy();
      });
      up.on("error", (err: NodeJS.ErrnoException) => {
        release();
        if (!res.headersSent && connectFailure(err)) resolve(false);
        else {
          res.destroy();
          resolve(true);
        }
      });
      up.end(body);
    });
  }

  const server = http.createServer({ connectionsCheckingInterval: 600_000 }, async (req, res) => {
    const entry: ProxyReceived = { method: req.method ?? "GET", path: new URL(req.url ?? "/", "http://proxy").pathname, at: clock(), backend: null, status: null };
    log.push(entry);
    if (log.length > LOG_LIMIT) log.splice(0, LOG_LIMIT / 10);
    let body: Buffer;
    try {
      body = await readBody(req);
    } catch {
      if (!res.headersSent) res.writeHead(413).end();
      return;
    }
    const candidates = order();
    turn = (upstreams.indexOf(candidates[0]) + 1) % upstreams.length;
    for (const u of candidates) {
      if (res.destroyed) return;
      if (await forward(u, req, res, body, entry)) return;
    }
    entry.status = 502;
    const text = JSON.stringify({ error: "no backend reachable" });
    res.writeHead(502, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
  });
  // Long completions pass through: no deadlines, and so no need for node's checking timer.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => resolve((server.address() as AddressInfo).port));
  });

  return {
    url: `http://${host}:${port}`,
    port,
    backends: upstreams.map((u) => u.base),
    received: () => [...log],
    resetLog: () => {
      log = [];
    },
    active: () => Object.fromEntries(upstreams.map((u) => [u.base, u.active])),
    close: async () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      agent.destroy();
      await closed;
    },
  };
}
