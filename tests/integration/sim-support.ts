/** Small real-HTTP helpers for the simulator's integration tests (no mocks, bounded waits). */
import http from "node:http";

export interface Answer {
  status?: number;
  headers?: http.IncomingHttpHeaders;
  body: string;
  /** Connection-level error code (ECONNREFUSED, ECONNRESET...) when there was no answer. */
  error?: string;
}

/**
 * One request on a fresh connection (no keep-alive pool), so "refused" really means nothing
 * listens now. Never throws; gives up after timeoutMs.
 */
export function call(
  url: string,
  opts: { method?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<Answer> {
  return new Promise((resolve) => {
    const body = opts.body === undefined ? undefined : typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
    const headers: Record<string, string> = { ...opts.headers };
    if (body !== undefined) {
      headers["content-type"] ??= "application/json";
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    const req = http.request(url, { method: opts.method ?? (body === undefined ? "GET" : "POST"), headers, agent: false, signal: opts.signal, timeout: opts.timeoutMs ?? 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (err: NodeJS.ErrnoException) => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8"), error: err.code ?? err.message }));
    });
    req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "TIMEOUT" })));
    req.on("error", (err: NodeJS.ErrnoException) => resolve({ body: "", error: err.code ?? err.name ?? err.message }));
    req.end(body);
  });
}

/** Poll until `check` returns a truthy value (returned), or fail naming what was awaited. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 10_000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
