/**
 * What every engine adapter states. The classifier is engine-blind except for what is here: the
 * shortest window that may be called stuck and how (whether) an idle server may be probed. Which
 * figures are progress and which are evidence of a hang travel in each reading (`evidence`).
 */
import type { Index } from "./series";
import type { EngineKind, EngineParse } from "../core/engine";
import type { VllmLatency } from "../core/latency";

/** How an idle server of this engine is asked for one token. */
export type ProbeStyle = "openai" | "tgi-generate" | "never";

export interface EngineRules {
  /**
   * No "stuck" before this many seconds without progress, whatever stuckAfterSeconds says: an
   * engine whose gauges refresh only every so often (SGLang) needs a longer window.
   */
  minStuckWindowSeconds: number;
  probe: ProbeStyle;
  /** The command-line flag the engine needs for stepwatch to read it, for messages and the README. */
  metricsFlag: string | null;
  /**
   * /metrics is served by the engine loop itself (llama.cpp queues it as a task), not by a separate
   * API server: a /metrics that keeps timing out while /health answers then means the loop is
   * blocked, not that an API server is slow.
   */
  metricsOnEngineLoop?: boolean;
  /**
   * An answered /metrics with nothing running or waiting is the engine loop's own answer, which
   * proves the loop turns: idle is judged without the probe. llama.cpp (checked on b10573): an idle
   * server queues the metrics read on its loop (with the loop stopped it times out while /health
   * answers, which metricsOnEngineLoop judges stalled then stuck), and it is the one task that does
   * not restart the --sleep-idle-seconds countdown, whereas the probe does: probing would keep a
   * server configured to sleep awake for ever, and /props does not say whether it is so configured.
   */
  idleProvenByMetrics?: boolean;
  /**
   * What stepwatch asks to tell "slow" from "dead" when /metrics fails: a route that takes no
   * request slot. vLLM's and llama.cpp's /health are free; SGLang's runs a one-token generation and
   * TGI's a prefill on the shards when unhealthy, so for those a static route is asked instead.
   */
  livenessPath: string;
  /** How the engine updates what it exposes, beyond each figure's cadence (EngineMetrics.cadence). */
  updates?: EngineUpdates;
}

/** docs/engines.md "Cadence": what keeps a healthy engine's figures flat between two reads. */
export interface EngineUpdates {
  /**
   * Generation tokens/s is read live from the step counter: steps/s × busy slots per step (every
   * busy slot decodes one token per step), because the token counter moves only when a request ends.
   */
  generationFromSteps?: boolean;
  /** The figures are written only when the scheduler logs, every this many decode steps (SGLang --decode-log-interval). */
  schedulerLogSteps?: number;
  /** Values are printed with this many significant digits (llama.cpp: C++ ostream's default, 6): a counter past 10^digits moves in printed steps. */
  printedDigits?: number;
}

export interface ExtractContext {
  /** Response headers of GET /metrics (llama.cpp's Process-Start-Time-Unix). */
  headers?: Record<string, string | string[] | undefined>;
}

/**
 * One GET a read makes besides the exposition. lib/check/read.ts sends it through `get()` (the
 * keep-alive retry, the lateness mark) with `accept: application/json`; `parse` is pure and says
 * null when the body is not this engine's answer (a read never throws on one).
 */
export interface Ask<T> {
  path: string;
  /** The most of the answer that is kept (a real one is a few KB). */
  maxBytes: number;
  parse(body: string): T | null;
}

/** An answer recognised by its status (and body): llama-server's 503 "Loading model". */
export interface KnownAnswer {
  status: number;
  body?: RegExp;
  /** The reading's error, for a person. */
  error: string;
}

/** What the look before the exposition found (llama.cpp's /props). */
export interface FirstLook {
  /** The served model, when the exposition does not name it. */
  model: string | null;
  /** Set when the server sleeps on purpose: why the exposition is not read (it is not needed while it sleeps). */
  asleep?: string;
}

/**
 * How this engine is asked, as data: lib/check/read.ts runs one sequence for every engine (look
 * first, the exposition, liveness when it failed, /v1/models when there are no metrics) and takes
 * each engine's part from here, so it names no engine. Every path here is a GET that takes no
 * request slot; the probe (which does) is `rules.probe`, never a read.
 */
export interface EngineReads {
  /**
   * The exposition's path (and query) once the engine is known (configured, or seen on the last
   * read); a backend not yet known is asked "/metrics". null: the engine has none, and
   * `withoutMetrics` is read instead.
   */
  metricsPath: string | null;
  /**
   * Asked before the exposition whenever the engine may be this one (configured, seen last, or an
   * `auto` backend not yet known): an answer `parse` accepts names the engine, and one saying the
   * server sleeps ends the read there.
   */
  before?: Ask<FirstLook>;
  /** An answer any route gives while the model loads (starting, not down); recognised on every answer of a read. */
  loading?: KnownAnswer;
  /** An exposition answer that says this engine runs without metrics (then liveness from /v1/models). */
  metricsOff?: KnownAnswer;
  /**
   * For an engine whose exposition is empty until its first request: the GET that says an empty
   * body is this engine's (asked only for `auto`), and its model.
   */
  whenEmpty?: Ask<{ model: string | null }>;
  /**
   * No exposition: `liveness` answers every read (its failure is recorded as /health's, so two
   * refusals are "down"; its parse is the version shown), `models` lists the loaded models. For an
   * `auto` backend whose exposition answers 404/405/410 these are tried too.
   */
  withoutMetrics?: { liveness: Ask<string>; models: Ask<string[]> };
  /**
   * The exposition asked for only the samples this adapter reads (prometheus_client's `name[]`
   * filter), tried once the engine is known. `path` carries the query; `required` are the samples a
   * filtered answer must hold to be used (else the full `metricsPath` is read, and the backend's
   * FilterMemory remembers it: multiprocess servers answer a filtered GET with an empty 200).
   * `lean` is the same filter without the samples only the dashboard's figures need (vLLM's latency
   * histograms, two thirds of the filtered body): asked on the reads between two of `path`, which a
   * backend's FilterMemory asks once per ReadOptions.histogramsEveryMs and after a new process start.
   * Nothing a state is judged by may be left out of `lean`.
   */
  filtered?: { path: string; samples: ReadonlySet<string>; required: readonly string[]; lean?: { path: string; samples: ReadonlySet<string> } };
  /** Figures read from the same exposition besides `extract`'s: vLLM's latency histograms (the dashboard's charts). */
  latency?(index: Index): VllmLatency;
}

export interface EngineAdapter {
  kind: EngineKind;
  /** The family prefix that identifies the engine's exposition (null: it has none). */
  prefix: string | null;
  /**
   * Every family `extract` reads (names as ParseOptions.families takes them: a family, or one
   * series name). The read path parses only these (parsePrometheus(text, { families })): a line of
   * any other family is skipped on its name. One Set per adapter, so the parser compiles it once.
   * Reading a family in `extract` that is not listed here would see it absent: the unit test
   * tests/unit/engine-families.test.ts checks on the real scrapes that the filter changes nothing.
   */
  families: ReadonlySet<string>;
  rules: EngineRules;
  reads: EngineReads;
  extract(index: Index, ctx: ExtractContext): EngineParse;
}

/** Whether `answer` is that known answer. */
export function isAnswer(known: KnownAnswer | undefined, status: number | undefined, body: string): boolean {
  return known !== undefined && status === known.status && (known.body === undefined || known.body.test(body));
}

export function headerValue(headers: ExtractContext["headers"], name: string): string | null {
  const v = headers?.[name.toLowerCase()];
  if (Array.isArray(v)) return v[0] ?? null;
  return typeof v === "string" && v.trim() !== "" ? v.trim() : null;
}
