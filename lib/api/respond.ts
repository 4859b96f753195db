/**
 * The one error mapping of route handlers: a DomainError becomes its HTTP status (lib/errors.ts),
 * anything else a 500 whose body says nothing about internals (the log has the stack).
 */
import { csvResponse } from "../csv";
import { DomainError, httpStatus } from "../errors";

export function errorResponse(e: unknown): Response {
  if (e instanceof DomainError) {
    return Response.json({ error: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) }, { status: httpStatus(e.code) });
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

/** Answers JSON that a verb already serialized and encoded (see getFleetJson). */
export async function respondEncoded(verb: () => Promise<Uint8Array>): Promise<Response> {
  try {
    return new Response(await verb() as Uint8Array<ArrayBuffer>, { headers: { "content-type": "application/json", "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
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
