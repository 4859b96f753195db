/**
 * The one way stepwatch talks HTTP to anything it watches (undici 7). Every call has a hard
 * deadline, a response-size cap and no redirect following, and it never throws: a failed call is
 * data (`outcome`), because a watcher that crashes on a bad answer protects nothing.
 */
import { Agent, Client, type Dispatcher } from "undici";
import type { FetchOutcome } from "../core/fetch";

export interface HttpOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  maxBytes: number;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
  /** Report `requestSent` (the notification outbox: lib/notify/outbox.ts). */
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

export function httpRequest(url: string, options: HttpOptions): Promise<HttpResult> {
  return new Promise((resolve) => new Call(url, options, resolve).start());
}

/** The requests in flight under each long-lived signal (the watcher's), aborted with it. */
const inFlight = new WeakMap<AbortSignal, Set<Call>>();

/**
 * Aborts `call` when `outer` aborts; the function returned lets it go. One listener per outer
 * signal, not one per request: the watcher's signal carries a listener for every poll loop, and
 * adding and removing one per read on it (Node's EventTarget finds a listener to remove by walking
 * them) was ~4% of the watcher's CPU at 1000 backends.
 */
function joinOuter(outer: AbortSignal | undefined, call: Call): (() => void) | null {
  if (!outer) return null;
  if (outer.aborted) {
    call.abort(outer.reason);
    return null;
  }
  let set = inFlight.get(outer);
  if (!set) {
    const joined = new Set<Call>();
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
  set.add(call);
  const mine = set;
  return () => mine.delete(call);
}

/** A URL undici would refuse, reported as its request() reports it (never thrown out of here). */
class InvalidUrlError extends Error {
  code = "UND_ERR_INVALID_ARG";
}

/**
 * One request, as undici's dispatcher handler: undici's Client calls these hooks as the answer
 * arrives, and the chunks are collected here. Why not undici's request(): it builds a Readable
 * stream, an async resource and an AbortSignal listener per answer, which the caller then drained
 * with for-await; for a 1-70 KB answer that arrives in a chunk or two, that machinery was most of
 * undici's share of the watcher's CPU. These are the hooks undici's Client calls itself
 * (`onConnect`/`onHeaders`/`onData`/`onComplete`/`onError`, and `onRequestSent`; the newer
 * `onResponse*` ones go through a wrapper per request), used as api-request.js's RequestHandler uses
 * them: an abort before the request is on a socket waits for `onConnect`, as there, so a call ends
 * when undici is done with it (the answer, an error, its connect timeout, or the abort).
 */
class Call implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private readonly timeoutMs: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private deadlineFired = false;
  private leave: (() => void) | null = null;
  /** undici's abort of this request, once it is on a socket (onConnect). */
  private abortRequest: ((err: Error) => void) | null = null;
  private reason: Error | null = null;
  private settled = false;
  private status = 0;
  private headers: Record<string, string | string[] | undefined> | undefined;
  private chunks: Buffer[] = [];
  private bytes = 0;
  private sent = false;

  constructor(
    private readonly url: string,
    private readonly opts: HttpOptions,
    private readonly resolve: (r: HttpResult) => void,
  ) {
    // Timers need whole milliseconds; a fractional deadline (time left after a first request)
    // would otherwise throw, and this function must never throw.
    this.timeoutMs = Math.max(1, Math.ceil(Number.isFinite(opts.timeoutMs) ? opts.timeoutMs : 1));
  }

  start(): void {
    const opts = this.opts;
    this.timer = setTimeout(() => {
      this.deadlineFired = true;
      this.abort(new DOMException(`no answer within ${this.timeoutMs} ms`, "TimeoutError"));
    }, this.timeoutMs);
    this.leave = joinOuter(opts.signal, this);
    try {
      const { origin, path } = originAndPath(this.url);
      (opts.dispatcher ?? defaultDispatcher()).dispatch(
        {
          origin,
          path,
          method: (opts.method ?? "GET") as Dispatcher.HttpMethod,
          headers: opts.headers,
          body: opts.body,
          headersTimeout: this.timeoutMs,
          bodyTimeout: this.timeoutMs,
        },
        this,
      );
    } catch (err) {
      this.onError(err as Error);
    }
  }

  /** The deadline, or the caller's signal: undici aborts the request (at once, or when it gets a socket). */
  abort(reason: unknown): void {
    if (this.settled || this.reason) return;
    this.reason = reason instanceof Error ? reason : new Error(String(reason));
    this.abortRequest?.(this.reason);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.reason) abort(this.reason);
    else this.abortRequest = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // 1xx: the answer is still to come
    this.status = statusCode;
    this.headers = headersOf(rawHeaders);
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    if (this.bytes > this.opts.maxBytes) {
      this.settle({
        outcome: "too-large",
        status: this.status,
        headers: this.headers,
        body: "",
        bytes: this.bytes,
        latencyMs: this.elapsed(),
        error: `answer larger than the ${formatBytes(this.opts.maxBytes)} cap; cut after ${formatBytes(this.bytes)}`,
      });
      this.chunks = [];
      this.abortRequest?.(new Error("answer over the size cap"));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  /** Called by undici's Client once the whole request is on the socket (not in its typings). */
  onRequestSent(): void {
    this.sent = true;
  }

  onComplete(): void {
    if (this.settled) return;
    // Most answers come in one chunk: no copy then.
    const raw = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.bytes);
    this.chunks = [];
    const encoding = this.headers?.["content-encoding"];
    if (encoding !== undefined && String(encoding).toLowerCase() === "gzip") void this.gunzipThenAnswer(raw);
    else this.answer(raw);
  }

  onError(err: Error): void {
    if (this.settled) return;
    const r: HttpResult = { ...failure(err, this.deadlineFired, this.timeoutMs, this.opts), bytes: this.bytes, latencyMs: this.elapsed() };
    // An error after the headers (mid-body) keeps the status that was seen.
    if (this.headers) r.status = this.status;
    this.settle(markLate(r, err, this.timeoutMs));
  }

  private async gunzipThenAnswer(raw: Buffer): Promise<void> {
    let plain: Buffer;
    try {
      // zlib is loaded at the first gzip answer, not at start: the CLI's start-up (bench/cli-start.ts).
      const { gunzipSync } = await import("node:zlib");
      plain = gunzipSync(raw, { maxOutputLength: this.opts.maxBytes });
    } catch (err) {
      this.settle({
        outcome: "error",
        status: this.status,
        headers: this.headers,
        body: "",
        bytes: this.bytes,
        latencyMs: this.elapsed(),
        error: `gzip body could not be decoded within ${formatBytes(this.opts.maxBytes)}: ${(err as Error).message}`,
      });
      return;
    }
    this.answer(plain);
  }

  private answer(raw: Buffer): void {
    const status = this.status;
    const headers = this.headers ?? {};
    const ok = status >= 200 && status < 300;
    this.settle({
      outcome: ok ? "ok" : "http-error",
      status,
      headers,
      body: raw.toString("utf8"),
      bytes: this.bytes,
      latencyMs: this.elapsed(),
      error: ok ? undefined : describeStatus(status, headers),
    });
  }

  private settle(r: HttpResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.leave?.();
    if (this.opts.noticeSent) r.requestSent = this.sent;
    this.resolve(r);
  }

  private elapsed(): number {
    return Math.round(performance.now() - this.started);
  }
}

/** What undici's request() dispatches for a URL: its origin, and its path with the query. */
function originAndPath(url: string): { origin: string; path: string } {
  const u = new URL(url);
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new InvalidUrlError("Invalid URL protocol: the URL must start with `http:` or `https:`.");
  }
  return { origin: u.origin, path: u.search ? `${u.pathname}${u.search}` : u.pathname };
}

/**
 * An answer's headers as undici's request() hands them: a record of lower-cased names, a repeated
 * header's values in an array (undici's util.parseHeaders, without its name tree).
 */
function headersOf(raw: ReadonlyArray<Buffer | string | Array<Buffer | string>>): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i] as Buffer | string;
    const key = (typeof k === "string" ? k : k.toString("latin1")).toLowerCase();
    const v = raw[i + 1];
    const value = typeof v === "string" ? v : Array.isArray(v) ? v.map((x) => x.toString("latin1")) : v.toString("latin1");
    const had = Object.hasOwn(out, key) ? out[key] : undefined;
    if (had === undefined) {
      // `__proto__` is a header name like any other here, never the record's prototype.
      if (key === "__proto__") Object.defineProperty(out, key, { value, enumerable: true, configurable: true, writable: true });
      else out[key] = value;
    } else {
      const list = typeof had === "string" ? [had] : had;
      if (Array.isArray(value)) list.push(...value);
      else list.push(value);
      out[key] = list;
    }
  }
  return out;
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

function failure(err: unknown, deadlineFired: boolean, timeoutMs: number, opts: HttpOptions): Omit<HttpResult, "bytes" | "latencyMs"> {
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code ?? "";
  if (opts.signal?.aborted && !deadlineFired) {
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
    deadlineFired
  ) {
    return { outcome: "timeout", body: "", error: `no complete answer within ${timeoutMs} ms` };
  }
  return { outcome: "error", body: "", error: `${code || e.name || "error"}: ${e.message ?? String(err)}` };
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(n % (1024 * 1024) === 0 ? 0 : 1)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} B`;
}
