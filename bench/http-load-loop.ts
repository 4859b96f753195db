/**
 * The dashboard bench's load generator: `clients` loops, each sending the next request when its
 * answer is read. It runs in a fresh process of its own (bench/http-load-client.ts, started by
 * bench/http-load.ts runHttpLoad), apart from what the bench's main process holds from the
 * sections before: a latency it measures includes its own pauses, and its own CPU and GC are
 * reported beside each figure (`generator`) so a reader can tell them from the server's.
 */
import { PerformanceObserver } from "node:perf_hooks";
import { Pool } from "undici";
import { percentile, round } from "./stats";

export interface LoadStats {
  clients: number;
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  responseBytes: number;
  /** As a browser: answers 304 to the If-None-Match of the client's last ETag. */
  notModified?: number;
  /** The load generator's own garbage collection in the window: its pauses are in every latency measured. */
  generator?: { gcMsPerSecond: number; gcMaxMs: number; cpuCores: number };
}

export interface LoadAsk {
  base: string;
  path: string;
  clients: number;
  seconds: number;
  maxRequests: number;
  /**
   * Send what a browser's HTTP cache does: Accept-Encoding gzip and, once it has an answer,
   * If-None-Match with that answer's ETag (a 304 counts as an answer, with no body).
   */
  asBrowser?: boolean;
}

/** Runs the loops in this process (bench/http-load-client.ts calls it; bench/http-load.ts starts that). */
export async function loadTest(ask: LoadAsk): Promise<LoadStats> {
  const { clients, seconds, maxRequests } = ask;
  const asBrowser = ask.asBrowser === true;
  const pool = new Pool(ask.base, { connections: clients });
  let gcMs = 0;
  let gcMaxMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcMs += e.duration;
      if (e.duration > gcMaxMs) gcMaxMs = e.duration;
    }
  });
  gc.observe({ entryTypes: ["gc"] });
  const ms: number[] = [];
  let errors = 0;
  let bytes = 0;
  let notModified = 0;
  const cpu0 = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  const one = async () => {
    let etag: string | null = null;
    while (performance.now() < end && ms.length + errors < maxRequests) {
      const s = performance.now();
      try {
        const headers: Record<string, string> = asBrowser ? { "accept-encoding": "gzip" } : {};
        if (asBrowser && etag) headers["if-none-match"] = etag;
        const res = await pool.request({ path: ask.path, method: "GET", headers });
        const body = await res.body.arrayBuffer();
        if (res.statusCode === 304 && asBrowser && etag) {
          ms.push(performance.now() - s);
          notModified++;
        } else if (res.statusCode !== 200) errors++;
        else {
          ms.push(performance.now() - s);
          bytes = body.byteLength;
          const e = res.headers.etag;
          etag = typeof e === "string" ? e : null;
        }
      } catch {
        errors++;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: clients }, one));
  } finally {
    gc.disconnect();
    await pool.close();
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    clients,
    requests: ms.length,
    seconds: round(wall, 1),
    requestsPerSecond: round(ms.length / wall, 1),
    p50Ms: round(percentile(ms, 50), 2),
    p99Ms: round(percentile(ms, 99), 2),
    maxMs: round(ms.reduce((m, x) => (x > m ? x : m), 0), 2),
    errors,
    responseBytes: bytes,
    ...(asBrowser ? { notModified } : {}),
    generator: { gcMsPerSecond: round(gcMs / wall, 1), gcMaxMs: round(gcMaxMs, 1), cpuCores: round((cpu.user + cpu.system) / 1e6 / wall, 2) },
  };
}

