/**
 * Request bodies of the write routes: capped before parsing (a route must not buffer megabytes
 * an attacker sends), JSON-parsed, zod-validated; every failure is a DomainError the one mapper
 * (lib/api/respond) turns into 413 / 400 with a message naming the field.
 */
import type { z } from "zod";
import { DomainError } from "@/lib/core/errors";

export const MAX_BODY_BYTES = 4 * 1024;

/** application/json, with or without parameters (charset); nothing else (a form, text/plain). */
export function isJsonContentType(v: string | null): boolean {
  return v !== null && /^application\/json\s*(;|$)/i.test(v.trim());
}

export async function readJson<S extends z.ZodType>(req: Request, schema: S, maxBytes = MAX_BODY_BYTES): Promise<z.infer<S>> {
  // A cross-site <form> can only send form encodings or text/plain: JSON-only closes that door too.
  if (!isJsonContentType(req.headers.get("content-type"))) {
    throw new DomainError("unsupported-media-type", `content-type must be application/json (got ${JSON.stringify((req.headers.get("content-type") ?? "none").slice(0, 60))})`);
  }
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw new DomainError("too-large", `request body over ${maxBytes} bytes`);
  let text = "";
  if (req.body) {
    const reader = req.body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw new DomainError("too-large", `request body over ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
    text = Buffer.concat(chunks).toString("utf8");
  }
  let json: unknown = {};
  if (text.trim() !== "") {
    try {
      json = JSON.parse(text);
    } catch {
      throw new DomainError("bad-request", "the body is not valid JSON");
    }
  }
  const r = schema.safeParse(json);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new DomainError("bad-request", `${i.path.join(".") || "body"}: ${i.message}`);
  }
  return r.data;
}
