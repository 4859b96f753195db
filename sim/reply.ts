/**
 * The simulator's HTTP plumbing, shared by the vLLM routes (server.ts) and the admin API
 * (admin.ts): JSON answers and capped request bodies.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBodyCapped } from "./body";
import { BadRequest } from "./openai";

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
