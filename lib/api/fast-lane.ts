/**
 * The fleet's fast lane: `GET` and `HEAD` of exactly `/api/fleet` answered in the HTTP server's
 * own "request" event (lib/net/net-policy installPeerHeader offers every request to the lane),
 * before Next's per-request pipeline (its router, the Proxy, the route handler), which alone
 * costs more than the whole answer (docs/decisions.md, "The fleet's fast lane").
 *
 * It answers only when it is sure the answer is the one Next would give:
 * - the server is Next's own (`next start`: the one listening on process.env.PORT, which Next
 *   sets), never another server of this process (the demo fleet's simulators);
 * - the request is `GET`/`HEAD` of the path `/api/fleet` with no query string;
 * - the admission (lib/api/admission.ts `admit`, the same function proxy.ts calls) lets it in:
 *   the runtime has started, the Host is allowed, the read gate passes;
 * - the encoding Next's compression would choose is gzip or none (deflate is left to Next);
 * - the fleet's bytes are at hand (lib/api/fleet getFleetJson: the one process-wide cache the
 *   route handler uses too, so both lanes name the same bytes with the same ETag).
 * In every other case (a refusal, an error, another method or path) it does nothing and Next
 * answers as it always did. What it sends is what the route sends (respondEncoded) with the
 * headers proxy.ts adds and the gzip Next's compression applies: status, body, ETag and 304,
 * cache-control, content-type, Vary: Accept-Encoding, the CSP and security headers. Next's
 * `Vary: rsc, next-router-*` is not sent: it tells caches about React Server Component requests,
 * which a JSON route does not answer differently.
 *
 * The same rules make a second lane for a backend's JSON history (historyLane, below): what it
 * answers is the route's own answer for that range, and anything it is not sure of is Next's.
 *
 * STEPWATCH_FLEET_FAST_LANE=off leaves every request to Next (the escape hatch; the parity tests
 * use it to get Next's own answer).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import Negotiator from "negotiator";
// Next's own cookie parser (what request.cookies is in proxy.ts), so both lanes read one session.
import { RequestCookies } from "next/dist/compiled/@edge-runtime/cookies";
import { admit, answerHeaders, type AdmissionRequest } from "./admission";
import { setRequestLane, type HeaderSource, type RequestLane } from "../net/net-policy";
import { getFleetJson, getHistory, type EncodedJson } from "./fleet";
import { ID_PATTERN } from "../config";
import { historyRange } from "./history-query";
import { etagMatches } from "./respond";
import type { HistoryResponse } from "./types";

export const FAST_LANE_ENV = "STEPWATCH_FLEET_FAST_LANE";
export const FLEET_PATH = "/api/fleet";

const gzipAsync = promisify(gzip);

/** "off" (or "0", "false") turns the lane off; unset, "on", "1", "true" keep it on. Anything else throws naming the variable. */
export function fastLaneEnabled(value: string | undefined): boolean {
  const v = (value ?? "").trim().toLowerCase();
  if (v === "" || v === "on" || v === "1" || v === "true") return true;
  if (v === "off" || v === "0" || v === "false") return false;
  throw new Error(`${FAST_LANE_ENV}: "${value!.slice(0, 40)}" is not "on" or "off"`);
}

const encodingMemo = new Map<string | undefined, "gzip" | "deflate" | "identity">();

/**
 * The encoding next start's compression (the `compression` package, which asks `negotiator`)
 * would choose for a JSON answer: gzip whenever gzip is acceptable, else the client's preference
 * among deflate and identity. "deflate" is Next's to answer.
 */
export function encodingFor(acceptEncoding: string | undefined): "gzip" | "deflate" | "identity" {
  const memo = encodingMemo.get(acceptEncoding);
  if (memo) return memo;
  const n = new Negotiator({ headers: { "accept-encoding": acceptEncoding } });
  let chosen: string | undefined = n.encodings(["gzip", "deflate", "identity"])[0];
  if (chosen === "deflate" && n.encodings(["gzip"]).length > 0) chosen = n.encodings(["gzip", "identity"])[0];
  const result = chosen === "gzip" ? "gzip" : chosen === "deflate" ? "deflate" : "identity";
  // Browsers send the same few values on every request; the memo is bounded against any others.
  if (encodingMemo.size >= 64) encodingMemo.clear();
  encodingMemo.set(acceptEncoding, result);
  return result;
}

/** Node's header map as what admission reads (values joined as a fetch Headers joins them). */
function headerSource(h: IncomingMessage["headers"]): HeaderSource {
  return {
    get(name: string) {
      const v = h[name];
      return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
    },
  };
}

/** The gzip of the current bytes, made once per ETag however many clients ask. */
let gzipped: { etag: string; body: Promise<Buffer> } | null = null;
function gzipOf(enc: EncodedJson): Promise<Buffer> {
  if (gzipped?.etag !== enc.etag) {
    const entry = { etag: enc.etag, body: gzipAsync(enc.body) };
    gzipped = entry;
    entry.body.catch(() => {
      if (gzipped === entry) gzipped = null;
    });
  }
  return gzipped.body;
}

let failures = 0;
let lastLogged = 0;
function logFailure(e: unknown): void {
  failures++;
  const now = Date.now();
  if (now - lastLogged < 60_000) return; // one line a minute at most: Next answered each of them
  lastLogged = now;
  console.error(`stepwatch: the fast lane (GET /api/fleet, a history) failed (${failures} time(s) so far); Next answered:`, e);
}

/** Next's server under `next start` is the one listening on the port Next put in process.env.PORT. */
const isNextServer = new WeakMap<object, boolean>();
function nextsServer(server: object): boolean {
  const known = isNextServer.get(server);
  if (known !== undefined) return known;
  const port = process.env.PORT;
  const addr = (server as { address?: () => AddressInfo | string | null }).address?.();
  if (!port || !addr || typeof addr === "string") return false; // not decided yet: ask again next time
  const yes = String(addr.port) === port;
  isNextServer.set(server, yes);
  return yes;
}

/** What the lanes read; replaced only by the unit tests (to make them fail on purpose). */
export interface LaneSources {
  admit: typeof admit;
  fleetJson: () => Promise<EncodedJson>;
  history: (id: string, from: number, to: number) => Promise<HistoryResponse>;
}
const REAL: LaneSources = { admit, fleetJson: () => getFleetJson(), history: (id, from, to) => getHistory(id, from, to) };

/** The admission proxy.ts would give this request (cookies parsed only if the gate asks for them). */
function admitted(headers: HeaderSource, pathname: string, search: string, src: LaneSources) {
  let jar: RequestCookies | null = null;
  const cookies: AdmissionRequest["cookies"] = { get: (name) => (jar ??= new RequestCookies(headers as Headers)).get(name) };
  // judgeOnly: a refusal here goes on to Next, whose admission counts a wrong Bearer token once.
  return src.admit({ headers, cookies, pathname, search, judgeOnly: true });
}

/** Answers and returns true, or returns false having written nothing (Next answers then). */
async function answer(req: IncomingMessage, res: ServerResponse, encoding: "gzip" | "identity", src: LaneSources): Promise<boolean> {
  const headers = headerSource(req.headers);
  const a = await admitted(headers, FLEET_PATH, "", src);
  if (!a.ok) return false;
  const enc = await src.fleetJson();
  const out: Array<[string, string]> = [...answerHeaders(a), ["etag", enc.etag], ["cache-control", "no-cache"], ["vary", "Accept-Encoding"]];
  if (etagMatches(headers.get("if-none-match"), enc.etag)) {
    res.writeHead(304, out.flat());
    res.end();
    return true;
  }
  const body = encoding === "gzip" ? await gzipOf(enc) : enc.body;
  out.push(["content-type", "application/json"], ["content-length", String(body.byteLength)]);
  if (encoding === "gzip") out.push(["content-encoding", "gzip"]);
  res.writeHead(200, out.flat());
  if (req.method === "HEAD") res.end();
  else res.end(body);
  return true;
}

/** Waits for a lane's answer; when it declined (false) or failed before writing, Next answers. */
function settle(res: ServerResponse, toNext: () => void, answering: Promise<boolean>): void {
  const handOver = () => {
    try {
      toNext();
    } catch (e) {
      // Next's listener is async and never throws here; should it, the client is not left waiting.
      logFailure(e);
      res.destroy();
    }
  };
  answering.then(
    (answered) => {
      if (!answered) handOver();
    },
    (e: unknown) => {
      logFailure(e);
      if (!res.headersSent) handOver();
      else res.destroy(); // cannot happen once writeHead returned; never leave a client hanging
    },
  );
}

/** The fleet's lane: synchronous checks first, so every other request costs a comparison or two. */
export function fleetLane(src: LaneSources = REAL): RequestLane {
  return (server, rawReq, rawRes, toNext) => {
    const req = rawReq as IncomingMessage;
    const res = rawRes as ServerResponse;
    if (req.url !== FLEET_PATH || (req.method !== "GET" && req.method !== "HEAD")) return false;
    if (!nextsServer(server)) return false;
    // Next's compression never compresses a HEAD answer.
    const encoding = req.method === "HEAD" ? "identity" : encodingFor(req.headers["accept-encoding"]);
    if (encoding === "deflate") return false;
    settle(res, toNext, answer(req, res, encoding, src));
    return true;
  };
}

/**
 * A backend's history as JSON: `GET /api/backends/{id}/history` with `from`, `to` and `format=json`
 * at most once each and nothing else (the id as lib/config.ts allows it, so the path needs no
 * decoding). A week of one backend cost ~7 ms to build and ~8 ms more through Next's pipeline
 * (bench/RESULTS.md, 4b). The lane answers what the route would answer for the same range
 * (`respond`: the verb's JSON.stringify, no-store); a range the route refuses, an unknown backend
 * or a storage error is left to Next, which answers it with its error mapping. The CSV and HEAD
 * are Next's.
 */
const HISTORY_PATH = new RegExp(`^/api/backends/(${ID_PATTERN})/history(?:\\?([^#]*))?$`);
const HISTORY_KEYS = new Set(["from", "to", "format"]);

/** The history a request asks for when the lane may answer it, else null. */
export function historyAsked(url: string, now: number = Date.now()): { id: string; search: string; from: number; to: number } | null {
  const m = HISTORY_PATH.exec(url);
  if (!m) return null;
  const sp = new URLSearchParams(m[2] ?? "");
  const seen = new Set<string>();
  for (const k of sp.keys()) {
    if (!HISTORY_KEYS.has(k) || seen.has(k)) return null;
    seen.add(k);
  }
  const format = sp.get("format");
  if (format !== null && format !== "json") return null;
  try {
    return { id: m[1], search: m[2] ? `?${m[2]}` : "", ...historyRange(sp, now) };
  } catch {
    return null; // the route's 400
  }
}

async function answerHistory(req: IncomingMessage, res: ServerResponse, encoding: "gzip" | "identity", asked: NonNullable<ReturnType<typeof historyAsked>>, src: LaneSources): Promise<boolean> {
  const a = await admitted(headerSource(req.headers), `/api/backends/${asked.id}/history`, asked.search, src);
  if (!a.ok) return false;
  let history: HistoryResponse;
  try {
    history = await src.history(asked.id, asked.from, asked.to);
  } catch {
    return false; // Next asks again and maps the error (a 404 for an unknown backend, a 503 for storage)
  }
  const json = Buffer.from(JSON.stringify(history));
  const body = encoding === "gzip" ? await gzipAsync(json) : json;
  const out: Array<[string, string]> = [...answerHeaders(a), ["cache-control", "no-store"], ["vary", "Accept-Encoding"], ["content-type", "application/json"], ["content-length", String(body.byteLength)]];
  if (encoding === "gzip") out.push(["content-encoding", "gzip"]);
  res.writeHead(200, out.flat());
  res.end(body);
  return true;
}

export function historyLane(src: LaneSources = REAL): RequestLane {
  return (server, rawReq, rawRes, toNext) => {
    const req = rawReq as IncomingMessage;
    const res = rawRes as ServerResponse;
    if (req.method !== "GET" || !req.url?.startsWith("/api/backends/")) return false;
    const asked = historyAsked(req.url);
    if (!asked || !nextsServer(server)) return false;
    const encoding = encodingFor(req.headers["accept-encoding"]);
    if (encoding === "deflate") return false;
    settle(res, toNext, answerHistory(req, res, encoding, asked, src));
    return true;
  };
}

/** The first of `lanes` that takes the request. */
export function anyLane(...lanes: RequestLane[]): RequestLane {
  return (server, req, res, toNext) => lanes.some((lane) => lane(server, req, res, toNext));
}

/** Installs the lane (from instrumentation.ts, after installPeerHeader), unless STEPWATCH_FLEET_FAST_LANE is off. */
export function installFleetFastLane(env: NodeJS.ProcessEnv = process.env): void {
  let on: boolean;
  try {
    on = fastLaneEnabled(env[FAST_LANE_ENV]);
  } catch (e) {
    console.error(`stepwatch: ${(e as Error).message}; the /api/fleet fast lane is off (Next answers every request)`);
    on = false;
  }
  setRequestLane(on ? anyLane(fleetLane(), historyLane()) : null);
}
