/**
 * The one way stepwatch talks HTTP to anything it watches (undici 7). Every call has a hard
 * deadline, a response-size cap and no redirect following, and it never throws: a failed call is
 * data (`outcome`), because a watcher that crashes on a bad answer protects nothing.
 */
import { Agent, Client, request, type Dispatcher } from "undici";
import type { FetchOutcome } from "../core/fetch";

export interface HttpOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  maxBytes: number;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
  /** Report `requestSent` (the notification outbox: lib/notify/outbox.ts); costs a wrapper per request. */
  noticeSent?: boolean;
}

export interface HttpResult {
  outcome: FetchOutcome;
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body: string;
  bytes: number;
  latencyMs: number;
  error?: string;
  /**
   * On a timeout only: how late past its deadline this process's own event loop got to it (ms),
   * when that is more than LATE_DEADLINE_MS. The answer may have been in the socket, unread, all
   * that time (a watcher too busy for its fleet, a long GC): the timeout is stepwatch's as much as
   * the server's, and says nothing about the server.
   */
  lateMs?: number;
  /**
   * With `noticeSent`: whether the whole request (headers and body) was handed to the socket
   * before the call ended. A timeout with it set means the receiver has the request and did not
   * answer in time, not that it never got it.
   */
  requestSent?: boolean;
}

/**
 * A deadline seen later than this (ms) was the event loop's: on time it is seen within a few ms
 * (a GC pause, tens). The poll-lag goal of a healthy watcher (bench/RESULTS.md) is the same 250 ms.
 */
export const LATE_DEADLINE_MS = 250;

const g = globalThis as unknown as { __stepwatchDispatcher?: Agent };

/**
 * The dispatcher of every request that names none: the CLI's reads, proxies, restart webhooks,
 * notification channels (the watcher's backend reads go through a backendClient each, below): one
 * keep-alive pool per origin, for the whole process. An idle connection is kept 10 s, longer than
 * the default 5 s interval, so the next read reuses it, unless the server says less: a `Keep-Alive:
 * timeout=N` hint (llama.cpp's cpp-httplib, node's servers) wins, less undici's 2 s margin. uvicorn
 * (vLLM, SGLang) sends no hint and closes idle connections after 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE):
 * at a 5 s interval a read may meet a connection being closed, which every read's GET
 * (lib/check/read.ts `get`) asks again once on a new connection; the probe (a POST that takes a slot)
 * never is. The connect timeout is short because "nothing listens" (vLLM loading weights) answers
 * at once; a slow connect is a sick host.
 */
export function defaultDispatcher(): Dispatcher {
  g.__stepwatchDispatcher ??= new Agent({ ...CONNECTION_OPTIONS, connections: 4 });
  return g.__stepwatchDispatcher;
}

const CONNECT_TIMEOUT_MS = 5_000;
/** How every connection stepwatch opens behaves (see defaultDispatcher). */
const CONNECTION_OPTIONS = {
  connect: { timeout: CONNECT_TIMEOUT_MS },
  keepAliveTimeout: 10_000,
  keepAliveMaxTimeout: 60_000,
} as const;

/**
 * A connection of one's own to one backend (the watcher's monitors, which read their backend one
 * request at a time). Why not the default Agent: it closes an origin's Pool as soon as that
 * origin's last connection closes and builds a new one for the next request, and uvicorn (vLLM,
 * SGLang) closes an idle connection 5 s after its last answer, so at stepwatch's default 5 s
 * interval many reads met a rebuilt Pool: 1.37 ms of CPU per request on a new connection through
 * the Agent, 0.67 ms when the Pool is kept and only a socket is opened (a one-off against a server
 * that closes every connection, 35 KB answers). An undici Client keeps itself when its socket
 * closes, in ~1 KB instead of a Pool's ~17 KB (its 2048-slot queue: 16 MB at 1000 backends). Two
 * monitors of the same origin never wait on each other. null when `url` is no URL (the read then
 * reports that, through the default dispatcher).
 */
export function backendClient(url: string): Client | null {
  try {
    return new Client(new URL(url).origin, CONNECTION_OPTIONS);
  } catch {
    return null;
  }
}

export async function httpRequest(url: string, options: HttpOptions): Promise<HttpResult> {
  if (!options.noticeSent) return requestOnce(url, options, { yes: false });
  const sent = { yes: false };
  const r = await requestOnce(url, options, sent);
  return { ...r, requestSent: sent.yes };
}

/**
 * A view of `inner` whose requests call `onSent` once undici has written the whole request to the
 * socket (its legacy handler hook `onRequestSent`, which request()'s own handler does not use).
 */
function noticingSent(inner: Dispatcher, onSent: () => void): Dispatcher {
  const spy = (handler: Dispatcher.DispatchHandler): Dispatcher.DispatchHandler =>
    new Proxy(handler, {
      get(target, prop) {
        if (prop === "onRequestSent") return () => onSent();
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === "dispatch") return (o: Dispatcher.DispatchOptions, h: Dispatcher.DispatchHandler) => target.dispatch(o, spy(h));
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** The requests in flight under each long-lived signal (the watcher's), aborted with it. */
const inFlight = new WeakMap<AbortSignal, Set<AbortController>>();

/**
 * Aborts `controller` when `outer` aborts; the function returned lets it go. One listener per outer
 * signal, not one per request: the watcher's signal carries a listener for every poll loop, and
 * adding and removing one per read on it (Node's EventTarget finds a listener to remove by walking
 * them) was ~4% of the watcher's CPU at 1000 backends.
 */
function joinOuter(outer: AbortSignal | undefined, controller: AbortController): (() => void) | null {
  if (!outer) return null;
  if (outer.aborted) {
    controller.abort(outer.reason);
    return null;
  }
  let set = inFlight.get(outer);
  if (!set) {
    const joined = new Set<AbortController>();
    set = joined;
    inFlight.set(outer, joined);
    outer.addEventListener(
      "abort",
      () => {
        for (const c of joined) c.abort(outer.reason);
        joined.clear();
      },
      { once: true },
    );
  }
  set.add(controller);
  const mine = set;
  return () => mine.delete(controller);
}

async function requestOnce(url: string, options: HttpOptions, sent: { yes: boolean }): Promise<HttpResult> {
  // Timers need whole milliseconds; a fractional deadline (time left after a first request)
  // would otherwise throw, and this function must never throw.
  const opts = { ...options, timeoutMs: Math.max(1, Math.ceil(Number.isFinite(options.timeoutMs) ? options.timeoutMs : 1)) };
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  // One controller per request, joined to the caller's long-lived signal (joinOuter) and let go in
  // `finally`. (AbortSignal.any() would leave a listener per request on the watcher's signal: Node
  // warns past 10 and memory grows with every read.)
  const controller = new AbortController();
  const signal = controller.signal;
  const deadline = { fired: false };
  const timer = setTimeout(() => {
    deadline.fired = true;
    controller.abort(new DOMException(`no answer within ${opts.timeoutMs} ms`, "TimeoutError"));
  }, opts.timeoutMs);
  const leave = joinOuter(opts.signal, controller);
  let bytes = 0;
  const base = opts.dispatcher ?? defaultDispatcher();
  try {
    const res = await request(url, {
      method: (opts.method ?? "GET") as Dispatcher.HttpMethod,
      headers: opts.headers,
      body: opts.body,
      dispatcher: opts.noticeSent ? noticingSent(base, () => (sent.yes = true)) : base,
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
      return markLate({ ...failure(err, deadline, opts), status: res.statusCode, bytes, latencyMs: elapsed() }, err, opts.timeoutMs);
    }
    // Most answers come in one chunk: no copy then.
    let raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, bytes);
    const encoding = String(res.headers["content-encoding"] ?? "").toLowerCase();
    if (encoding === "gzip") {
      try {
        // zlib is loaded at the first gzip answer, not at start: the CLI's start-up (bench/cli-start.ts).
        const { gunzipSync } = await import("node:zlib");
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
    return markLate({ ...failure(err, deadline, opts), bytes, latencyMs: elapsed() }, err, opts.timeoutMs);
  } finally {
    clearTimeout(timer);
    leave?.();
  }
}

/**
 * undici's connect timeout runs on its coarse timers (lib/util/timers.js: a tick every 499 ms that
 * counts ticks, not time): on time it fires up to ~1 s after it is due. Not the watcher's lateness.
 */
const CONNECT_TIMER_SLACK_MS = 1_000;

/**
 * A timeout marked with how late it was seen. Its deadline: the connect timeout for a connect that
 * timed out (when it comes first), else the request's. On time, the request's own timer is seen a
 * few ms after it is due (undici's headers and body timers never fire before it); later, the event
 * loop was busy while the answer may already have been there.
 */
function markLate(r: HttpResult, err: unknown, timeoutMs: number): HttpResult {
  if (r.outcome !== "timeout") return r;
  const connect = (err as { code?: string })?.code === "UND_ERR_CONNECT_TIMEOUT";
  const late = r.latencyMs - (connect ? Math.min(CONNECT_TIMEOUT_MS, timeoutMs) : timeoutMs);
  return late > LATE_DEADLINE_MS + (connect ? CONNECT_TIMER_SLACK_MS : 0) ? { ...r, lateMs: late } : r;
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
