/**
 * Shared plumbing of the engine fronts: JSON answers, capped bodies, and the requests an engine is
 * holding open (a generation answers when its request finishes in the core; a hung core holds it).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBodyCapped } from "../body";
import type { EngineRequest, RequestSpec } from "../engine";
import type { LiveMode, SubmittedRequest, VllmSimModel } from "../model";
import { subscribeTick } from "../ticker";
import type { EngineKind, FrontMode, FrontState } from "./types";

const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** An answer with a status and a body shaped the way the engine shapes its errors. */
export class EngineHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(typeof body === "string" ? body : JSON.stringify(body));
  }
}

/**
 * Run one route; a thrown EngineHttpError is the engine's own error answer, anything else goes
 * through `toError` (the engine's shape for a bad request or an internal error). An answer already
 * under way (a stream) can only be cut.
 */
export async function serveRoute(res: ServerResponse, route: () => Promise<void>, toError: (err: unknown) => EngineHttpError): Promise<void> {
  try {
    await route();
  } catch (err) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const e = err instanceof EngineHttpError ? err : toError(err);
    sendJson(res, e.status, e.body);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, text: string, contentType: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A JSON object body; `bad(message)` builds the engine's own 400. */
export async function readJsonObject(req: IncomingMessage, bad: (message: string) => EngineHttpError): Promise<Record<string, unknown>> {
  const buf = await readBodyCapped(req, MAX_BODY_BYTES, {
    tooLarge: () => bad(`request body over ${MAX_BODY_BYTES} bytes`),
    closed: () => bad("client closed the connection before the body ended"),
  });
  const text = buf.toString("utf8");
  if (text.trim() === "") return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw bad("request body is not valid JSON");
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) throw bad("request body must be a JSON object");
  return v as Record<string, unknown>;
}

/** A positive integer field, or undefined; `bad` names the field. */
export function positiveIntField(body: Record<string, unknown>, field: string, bad: (message: string) => EngineHttpError): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) throw bad(`${field} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

/** About four characters per token, as the vLLM simulator counts. */
export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

export interface Held {
  readonly sub: SubmittedRequest;
  readonly res: ServerResponse;
  /** The route it came on (SGLang's http_requests_active{endpoint}). */
  readonly endpoint: string;
  readonly receivedAt: number;
  /** Output tokens already written (streams). */
  sent: number;
  done: boolean;
}

export interface HoldHandlers {
  /** New output tokens [from, to) of a streaming request. */
  onTokens?(h: Held, from: number, to: number): void;
  /** The request finished in the core: write the final answer. */
  onFinish(h: Held, r: EngineRequest): void;
  /** The client went away before the end. */
  onAbort?(h: Held): void;
}

/**
 * Requests held open by one simulated server. One subscription to the shared ticker while any is
 * held; a client that hangs up aborts its request in the core (every engine frees the slot).
 */
export class HeldRequests {
  private readonly held = new Map<Held, HoldHandlers>();
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly model: VllmSimModel) {}

  get size(): number {
    return this.held.size;
  }

  list(): Held[] {
    return [...this.held.keys()];
  }

  /** Requests held per endpoint. */
  byEndpoint(): Map<string, number> {
    const out = new Map<string, number>();
    for (const h of this.held.keys()) out.set(h.endpoint, (out.get(h.endpoint) ?? 0) + 1);
    return out;
  }

  hold(res: ServerResponse, endpoint: string, spec: RequestSpec, handlers: HoldHandlers): Held {
    const h: Held = { sub: this.model.submit(spec), res, endpoint, receivedAt: this.model.now(), sent: 0, done: false };
    this.held.set(h, handlers);
    res.on("close", () => {
      if (h.done) return;
      h.done = true;
      this.held.delete(h);
      this.model.abort(h.sub);
      handlers.onAbort?.(h);
    });
    if (!this.unsubscribe) this.unsubscribe = subscribeTick(() => this.tick());
    return h;
  }

  /** Stop holding `h` and abort it in the core (the engine gave up on it). */
  cancel(h: Held): void {
    if (h.done) return;
    h.done = true;
    this.held.delete(h);
    this.model.abort(h.sub);
    if (this.held.size === 0) this.stop();
  }

  private tick(): void {
    this.model.advance();
    for (const [h, handlers] of [...this.held]) {
      const r = h.sub.request;
      if (r.status !== "finished" && handlers.onTokens && r.generated > h.sent) {
        handlers.onTokens(h, h.sent, r.generated);
        h.sent = r.generated;
      }
      if (r.status === "finished") {
        h.done = true;
        this.held.delete(h);
        handlers.onFinish(h, r);
      }
    }
    if (this.held.size === 0) this.stop();
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /**
   * The process goes away. `answer` writes the engine's last words to a held request (a restart's
   * error); without it every connection is just dropped (a crash).
   */
  async release(answer?: (h: Held) => void): Promise<void> {
    const all = [...this.held.keys()];
    this.held.clear();
    this.stop();
    const flushed = all.map(
      (h) =>
        new Promise<void>((resolve) => {
          h.done = true;
          h.res.once("close", resolve);
          h.res.once("finish", resolve);
          if (answer && !h.res.destroyed) answer(h);
          else h.res.destroy();
          // Resolved once the last words are handed to the socket ("finish"), not when merely
          // written: the server cuts every connection right after this.
          if (h.res.destroyed || h.res.writableFinished) resolve();
        }),
    );
    await Promise.race([Promise.all(flushed), new Promise((r) => setTimeout(r, 1000))]);
  }
}

/**
 * Answers waiting on an engine loop that does not run (a hung scheduler, a blocked decode loop):
 * given when it runs again, dropped with the process.
 */
export class Parked {
  private readonly waiting = new Set<{ res: ServerResponse; answer: () => void }>();

  get size(): number {
    return this.waiting.size;
  }

  /** Answer now when the loop runs, else hold the answer until `resume()`. */
  answerWhen(running: boolean, res: ServerResponse, answer: () => void): void {
    if (running) return answer();
    const p = { res, answer };
    this.waiting.add(p);
    res.on("close", () => this.waiting.delete(p));
  }

  resume(): void {
    const all = [...this.waiting];
    this.waiting.clear();
    for (const p of all) if (!p.res.destroyed) p.answer();
  }

  drop(): void {
    for (const p of this.waiting) p.res.destroy();
    this.waiting.clear();
  }
}

/**
 * The open requests of a front whose engine loop can hang (llama.cpp, SGLang, TGI): generations
 * held until the core finishes them and answers parked on the loop. Both count as in flight, and
 * both end with the process: parked answers are dropped, held requests released (their connection
 * ends, as when the engine exits on SIGTERM).
 */
export abstract class HeldFront {
  protected readonly held: HeldRequests;
  protected readonly parked = new Parked();

  constructor(model: VllmSimModel) {
    this.held = new HeldRequests(model);
  }

  async shutdown(): Promise<void> {
    this.parked.drop();
    await this.held.release();
  }

  inFlight(): number {
    return this.held.size + this.parked.size;
  }
}

/**
 * A front with no modes of its own (SGLang, TGI): every mode is the core's, and when the core runs
 * normally again the answers parked on its loop go out.
 */
export abstract class ModelessFront extends HeldFront {
  abstract readonly kind: EngineKind;

  /** `label`: the engine's name in the error for a mode it does not have. */
  constructor(
    model: VllmSimModel,
    private readonly label: string,
  ) {
    super(model);
  }

  handlesMode(_mode: string): _mode is FrontMode {
    return false;
  }

  setMode(mode: FrontMode): void {
    throw new Error(`${this.label} has no "${mode}" mode`);
  }

  onLiveMode(mode: LiveMode): void {
    if (mode === "normal") this.parked.resume();
  }

  state(): FrontState {
    return { engine: this.kind, sleeping: false, loadingUntil: null, wokenBy: [], processStartHeader: null };
  }
}

/**
 * What the core finished in this process, over HTTP or not: the engines' "counted when a request
 * ends" counters come from here, so a background load finishes requests like clients do.
 */
export function finishedInCore(model: VllmSimModel): { requests: number; promptTokens: number; generationTokens: number; received: number } {
  const out = { requests: 0, promptTokens: 0, generationTokens: 0, received: 0 };
  for (const e of model.engines) {
    const s = e.stats;
    out.requests += s.finishedTotal - s.finished.abort;
    out.promptTokens += s.requestPromptTokens.sum;
    out.generationTokens += s.requestGenerationTokens.sum;
    out.received += s.finishedTotal + e.numRunning + e.numWaiting;
  }
  return out;
}

/** Text of output tokens [from, to): the same deterministic words as the vLLM simulator. */
export { tokensText } from "../openai";

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
