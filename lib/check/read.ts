/**
 * Measure, never judge: turn a backend's answers into a Reading (or a ProbeResult, a
 * ProxyReading). A failed fetch is data in the Reading, never an exception. One sequence for every
 * engine; what each engine adds to it is declared by its adapter (`reads` in lib/engines/<engine>.ts,
 * the `EngineReads` of lib/engines/adapter.ts; docs/engines.md has the table), so nothing here
 * names an engine:
 * - the adapter's look first (`before`: llama.cpp's GET /props), also on the first read of an
 *   `auto` backend: /props says is_sleeping without queuing anything on the engine (on b10573 a
 *   metrics read does not wake a sleeping server either; versions not tried are not relied on).
 * - GET /metrics (an engine without one: its `withoutMetrics` reads instead).
 * - the adapter's liveness path only when /metrics failed at the connection level or timed out
 *   ("down" needs it failing too).
 * - the adapter's `whenEmpty` GET when /metrics is empty (`auto` only).
 * - GET /v1/models only when /metrics is not an engine's, or to name the model for a probe.
 * - The probe itself, which the caller sends only after `shouldProbe` said so.
 */
import type { Dispatcher } from "undici";
import { ADAPTERS, DETECTION_ORDER, detectEngine, rulesOf } from "../engines/registry";
import { isAnswer, type Ask, type EngineAdapter, type KnownAnswer, type ProbeStyle } from "../engines/adapter";
import { readExposition, type Exposition } from "../engines/exposition";
import { hasPrefix, type Index } from "../engines/series";
import { ENGINE_KINDS, ENGINE_LABELS, type EngineChoice, type EngineKind, type EngineMetrics } from "../core/engine";
import { detach, type LineCache } from "../metrics/prometheus";
import { httpRequest, type HttpResult } from "../net/http";
import { capList, capText } from "../core/caps";
import { MAX_RAW_BODY_CHARS } from "../core/evidence";
import type { ProbeChoice, ProbeKind, ProbeResult, ProxyReading, Reading } from "../core/types";
import { LATENCY_EVERY_SECONDS } from "../core/latency";

export interface BackendTarget {
  url: string;
  apiKey?: string;
  model?: string;
  /** Config `engine` (default "auto": detected from its answers). */
  engine?: EngineChoice;
  /** Config `probe` (default "auto"). */
  probe?: ProbeChoice;
}

export interface ReadOptions {
  /** Deadline of each GET, default 10 s. */
  timeoutMs?: number;
  /** Deadline of the probe, default 10 s (probeTimeoutSeconds). */
  probeTimeoutMs?: number;
  /**
   * Cap on an answer's size, default 2 MB: a real 8-engine /metrics is well under 100 KB (the
   * largest real fixture is 75 KB), and parsing a hostile 8 MB exposition took ~0.5 s of the one
   * event loop every poll, slowing every other backend and the API. The other answers (/props,
   * /api/ps, /v1/models, /health, /info) have smaller caps of their own below.
   */
  maxBytes?: number;
  dispatcher?: Dispatcher;
  now?: () => number;
  signal?: AbortSignal;
  /** The engine seen on this backend last (for `auto`): decides whether /props is read first. */
  engineHint?: EngineKind;
  /**
   * This backend's /metrics lines of last time (the watcher keeps one per backend): its engine's
   * families are then read from them where the lines did not change (see LineCache).
   */
  lineCache?: LineCache;
  /** What this backend's reads learned about its filtered exposition (kept beside the line cache). */
  filterMemory?: FilterMemory;
  /**
   * How often a filtered read asks for the whole filter (vLLM's latency histograms) rather than its
   * `lean` part, default LATENCY_EVERY_MS (the config's latencyEverySeconds; 0: every read). Only a
   * read with a FilterMemory asks them: a one-shot read (the CLI) judges no percentile.
   */
  histogramsEveryMs?: number;
  /**
   * Hand the exposition's body back as `reading.rawBody` (cut at MAX_RAW_BODY_CHARS): the watcher
   * keeps the last few per backend for an incident's evidence bundle. The CLI does not ask.
   */
  keepBody?: boolean;
}

/** Default of ReadOptions.histogramsEveryMs (the config's latencyEverySeconds). */
export const LATENCY_EVERY_MS = LATENCY_EVERY_SECONDS * 1000;

/** How long a backend that did not filter is read in full before the filtered GET is tried again. */
export const FILTER_RETRY_MS = 10 * 60_000;

/**
 * Whether a backend's filtered exposition (`reads.filtered`) works, per backend, like the line cache:
 * "try" (not known: ask it), "filtered" (it works), "full" (refused, empty or incomplete: the
 * multiprocess server answers 200 with nothing) or "unfiltered" (the query was ignored: the full
 * body came back, so ask the plain path). A remembered "full"/"unfiltered" is tried again after
 * FILTER_RETRY_MS or when the process start time changes (an upgrade can make it work).
 *
 * And when the whole filter (with the latency histograms) was last asked: the `lean` filter is asked
 * in between (ReadOptions.histogramsEveryMs). A new process start time makes the next read ask the
 * whole filter: the new process's first histograms are what its percentiles are measured from.
 */
export class FilterMemory {
  mode: "try" | "filtered" | "full" | "unfiltered" = "try";
  /** When `mode` was last set. */
  since = 0;
  /** process_start_time_seconds of the last read (null: not exposed). */
  startTime: number | null = null;
  /** When a filtered read last got the whole filter's answer (null: not since this process started). */
  histogramsAt: number | null = null;

  shouldTry(at: number): boolean {
    return this.mode === "try" || this.mode === "filtered" || at - this.since >= FILTER_RETRY_MS;
  }

  /** Whether a filtered read at `at` asks the whole filter (the histograms) rather than its lean part. */
  wantsHistograms(at: number, everyMs: number): boolean {
    return this.histogramsAt === null || at - this.histogramsAt >= everyMs || at < this.histogramsAt;
  }

  set(mode: FilterMemory["mode"], at: number): void {
    this.mode = mode;
    this.since = at;
  }

  /** After a read: a new process is asked the filtered GET again. */
  noteStart(start: number | null | undefined, at: number): void {
    if (start === undefined || start === null) return;
    if (this.startTime !== null && start !== this.startTime) {
      if (this.mode !== "filtered") this.set("try", at);
      this.histogramsAt = null;
    }
    this.startTime = start;
  }
}

export const READ_DEFAULTS = { timeoutMs: 10_000, probeTimeoutMs: 10_000, maxBytes: 2 * 1024 * 1024 };

/** `path` appended to the base URL's path; a query in the configured URL (a token) is kept. */
export function endpoint(base: string, path: string): string {
  try {
    const url = new URL(base);
    const q = path.indexOf("?");
    url.pathname = url.pathname.replace(/\/+$/, "") + (q < 0 ? path : path.slice(0, q));
    // A path's own query (a filtered exposition's name[]) goes after the configured URL's.
    if (q >= 0) url.search = url.search ? `${url.search}&${path.slice(q + 1)}` : path.slice(q);
    return url.href;
  } catch {
    return base.replace(/\/+$/, "") + path; // not a URL: httpRequest reports it as a failed read
  }
}

function authHeaders(apiKey?: string): Record<string, string> {
  return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
}

/**
 * What every GET of one read shares. `retry` is the read's one retry of a stale keep-alive
 * connection (see `get`): after it the read's connection is new, so a second reset in the same
 * read is the server's doing, not that race.
 */
type Common = {
  timeoutMs: number;
  maxBytes: number;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
  retry: { left: number };
  /** The latest a timeout of this read was seen past its deadline (HttpResult.lateMs), 0 if none was. */
  late: { ms: number };
};

function commonOf(opts: ReadOptions): Common {
  return {
    timeoutMs: opts.timeoutMs ?? READ_DEFAULTS.timeoutMs,
    maxBytes: opts.maxBytes ?? READ_DEFAULTS.maxBytes,
    dispatcher: opts.dispatcher,
    signal: opts.signal,
    retry: { left: 1 },
    late: { ms: 0 },
  };
}

function noteLate(late: { ms: number }, res: HttpResult): HttpResult {
  if (res.lateMs !== undefined && res.lateMs > late.ms) late.ms = res.lateMs;
  return res;
}

/**
 * Every read's GET (/props, /metrics, /health, /v1/models, /info, /api/version...): none of them
 * takes a request slot, so a reused connection closed before a single byte came back is asked once
 * more, on a new connection. That is almost always an idle keep-alive connection the server closed
 * as we reused it (uvicorn, vLLM's server, drops one after 5 s and sends no Keep-Alive hint, so at
 * a 5 s interval the race is routine). A reset mid-answer is not retried. The probe (a POST that
 * takes a slot) never comes through here and is never retried.
 */
async function get(target: BackendTarget, path: string, common: Common, accept: string, maxBytes = common.maxBytes): Promise<HttpResult> {
  const { retry, late, ...http } = common;
  const once = async () => noteLate(late, await httpRequest(endpoint(target.url, path), { ...http, maxBytes, headers: { accept, ...authHeaders(target.apiKey) } }));
  const res = await once();
  if (res.outcome !== "reset" || res.bytes !== 0 || retry.left <= 0 || common.signal?.aborted) return res;
  retry.left--;
  const again = await once();
  again.latencyMs += res.latencyMs;
  return again;
}

/**
 * Read one backend, whatever its engine. What is kept of the answers is bounded here, once, for
 * every adapter and every path (lib/core/caps.ts): a hostile or broken backend cannot make a
 * stored reading, a restart's evidence or an API answer large.
 */
export async function readBackend(target: BackendTarget, opts: ReadOptions = {}): Promise<Reading> {
  const common = commonOf(opts);
  const reading = await readBackendUncapped(target, opts, common);
  opts.filterMemory?.noteStart(reading.metrics?.processStartTime, reading.at);
  // A timeout this process saw late is not the server's to answer for (lib/check/late.ts).
  if (common.late.ms > 0) reading.watcherLateMs = common.late.ms;
  return capReading(reading);
}

/** The error (it may quote what the backend sent) and every model list of a reading, bounded. */
export function capReading(reading: Reading): Reading {
  if (reading.error !== undefined) reading.error = capText(reading.error);
  if (reading.metrics) reading.metrics.models = capList(reading.metrics.models);
  if (reading.models) reading.models.ids = capList(reading.models.ids);
  return reading;
}

/** Every adapter, in ENGINE_KINDS order: where a read looks for an engine by its answers. */
const ALL: readonly EngineAdapter[] = ENGINE_KINDS.map((kind) => ADAPTERS[kind]);

/** The engine that declares this answer (the first that does), and its error text; null if none does. */
function answerOf(pick: (a: EngineAdapter) => KnownAnswer | undefined, status: number | undefined, body: string): { kind: EngineKind; error: string } | null {
  for (const adapter of ALL) {
    const known = pick(adapter);
    if (known && isAnswer(known, status, body)) return { kind: adapter.kind, error: known.error };
  }
  return null;
}

const loadingOf = (a: EngineAdapter) => a.reads.loading;
const metricsOffOf = (a: EngineAdapter) => a.reads.metricsOff;

/** An adapter's GET, through `get()`: the answer, and what its parse made of it (null unless it is ok and the engine's). */
async function ask<T>(target: BackendTarget, question: Ask<T>, common: Common): Promise<{ res: HttpResult; value: T | null }> {
  const res = await get(target, question.path, common, "application/json", question.maxBytes);
  return { res, value: res.outcome === "ok" ? question.parse(res.body) : null };
}

/** "vllm:*, llamacpp:*, sglang:* or tgi_*": the prefixes detection knows, for a person. */
function knownPrefixes(): string {
  const names = DETECTION_ORDER.flatMap((kind) => (ADAPTERS[kind].prefix ? [`${ADAPTERS[kind].prefix}*`] : []));
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}` : names.join("");
}

async function readBackendUncapped(target: BackendTarget, opts: ReadOptions, common: Common): Promise<Reading> {
  const now = opts.now ?? Date.now;
  const at = now();
  const choice = target.engine ?? "auto";
  let hint: EngineKind | undefined = choice === "auto" ? opts.engineHint : choice;
  const hinted = hint ? ADAPTERS[hint] : undefined;
  if (hinted?.reads.withoutMetrics) {
    const r = await readWithoutMetrics(hinted, hinted.reads.withoutMetrics, target, common, at);
    // Seen as that engine before, but something else answers now (restarted into another engine):
    // detect again from the answers.
    const elsewhere = choice === "auto" && r.models?.outcome !== "ok" && (r.outcome === "http-error" || r.outcome === "error");
    if (!elsewhere) return r;
    hint = undefined;
  }

  let bytes = 0;
  let engine: EngineKind | undefined = choice === "auto" ? undefined : choice;
  let firstModel: string | null = null;
  // The look before /metrics of the engine expected or, on an `auto` backend not known yet, of every
  // engine that has one (llama.cpp's /props: a sleeping llama-server is recognised without reading /metrics).
  for (const adapter of hint ? [ADAPTERS[hint]] : ALL) {
    const before = adapter.reads.before;
    if (!before) continue;
    const { res: look, value: first } = await ask(target, before, common);
    bytes += look.bytes;
    if (first) {
      engine = adapter.kind;
      firstModel = first.model;
      if (first.asleep !== undefined) {
        return {
          at,
          latencyMs: look.latencyMs,
          outcome: "ok",
          status: look.status,
          engine,
          asleep: true,
          metrics: null,
          bytes,
          error: first.asleep,
          ...(first.model ? { models: { outcome: "ok" as const, status: look.status, ids: [first.model] } } : {}),
        };
      }
      break;
    }
    const loading = answerOf(loadingOf, look.status, look.body);
    if (loading) return { at, latencyMs: look.latencyMs, outcome: "http-error", status: look.status, engine: loading.kind, loading: true, metrics: null, bytes, error: loading.error };
  }

  const known = engine ?? hint;
  const metricsPath = (known ? ADAPTERS[known].reads.metricsPath : null) ?? "/metrics";
  const filtered = known ? ADAPTERS[known].reads.filtered : undefined;
  let res: HttpResult | undefined;
  /** The lean filter was asked and answered: the histograms are not in this read (on purpose). */
  let lean = false;
  /** The filtered answer's parse (with `known`'s families), when `res` is that answer. */
  let parsed: Exposition | null = null;
  if (filtered) {
    // A one-shot read (the CLI) has no memory: it asks the filtered GET and falls back each time,
    // and never the histograms (no earlier read to measure a percentile from).
    const memory = opts.filterMemory ?? new FilterMemory();
    if (memory.shouldTry(at)) {
      const whole = !filtered.lean || (opts.filterMemory !== undefined && memory.wantsHistograms(at, opts.histogramsEveryMs ?? LATENCY_EVERY_MS));
      const asked = whole ? filtered : { ...filtered, ...filtered.lean! };
      const answer = await get(target, asked.path, common, "text/plain");
      bytes += answer.bytes;
      // The answer is parsed as /metrics' would be (the engine's families, the line cache), and that
      // parse says whether the filter held: no second look at its lines.
      const exp = answer.outcome === "ok" ? readExposition(answer.body, ADAPTERS[known!].families, opts.lineCache) : null;
      const found = filteredAnswer(answer, asked, exp);
      // No answer at all (refused, reset, timed out) says nothing of the filter: the read goes on with it as /metrics'.
      if (found === "down") res = answer;
      else {
        memory.set(found, at);
        if (found !== "full") {
          res = answer;
          parsed = exp;
        }
        if (found === "filtered") {
          if (whole) memory.histogramsAt = at;
          else lean = true;
        }
      }
    }
  }
  if (!res) {
    res = await get(target, metricsPath, common, "text/plain");
    bytes += res.bytes;
  }
  const reading: Reading = { at, latencyMs: res.latencyMs, outcome: res.outcome, status: res.status, metrics: null, bytes, ...(engine ? { engine } : {}) };
  // A cut body is a copy (detach): a slice would keep the whole answer alive with it.
  if (opts.keepBody && res.body) reading.rawBody = res.body.length > MAX_RAW_BODY_CHARS ? detach(res.body.slice(0, MAX_RAW_BODY_CHARS)) : res.body;

  if (res.outcome === "refused" || res.outcome === "reset" || res.outcome === "timeout") {
    // "down" needs /health to fail too; it is cheap and takes no request slot. A /metrics that times
    // out while /health answers is a slow API server, not a dead one. (SGLang's and TGI's /health
    // may run a generation: for them a static route is asked, see rules.livenessPath.)
    const health = await get(target, rulesOf(known).livenessPath, common, "*/*", 64 * 1024);
    reading.health = { outcome: health.outcome, status: health.status };
    reading.bytes = (reading.bytes ?? 0) + health.bytes;
    reading.error = res.error;
    const loading = answerOf(loadingOf, health.status, health.body);
    if (loading) Object.assign(reading, { loading: true, engine: loading.kind });
    return reading;
  }

  if (res.outcome === "ok") {
    // The engine configured, or seen on this backend last: parse only its adapter's families.
    const expected = choice === "auto" ? known : choice;
    if (expected) {
      const fast = readFiltered(res.body, expected, choice === "auto", opts.lineCache, parsed);
      if (fast) {
        const parsed = ADAPTERS[expected].extract(fast, { headers: res.headers });
        if (parsed.metrics) return withMetrics(reading, ADAPTERS[expected], parsed.metrics, fast, firstModel, lean);
      }
      // Not that engine's body any more, or no metrics in it: the full parse below says why.
    }
    const exp = readExposition(res.body);
    if (exp.ok) {
      const detected = detectEngine(exp.index);
      const kind = choice === "auto" ? detected : choice;
      if (kind) {
        const parsed = ADAPTERS[kind].extract(exp.index, { headers: res.headers });
        if (parsed.metrics) return withMetrics(reading, ADAPTERS[kind], parsed.metrics, exp.index, firstModel, lean);
        reading.engine = kind;
        // Texts kept in the Reading are copies (detach): a slice of the body would keep it alive.
        reading.error = detach(
          detected && detected !== kind
            ? `configured engine ${ENGINE_LABELS[kind]}, but /metrics carries ${ENGINE_LABELS[detected]}'s families`
            : (parsed.error ?? `no ${ENGINE_LABELS[kind]} metrics`),
        );
      } else {
        reading.error = `no known engine's metrics (found ${exp.sampleCount} series, none named ${knownPrefixes()})`;
      }
    } else if (exp.sampleCount === 0 && exp.errorCount === 0 && res.body.trim() === "") {
      // An engine that shows a metric only once it was recorded (TGI) has an empty exposition before
      // its first request: configured, that is it; for `auto` its `whenEmpty` GET says whose it is.
      for (const adapter of choice === "auto" ? ALL : [ADAPTERS[choice]]) {
        const whenEmpty = adapter.reads.whenEmpty;
        if (!whenEmpty) continue;
        let model: string | null = null;
        if (choice === "auto") {
          const { res: answer, value } = await ask(target, whenEmpty, common);
          reading.bytes = (reading.bytes ?? 0) + answer.bytes;
          if (!value) continue;
          model = value.model;
        }
        const parsed = adapter.extract(new Map(), { headers: res.headers });
        if (parsed.metrics) {
          if (model) parsed.metrics.models = [model];
          return { ...reading, engine: adapter.kind, metrics: parsed.metrics };
        }
      }
      reading.error = detach(exp.error);
    } else {
      reading.error = detach(exp.error);
    }
  } else {
    const off = res.outcome === "http-error" ? answerOf(metricsOffOf, res.status, res.body) : null;
    const loading = res.outcome === "http-error" && !off ? answerOf(loadingOf, res.status, res.body) : null;
    if (off) {
      // An engine running without metrics (llama-server without --metrics).
      reading.engine = off.kind;
      reading.error = off.error;
    } else if (loading) {
      return { ...reading, engine: loading.kind, loading: true, error: loading.error };
    } else if (res.outcome === "http-error" && (res.status === 404 || res.status === 405 || res.status === 410)) {
      reading.error = `${metricsPath} answered HTTP ${res.status}`;
      if (choice === "auto") {
        // An engine without /metrics (Ollama) says who it is on its own routes.
        for (const adapter of ALL) {
          if (!adapter.reads.withoutMetrics) continue;
          const r = await readWithoutMetrics(adapter, adapter.reads.withoutMetrics, target, common, at);
          if (r.models?.outcome === "ok") return { ...r, bytes: (r.bytes ?? 0) + bytes };
        }
      }
    } else {
      reading.error = res.error;
      return reading;
    }
  }

  // Reachable, but no load metrics: liveness comes from /v1/models only.
  reading.noMetrics = true;
  const models = await listModels(target, common);
  reading.models = { outcome: models.outcome, status: models.status, ids: models.models };
  reading.bytes = (reading.bytes ?? 0) + models.bytes;
  return reading;
}

/**
 * What a filtered exposition's answer says: "filtered" (only samples asked for, the required ones
 * among them), "unfiltered" (the required ones and samples not asked for: the query was ignored and
 * this is the full body, usable as such), "full" (refused, empty, not an exposition, or without a
 * required sample: read the plain path; an empty 200 is prometheus_client in multiprocess mode,
 * never an idle server), or "down" (no answer at all). `exp` is the answer's parse with the
 * engine's families (null unless it is ok): every sample line is in it, kept (a sample of those
 * families, whose name is checked here) or skipped (another family's: never asked for), in whatever
 * order the families came (a Python set's). A line that is no sample at all is not asked for either.
 */
function filteredAnswer(res: HttpResult, filtered: NonNullable<EngineAdapter["reads"]["filtered"]>, exp: Exposition | null): "filtered" | "unfiltered" | "full" | "down" {
  if (res.outcome === "refused" || res.outcome === "reset" || res.outcome === "timeout") return "down";
  if (res.outcome !== "ok" || exp === null || !exp.ok) return "full";
  for (const r of filtered.required) if (!exp.index.has(r)) return "full";
  if (exp.skippedLines > 0 || exp.errorCount > 0) return "unfiltered";
  for (const s of exp.samples) if (!filtered.samples.has(s.name)) return "unfiltered";
  return "filtered";
}

/** `reading` with `adapter`'s metrics from `index` (and what else its reads take from the same body). */
function withMetrics(reading: Reading, adapter: EngineAdapter, metrics: EngineMetrics, index: Index, firstModel: string | null, lean: boolean): Reading {
  // llama-server names its model in /props, not in /metrics.
  if (metrics.models.length === 0 && firstModel) metrics.models = [firstModel];
  reading.metrics = metrics;
  reading.engine = adapter.kind;
  if (metrics.asleep) reading.asleep = true;
  // vLLM's latency histograms, finish reasons and preemptions (the dashboard's figures).
  if (adapter.reads.latency) {
    reading.latency = adapter.reads.latency(index);
    // Their histograms were not asked (lean filter): null percentiles here mean "not read", and the
    // next read that asks them measures from the last one that did (lib/watcher/latency.ts).
    if (lean) reading.latency.histogramsAsked = false;
  }
  return reading;
}

/**
 * The series index of `body` with only `kind`'s families parsed, or null when the full parse must
 * decide: the engine has no exposition, the body is not Prometheus text, carries none of `kind`'s
 * series, or (for an `auto` backend) carries series of an engine detection prefers, so the full
 * parse would detect that one. Anything the full parse would do differently falls through to it,
 * so the filter changes what is parsed, never what is concluded.
 */
function readFiltered(body: string, kind: EngineKind, auto: boolean, cache: LineCache | undefined, parsed: Exposition | null): Index | null {
  const adapter = ADAPTERS[kind];
  if (adapter.prefix === null) return null;
  // Parsed already with these families (a filtered answer), or now.
  const exp = parsed ?? readExposition(body, adapter.families, cache);
  if (!exp.ok || !hasPrefix(exp.index, adapter.prefix)) return null;
  if (auto) {
    for (const other of DETECTION_ORDER) {
      if (other === kind) break;
      const p = ADAPTERS[other].prefix;
      // A sample line of that engine: a line that starts with its prefix (comments start with "#";
      // a sample indented with blanks would be missed, which no exporter writes).
      if (p && (body.startsWith(p) || body.includes(`\n${p}`))) return null;
    }
  }
  return exp.index;
}

/**
 * An engine without /metrics (Ollama, checked on v0.33): no load figure, so liveness only, and
 * never probed (its rules say so). Its liveness GET's failure is recorded as /health's, so two
 * refusals are "down"; its models GET names the loaded models for the card.
 */
async function readWithoutMetrics(
  adapter: EngineAdapter,
  reads: NonNullable<EngineAdapter["reads"]["withoutMetrics"]>,
  target: BackendTarget,
  common: Common,
  at: number,
): Promise<Reading> {
  const label = ENGINE_LABELS[adapter.kind];
  const { res: v, value: version } = await ask(target, reads.liveness, common);
  if (!version) {
    const error = v.outcome === "ok" ? `${reads.liveness.path} is not ${label}'s answer` : `${reads.liveness.path}: ${v.error ?? v.outcome}`;
    return { at, latencyMs: v.latencyMs, outcome: v.outcome === "ok" ? "error" : v.outcome, status: v.status, engine: adapter.kind, metrics: null, bytes: v.bytes, error, health: { outcome: v.outcome, status: v.status } };
  }
  const { res: ps, value: ids } = await ask(target, reads.models, common);
  return {
    at,
    latencyMs: v.latencyMs,
    outcome: "ok",
    status: v.status,
    engine: adapter.kind,
    metrics: null,
    noMetrics: true,
    error: `${label} ${version}`,
    models: { outcome: "ok", status: v.status, ids: ids ?? [] },
    bytes: v.bytes + ps.bytes,
  };
}

async function listModels(
  target: { url: string; apiKey?: string },
  common: Common,
): Promise<{ outcome: Reading["outcome"]; status?: number; models: string[]; bytes: number; latencyMs: number; error?: string }> {
  const res = await get(target, "/v1/models", common, "application/json", Math.min(common.maxBytes, 1024 * 1024));
  if (res.outcome !== "ok") return { outcome: res.outcome, status: res.status, models: [], bytes: res.bytes, latencyMs: res.latencyMs, error: res.error };
  try {
    const json = JSON.parse(res.body) as { data?: Array<{ id?: unknown }> };
    if (!Array.isArray(json.data)) throw new Error("no data array");
    // Whole here (the probe needs a real name); what is kept of it is capped by the callers.
    const models = json.data.map((m) => m.id).filter((id): id is string => typeof id === "string");
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

export interface ProbeOptions extends ReadOptions {
  model?: string;
  /** The engine that answered the read (decides TGI's native generate). */
  engine?: EngineKind;
  /** The probe that answered last on this backend ("remember which probe works"). */
  learned?: ProbeKind;
}

const PATHS: Record<ProbeKind, string> = {
  completions: "/v1/completions",
  chat: "/v1/chat/completions",
  embeddings: "/v1/embeddings",
  generate: "/generate",
};

function probeBody(kind: ProbeKind, model: string | undefined): string {
  switch (kind) {
    case "completions":
      return JSON.stringify({ model, prompt: "ping", max_tokens: 1, temperature: 0, stream: false });
    case "chat":
      return JSON.stringify({ model, messages: [{ role: "user", content: "ping" }], max_tokens: 1, temperature: 0, stream: false });
    case "embeddings":
      // A pooling model answers this one: one short input.
      return JSON.stringify({ model, input: "ping" });
    case "generate":
      return JSON.stringify({ inputs: "ping", parameters: { max_new_tokens: 1 } });
  }
}

/** The first probe of each engine's probe style (`never`: one is never sent, `shouldProbe` says so). */
const STYLE_PROBE: Record<ProbeStyle, ProbeKind> = { openai: "completions", "tgi-generate": "generate", never: "completions" };

/** Which probe to send first: the config's, else what answered last, else the engine's (`rules.probe`). */
export function firstProbe(choice: ProbeChoice | undefined, engine: EngineKind | undefined, learned: ProbeKind | undefined): ProbeKind | null {
  if (choice === "none") return null;
  if (choice && choice !== "auto") return choice;
  if (learned) return learned;
  return STYLE_PROBE[rulesOf(engine).probe];
}

const noEndpoint = (status?: number) => status === 404 || status === 405;

/**
 * The tiny probe: one token, aborted at its deadline (the abort closes the connection, which makes
 * the engine drop the request instead of finishing it for nobody). The caller guarantees nothing is
 * running or waiting, so the answer should be immediate. An answer 401/403 means the API key is
 * missing or wrong; 404/405 to a completion (a pooling model: vLLM registers no completion routes)
 * is followed once by POST /v1/embeddings with a one-token input, within the same deadline.
 */
export async function probeBackend(target: BackendTarget, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const now = opts.now ?? Date.now;
  const at = now();
  const timeoutMs = opts.probeTimeoutMs ?? READ_DEFAULTS.probeTimeoutMs;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const kind = firstProbe(target.probe, opts.engine, opts.learned) ?? "completions";
  const late = { ms: 0 };
  const seen = (p: ProbeResult): ProbeResult => (late.ms > 0 && !p.ok ? { ...p, watcherLateMs: late.ms } : p);
  let model = target.model ?? opts.model;
  if (!model && kind !== "generate") {
    const listed = await listModels(target, { ...commonOf({ ...opts, timeoutMs }), late });
    model = listed.models[0];
    if (!model) {
      const auth = listed.status === 401 || listed.status === 403;
      return seen({
        ok: false,
        at,
        latencyMs: elapsed(),
        status: listed.status,
        kind,
        error: `no model to probe: ${listed.error ?? "empty /v1/models"}`,
        ...(auth ? { cannotSucceed: "auth" as const } : {}),
      });
    }
  }
  const send = async (k: ProbeKind) =>
    noteLate(late, await httpRequest(endpoint(target.url, PATHS[k]), {
      method: "POST",
      timeoutMs: Math.max(1, timeoutMs - (performance.now() - started)),
      maxBytes: 256 * 1024,
      dispatcher: opts.dispatcher,
      signal: opts.signal,
      headers: { "content-type": "application/json", accept: "application/json", ...authHeaders(target.apiKey) },
      body: probeBody(k, model),
    }));
  const result = (k: ProbeKind, res: HttpResult, extra: Partial<ProbeResult> = {}): ProbeResult => {
    if (res.outcome === "ok") return { ok: true, at, latencyMs: elapsed(), status: res.status, kind: k, ...extra };
    const base: ProbeResult = { ok: false, at, latencyMs: elapsed(), status: res.status, kind: k, error: capText(res.error ?? res.outcome), ...extra };
    if (res.status === 401 || res.status === 403) return { ...base, cannotSucceed: "auth" };
    return base;
  };
  const res = await send(kind);
  const auto = (target.probe ?? "auto") === "auto";
  if (res.outcome === "http-error" && noEndpoint(res.status)) {
    if (auto && kind !== "embeddings" && kind !== "generate") {
      const again = await send("embeddings");
      const r = result("embeddings", again, { fallbackFrom: kind });
      if (!r.ok && noEndpoint(again.status)) {
        return { ...r, cannotSucceed: "no-endpoint", error: `${PATHS[kind]} answered HTTP ${res.status} and ${PATHS.embeddings} HTTP ${again.status}` };
      }
      return seen(r);
    }
    return { ...result(kind, res), cannotSucceed: "no-endpoint", error: `${PATHS[kind]} answered HTTP ${res.status}` };
  }
  return seen(result(kind, res));
}

/** The probe that answered last on this backend, so the next one starts there. */
export function learnedProbe(history: Reading[]): ProbeKind | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const p = history[i].probe;
    if (p?.ok) return p.kind ?? "completions";
  }
  return undefined;
}

/** The engine seen last on this backend (the `auto` hint). */
export function lastEngine(history: Reading[]): EngineKind | undefined {
  for (let i = history.length - 1; i >= 0; i--) if (history[i].engine) return history[i].engine;
  return undefined;
}

/**
 * A proxy is only ever asked GET /v1/models. Behind least-connection balancing each read of
 * /metrics may come from a different backend, so its counters would compare two servers.
 */
export async function readProxy(target: { url: string; apiKey?: string }, opts: ReadOptions = {}): Promise<ProxyReading> {
  const at = (opts.now ?? Date.now)();
  const common = commonOf(opts);
  const res = await listModels(target, common);
  return {
    at,
    latencyMs: res.latencyMs,
    outcome: res.outcome,
    status: res.status,
    error: res.error === undefined ? undefined : capText(res.error),
    models: capList(res.models),
    ...(common.late.ms > 0 ? { watcherLateMs: common.late.ms } : {}),
  };
}
