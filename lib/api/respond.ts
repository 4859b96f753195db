/**
 * The one error mapping of route handlers: a DomainError becomes its HTTP status (lib/core/errors.ts),
 * anything else a 500 whose body says nothing about internals (the log has the stack).
 */
import { csvResponse } from "./csv";
import { DomainError, httpStatus } from "../core/errors";
import type { EncodedJson } from "./fleet";

export function errorResponse(e: unknown): Response {
  if (e instanceof DomainError) {
    const headers: Record<string, string> = {};
    // Every throttled answer (sign-in, a Bearer token) says when to come back.
    if (e.code === "rate-limited" && typeof e.details?.retryAfterSeconds === "number") headers["retry-after"] = String(e.details.retryAfterSeconds);
    return Response.json({ error: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) }, { status: httpStatus(e.code), headers });
  }
  // The database refused (locked by another process past the short busy wait, full disk, read-only):
  // a 503 with the reason, never a 500 (db/client.ts: a write waits at most BUSY_TIMEOUT_MS).
  const code = (e as { code?: unknown })?.code;
  if (typeof code === "string" && code.startsWith("SQLITE_")) {
    const res = errorResponse(new DomainError("unavailable", `the database cannot be used now (${code}): try again shortly`));
    res.headers.set("retry-after", "1");
    return res;
  }
  console.error("stepwatch: unexpected error in a route:", e);
  return Response.json({ error: "internal", message: "internal error (see the server log)" }, { status: 500 });
}

/** Runs a lib verb and answers its result as JSON (no caching: every answer is live). */
export async function respond<T>(verb: () => Promise<T> | T, status = 200): Promise<Response> {
  try {
    return Response.json(await verb(), { status, headers: { "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}

/**
 * Answers JSON that a verb already serialized and encoded (lib/api/fleet cachedEncoding): 304
 * with no body when the request's If-None-Match names these bytes, else the bytes. "no-cache"
 * (not "no-store") lets a browser keep the answer and ask again with its ETag each time: always
 * revalidated, never stale. Compression is next start's (gzip when the client accepts it): a route
 * handler's own Content-Encoding is not passed on by Next, so a body gzipped here would arrive
 * undeclared.
 */
export async function respondEncoded(req: Request, verb: () => Promise<EncodedJson>): Promise<Response> {
  try {
    const enc = await verb();
    const headers: Record<string, string> = { etag: enc.etag, "cache-control": "no-cache" };
    if (etagMatches(req.headers.get("if-none-match"), enc.etag)) return new Response(null, { status: 304, headers });
    headers["content-type"] = "application/json";
    return new Response(enc.body as unknown as BodyInit, { headers });
  } catch (e) {
    return errorResponse(e);
  }
}

/** If-None-Match: "*", or a comma-separated list of (possibly weak, W/"...") tags. */
export function etagMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === "*") return true;
  return ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
}

/**
 * `?format=csv` or JSON: one verb, two encodings. Anything but "json" and "csv" is a 400 naming
 * the field. Errors stay JSON either way (a script reading the CSV gets a status it can check).
 */
export async function respondAs<T>(format: string | null, filename: string, verb: () => Promise<T> | T, csv: (v: T) => string): Promise<Response> {
  if (format !== null && format !== "json" && format !== "csv") {
    return errorResponse(new DomainError("bad-request", `format: must be "json" or "csv", not "${format.slice(0, 20)}"`));
  }
  if (format !== "csv") return respond(verb);
  try {
    return csvResponse(csv(await verb()), filename);
  } catch (e) {
    return errorResponse(e);
  }
}
