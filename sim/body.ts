import type { IncomingMessage } from "node:http";

/**
 * A request body of at most `maxBytes`; past that the request is destroyed and `tooLarge()`
 * rejects. A client that leaves mid-body sends neither "end" nor "error", so "close" rejects too
 * (after "end" it changes nothing: the promise is already settled).
 */
export function readBodyCapped(
  req: IncomingMessage,
  maxBytes: number,
  errors: { tooLarge: () => Error; closed: () => Error },
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) {
        reject(errors.tooLarge());
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
    req.on("close", () => reject(errors.closed()));
  });
}
