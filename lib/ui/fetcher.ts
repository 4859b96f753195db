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

/** SWR's default dedupingInterval (swr 2.x): a refresh inside it reuses the last answer instead of asking. */
export const SWR_DEFAULT_DEDUPE_MS = 2000;

/**
 * SWR options that really poll every `ms`. SWR's refresh timer revalidates *with* dedupe, so an
 * interval shorter than dedupingInterval (2 s by default) skips every other tick: the fleet page's
 * "1.5 s" was a request every 3 s. The dedupe window is kept under the interval, and the text a
 * page shows is made from the same number (`refreshText`).
 */
export function polling(ms: number): { refreshInterval: number; dedupingInterval: number } {
  return { refreshInterval: ms, dedupingInterval: Math.min(SWR_DEFAULT_DEDUPE_MS, Math.floor(ms / 2)) };
}

/** "refreshes every 1.5 s": what a page says about its own polling, from the options it passes SWR. */
export function refreshText(o: { refreshInterval: number; dedupingInterval?: number }): string {
  // The interval a person sees: each tick inside the dedupe window is skipped (see `polling`).
  const dedupe = o.dedupingInterval ?? SWR_DEFAULT_DEDUPE_MS;
  const effective = o.refreshInterval * Math.max(1, Math.ceil(dedupe / o.refreshInterval));
  return `refreshes every ${effective / 1000} s`;
}
