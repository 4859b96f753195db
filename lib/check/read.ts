/**
 * Measure, never judge: turn a backend's answers into a Reading (or a ProbeResult, a
 * ProxyReading). A failed fetch is data in the Reading, never an exception. The only requests
 * made are GET /metrics, GET /health (only when /metrics failed at the connection level), GET
 * /v1/models (only when /metrics is not vLLM's, or to name the model for a probe) and the probe
 * itself, which the caller sends only after `shouldProbe` said so.
 */
import type { Dispatcher } from "undici";
import { parseVllmMetrics } from "../metrics/vllm";
import { httpRequest } from "../net/http";
import { capList, capText } from "./caps";
import type { ProbeResult, ProxyReading, Reading } from "./types";

export interface BackendTarget {
  url: string;
  apiKey?: string;
  model?: string;
}

export interface ReadOptions {
  /** Deadline of each GET, default 10 s. */
  timeoutMs?: number;
  /** Deadline of the probe, default 10 s (probeTimeoutSeconds). */
  probeTimeoutMs?: number;
  /**
   * Cap on an answer's size, default 2 MB: a real 8-engine /metrics is well under 100 KB (the
   * largest real fixture is 75 KB), and parsing a hostile 8 MB exposition took ~0.5 s of the one
   * event loop every poll, slowing every other backend and the API.
   */
  maxBytes?: number;
  dispatcher?: Dispatcher;
  now?: () => number;
  signal?: AbortSignal;
}

export const READ_DEFAULTS = { timeoutMs: 10_000, probeTimeoutMs: 10_000, maxBytes: 2 * 1024 * 1024 };

/** `path` appended to the base URL's path; a query in the configured URL (a token) is kept. */
export function endpoint(base: string, path: string): string {
  try {
    const url = new URL(base);
    url.pathname = url.pathname.replace(/\/+$/, "") + path;
    return url.href;
  } catch {
    return base.replace(/\/+$/, "") + path; // not a URL: httpRequest reports it as a failed read
  }
}

function authHeaders(apiKey?: string): Record<string, string> {
  return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
}

export async function readBackend(target: BackendTarget, opts: ReadOptions = {}): Promise<Reading> {
  const reading = await readBackendUncapped(target, opts);
  // The error may quote what the backend sent: bounded like everything kept from it (caps.ts).
  if (reading.error !== undefined) reading.error = capText(reading.error);
  return reading;
}

async function readBackendUncapped(target: BackendTarget, opts: ReadOptions): Promise<Reading> {
  const now = opts.now ?? Date.now;
  const timeoutMs = opts.timeoutMs ?? READ_DEFAULTS.timeoutMs;
  const maxBytes = opts.maxBytes ?? READ_DEFAULTS.maxBytes;
  const common = { timeoutMs, maxBytes, dispatcher: opts.dispatcher, signal: opts.signal };
  const at = now();
  const res = await httpRequest(endpoint(target.url, "/metrics"), {
    ...common,
    headers: { accept: "text/plain", ...authHeaders(target.apiKey) },
  });
  const reading: Reading = { at, latencyMs: res.latencyMs, outcome: res.outcome, status: res.status, metrics: null, bytes: res.bytes };

  if (res.outcome === "refused" || res.outcome === "reset") {
    // "down" needs /health to fail too; it is cheap and takes no request slot.
    const health = await httpRequest(endpoint(target.url, "/health"), { ...common, maxBytes: 64 * 1024 });
    reading.health = { outcome: health.outcome, status: health.status };
    reading.bytes = (reading.bytes ?? 0) + health.bytes;
    reading.error = res.error;
    return reading;
  }

  const answeredNotVllm = res.outcome === "http-error" && (res.status === 404 || res.status === 405 || res.status === 410);
  if (res.outcome === "ok") {
    const parsed = parseVllmMetrics(res.body);
    if (parsed.metrics) {
      reading.metrics = parsed.metrics;
      if (parsed.latency) reading.latency = parsed.latency;
      return reading;
    }
    reading.error = parsed.error ?? "no vLLM metrics";
  } else if (answeredNotVllm) {
    reading.error = `/metrics answered HTTP ${res.status}`;
  } else {
    reading.error = res.error;
    return reading;
  }

  // Reachable, but not vLLM's metrics: liveness comes from /v1/models only.
  reading.noMetrics = true;
  const models = await listModels(target, opts);
  reading.models = { outcome: models.outcome, status: models.status, ids: models.models };
  reading.bytes = (reading.bytes ?? 0) + models.bytes;
  return reading;
}

async function listModels(
  target: { url: string; apiKey?: string },
  opts: ReadOptions,
): Promise<{ outcome: Reading["outcome"]; status?: number; models: string[]; bytes: number; latencyMs: number; error?: string }> {
  const res = await httpRequest(endpoint(target.url, "/v1/models"), {
    timeoutMs: opts.timeoutMs ?? READ_DEFAULTS.timeoutMs,
    maxBytes: Math.min(opts.maxBytes ?? READ_DEFAULTS.maxBytes, 1024 * 1024),
    dispatcher: opts.dispatcher,
    signal: opts.signal,
    headers: { accept: "application/json", ...authHeaders(target.apiKey) },
  });
  if (res.outcome !== "ok") return { outcome: res.outcome, status: res.status, models: [], bytes: res.bytes, latencyMs: res.latencyMs, error: res.error };
  try {
    const json = JSON.parse(res.body) as { data?: Array<{ id?: unknown }> };
    if (!Array.isArray(json.data)) throw new Error("no data array");
    const models = capList(json.data.map((m) => m.id).filter((id): id is string => typeof id === "string"));
    return { outcome: "ok", status: res.status, models, bytes: res.bytes, latencyMs: res.latencyMs };
  } catch (err) {
    return {
      outcome: "error",
      status: res.status,
      models: [],
      bytes: res.bytes,
      latencyMs: res.latencyMs,
      error: capText(`/v1/models is not an OpenAI model list (${(err as Error).message})`),
    };
  }
}

/**
 * The tiny probe: one completion of one token, aborted at its deadline (the abort closes the
 * connection, which makes vLLM drop the request instead of finishing it for nobody). The caller
 * guarantees nothing is running or waiting, so the answer should be immediate.
 */
export async function probeBackend(target: BackendTarget, opts: ReadOptions & { model?: string } = {}): Promise<ProbeResult> {
  const now = opts.now ?? Date.now;
  const at = now();
  const timeoutMs = opts.probeTimeoutMs ?? READ_DEFAULTS.probeTimeoutMs;
  const started = performance.now();
  let model = target.model ?? opts.model;
  if (!model) {
    const listed = await listModels(target, { ...opts, timeoutMs });
    model = listed.models[0];
    if (!model) {
      return { ok: false, at, latencyMs: Math.round(performance.now() - started), status: listed.status, error: `no model to probe: ${listed.error ?? "empty /v1/models"}` };
    }
  }
  const remaining = Math.max(1, timeoutMs - (performance.now() - started));
  const res = await httpRequest(endpoint(target.url, "/v1/completions"), {
    method: "POST",
    timeoutMs: remaining,
    maxBytes: 256 * 1024,
    dispatcher: opts.dispatcher,
    signal: opts.signal,
    headers: { "content-type": "application/json", accept: "application/json", ...authHeaders(target.apiKey) },
    body: JSON.stringify({ model, prompt: "ping", max_tokens: 1, temperature: 0, stream: false }),
  });
  const latencyMs = Math.round(performance.now() - started);
  if (res.outcome === "ok") return { ok: true, at, latencyMs, status: res.status };
  return { ok: false, at, latencyMs, status: res.status, error: capText(res.error ?? res.outcome) };
}

/**
 * A proxy is only ever asked GET /v1/models. Behind least-connection balancing each read of
 * /metrics may come from a different backend, so its counters would compare two servers.
 */
export async function readProxy(target: { url: string; apiKey?: string }, opts: ReadOptions = {}): Promise<ProxyReading> {
  const at = (opts.now ?? Date.now)();
  const res = await listModels(target, opts);
  return { at, latencyMs: res.latencyMs, outcome: res.outcome, status: res.status, error: res.error === undefined ? undefined : capText(res.error), models: res.models };
}
