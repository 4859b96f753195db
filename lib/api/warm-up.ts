/**
 * The server renders its fleet page once for itself as soon as it can answer. The first page a
 * `next start` process renders pays for loading and compiling Next's page runtime and React's
 * server renderer: the 500-backend fleet page took 756 ms as the first render after a start and
 * 110-150 ms after it, on the 2-core test machine (bench/RESULTS.md section 9). The first person to
 * open a dashboard after a deploy or a restart of stepwatch is often there because something is
 * down; they get the second figure.
 *
 * Next has no hook for this, so it is an ordinary HTTP request to the server's own address (what
 * `next start` stored in __NEXT_PRIVATE_ORIGIN when it began listening; Next holds requests until
 * its handlers are ready). It carries no credentials: with `access.read` "signed-in" the fleet
 * page answers 303 to /signin, and that page is rendered instead (the same runtime warms). A GET
 * changes nothing, writes no audit line and takes no sign-in attempt. A failure is logged and
 * otherwise ignored: the next render is then simply the first.
 */
import { httpRequest, type HttpResult } from "../net/http";

/** A cold render under a loaded machine takes seconds, never this long; past it, give up quietly. */
const WARM_UP_TIMEOUT_MS = 60_000;
/** The fleet page at 5000 backends is ~2.5 MB of HTML; the answer is read only to be dropped. */
const WARM_UP_MAX_BYTES = 32 * 1024 * 1024;

export interface WarmUpResult {
  /** The paths requested, in order: "/", then the sign-in page when "/" sent there. */
  paths: string[];
  status: number | null;
  ms: number;
  error?: string;
}

/**
 * Asks `origin` for "/" (and, when it redirects within the same origin, that page) and reports
 * what it got. Never throws.
 */
export async function warmUp(origin: string): Promise<WarmUpResult> {
  const started = performance.now();
  const get = (url: string): Promise<HttpResult> => httpRequest(url, { timeoutMs: WARM_UP_TIMEOUT_MS, maxBytes: WARM_UP_MAX_BYTES, headers: { "user-agent": "stepwatch warm-up" } });
  const paths = ["/"];
  let r = await get(new URL("/", origin).href);
  const location = r.status !== undefined && r.status >= 300 && r.status < 400 ? r.headers?.location : undefined;
  if (typeof location === "string") {
    const next = new URL(location, origin);
    if (next.origin === new URL(origin).origin) {
      paths.push(next.pathname);
      r = await get(next.href);
    }
  }
  const ms = Math.round(performance.now() - started);
  return { paths, status: r.status ?? null, ms, ...(r.outcome === "ok" ? {} : { error: r.error ?? r.outcome }) };
}

/**
 * From instrumentation.ts under `next start`: warms the server in the background (never awaited:
 * Next holds the request until register() has returned and its handlers are ready).
 */
export function warmUpInBackground(): void {
  const origin = process.env.__NEXT_PRIVATE_ORIGIN;
  if (!origin || process.env.NODE_ENV !== "production") return;
  setImmediate(() => {
    void warmUp(origin).then((w) => {
      const what = `${w.paths.join(" then ")} (${w.status ?? "no answer"}, ${w.ms} ms)`;
      if (w.error) console.warn(`stepwatch: warm-up render of ${what} failed: ${w.error}; the first page asked renders cold`);
      else console.log(`stepwatch: rendered ${what} once at start, so that the first page an operator opens is not the server's first render`);
    });
  });
}
