/**
 * The browser's JSON client for SWR and the forms. An error answer becomes an ApiError carrying
 * the HTTP status and the server's message ({error: code, message, details}, lib/api/respond), so components can show the
 * server's own words ("already restarting") instead of a generic failure.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

async function parse<T>(res: Response): Promise<T> {
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON: fall through with the raw text */
  }
  if (!res.ok) {
    const b = (body ?? {}) as { error?: string; message?: string; details?: Record<string, unknown> };
    throw new ApiError(res.status, b.message ?? (text.slice(0, 200) || `HTTP ${res.status}`), b.error, b.details);
  }
  return body as T;
}

export async function getJson<T>(url: string): Promise<T> {
  // "no-cache": the browser keeps an answer that carries an ETag and asks again with it every time
  // (a 304 then costs no body); an answer marked no-store by the server is never kept.
  return parse<T>(await fetch(url, { headers: { accept: "application/json" }, cache: "no-cache" }));
}

export async function sendJson<T>(url: string, method: "POST" | "PUT" | "DELETE", body?: unknown): Promise<T> {
  return parse<T>(
    await fetch(url, {
      method,
      headers: { "content-type": "application/json", accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}
