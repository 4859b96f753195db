/**
 * The one way stepwatch talks HTTP to anything it watches (undici 7). Every call has a hard
 * deadline, a response-size cap and no redirect following, and it never throws: a failed call is
 * data (`outcome`), because a watcher that crashes on a bad answer protects nothing.
 */
import { gunzipSync } from "node:zlib";
import { Agent, request, type Dispatcher } from "undici";

/**
 * How a fetch ended. Connection-level failures are kept apart because "down" is decided from
 * them (refused/reset on two reads), while a timeout only means "slow" until stuckAfterSeconds.
 */
export type FetchOutcome =
  | "ok"
  | "refused" // ECONNREFUSED: nothing listens (vLLM loading weights, or dead)
  | "reset" // connection reset / closed mid-answer
  | "timeout" // connect, headers or body timeout
  | "http-error" // answered with a non-2xx status
  | "too-large" // the body passed the size cap
  | "error"; // anything else (DNS, TLS, redirect refused...)

export interface HttpOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  maxBytes: number;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
}

export interface HttpResult {
  outcome: FetchOutcome;
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body: string;
  bytes: number;
  latencyMs: number;
  error?: string;
}

const g = globalThis as unknown as { __stepwatchAgent?: Agent };

/**
 * One keep-alive pool per process: a watcher reading 1000 backends every few seconds should not
 * open 1000 new TCP connections per round. The connect timeout is short because "nothing listens"
 * (vLLM loading weights) answers at once; a slow connect is a sick host.
 */
export function defaultDispatcher(): Agent {
  g.__stepwatchAgent ??= new Agent({
    connect: { timeout: 5_000 },
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
    connections: 4,
  });
  return g.__stepwatchAgent;
}

export async function httpRequest(url: string, options: HttpOptions): Promise<HttpResult> {
  // Timers need whole milliseconds; a fractional deadline (time left after a first request)
  // would otherwise throw, and this function must never throw.
  const opts = { ...options, timeoutMs: Math.max(1, Math.ceil(Number.isFinite(options.timeoutMs) ? options.timeoutMs : 1)) };
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  // One controller per request, joined to the caller's long-lived signal by a listener that is
  // removed in `finally`. (AbortSignal.any() would leave a listener per request on the watcher's
  // signal: Node warns past 10 and memory grows with every read.)
  const controller = new AbortController();
  const signal = controller.signal;
  const deadline = { fired: false };
  const timer = setTimeout(() => {
    deadline.fired = true;
    controller.abort(new DOMException(`no answer within ${opts.timeoutMs} ms`, "TimeoutError"));
  }, opts.timeoutMs);
  const onOuterAbort = () => controller.abort(opts.signal?.reason);
  if (opts.signal?.aborted) onOuterAbort();
  else opts.signal?.addEventListener("abort", onOuterAbort, { once: true });
  let bytes = 0;
  try {
    const res = await request(url, {
      method: (opts.method ?? "GET") as Dispatcher.HttpMethod,
      headers: opts.headers,
      body: opts.body,
      dispatcher: opts.dispatcher ?? defaultDispatcher(),
      signal,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of res.body) {
        bytes += chunk.length;
        if (bytes > opts.maxBytes) {
          res.body.destroy();
          return {
            outcome: "too-large",
            status: res.statusCode,
            headers: res.headers,
            body: "",
            bytes,
            latencyMs: elapsed(),
            error: `answer larger than the ${formatBytes(opts.maxBytes)} cap; cut after ${formatBytes(bytes)}`,
          };
        }
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      return { ...failure(err, deadline, opts), status: res.statusCode, bytes, latencyMs: elapsed() };
    }
    let raw = Buffer.concat(chunks);
    const encoding = String(res.headers["content-encoding"] ?? "").toLowerCase();
    if (encoding === "gzip") {
      try {
        raw = gunzipSync(raw, { maxOutputLength: opts.maxBytes });
      } catch (err) {
        return {
          outcome: "error",
          status: res.statusCode,
          headers: res.headers,
          body: "",
          bytes,
          latencyMs: elapsed(),
          error: `gzip body could not be decoded within ${formatBytes(opts.maxBytes)}: ${(err as Error).message}`,
        };
      }
    }
    const body = raw.toString("utf8");
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return {
      outcome: ok ? "ok" : "http-error",
      status: res.statusCode,
      headers: res.headers,
      body,
      bytes,
      latencyMs: elapsed(),
      error: ok ? undefined : describeStatus(res.statusCode, res.headers),
    };
  } catch (err) {
    return { ...failure(err, deadline, opts), bytes, latencyMs: elapsed() };
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onOuterAbort);
  }
}

function describeStatus(status: number, headers: Record<string, string | string[] | undefined>): string {
  if (status >= 300 && status < 400) {
    // Redirects are never followed: a watched server that redirects elsewhere is misconfigured,
    // and following it could send the API key to another host.
    return `HTTP ${status} redirect to ${String(headers.location ?? "?")} (not followed)`;
  }
  return `HTTP ${status}`;
}

function failure(err: unknown, deadline: { fired: boolean }, opts: HttpOptions): Omit<HttpResult, "bytes" | "latencyMs"> {
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code ?? "";
  if (opts.signal?.aborted && !deadline.fired) {
    return { outcome: "error", body: "", error: "aborted by stepwatch (shutting down)" };
  }
  if (code === "ECONNREFUSED") return { outcome: "refused", body: "", error: "connection refused" };
  if (code === "ECONNRESET" || code === "EPIPE" || code === "UND_ERR_SOCKET" || code === "UND_ERR_CLOSED") {
    return { outcome: "reset", body: "", error: `connection reset (${code})` };
  }
  if (
    code === "UND_ERR_CONNECT_TIMEOUT" ||
    code === "UND_ERR_HEADERS_TIMEOUT" ||
    code === "UND_ERR_BODY_TIMEOUT" ||
    e.name === "TimeoutError" ||
    deadline.fired
  ) {
    return { outcome: "timeout", body: "", error: `no complete answer within ${opts.timeoutMs} ms` };
  }
  return { outcome: "error", body: "", error: `${code || e.name || "error"}: ${e.message ?? String(err)}` };
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(n % (1024 * 1024) === 0 ? 0 : 1)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} B`;
}
