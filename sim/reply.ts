/**
 * The simulator's HTTP plumbing, shared by the vLLM routes (engines/vllm.ts), the admin API
 * (admin.ts) and the server: JSON answers, capped request bodies, errors in vLLM's shape.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBodyCapped } from "./body";
import { BadRequest, errorBody } from "./openai";

export const MAX_BODY_BYTES = 4 * 1024 * 1024;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function readBody(req: IncomingMessage): Promise<string> {
  return readBodyCapped(req, MAX_BODY_BYTES, {
    tooLarge: () => new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`),
    closed: () => new HttpError(400, "client closed the connection before the body ended"),
  }).then((b) => b.toString("utf8"));
}

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const text = await readBody(req);
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequest("request body is not valid JSON");
  }
}

/**
 * A request that failed: a BadRequest in vLLM's error body, an HttpError with its status, anything
 * else a 500. An answer already under way (a stream) can only be cut.
 */
export function answerError(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof BadRequest) sendJson(res, err.status, errorBody(err.message, err.type, err.status));
  else if (err instanceof HttpError) sendJson(res, err.status, { error: err.message });
  else sendJson(res, 500, { error: `simulator error: ${(err as Error).message}` });
}
