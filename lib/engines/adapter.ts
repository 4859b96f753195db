/**
 * What every engine adapter states. The classifier is engine-blind except for what is here: the
 * shortest window that may be called stuck and how (whether) an idle server may be probed. Which
 * figures are progress and which are evidence of a hang travel in each reading (`evidence`).
 */
import type { Index } from "./series";
import type { EngineKind, EngineParse } from "../core/engine";

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
}

export interface ExtractContext {
  /** Response headers of GET /metrics (llama.cpp's Process-Start-Time-Unix). */
  headers?: Record<string, string | string[] | undefined>;
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
  extract(index: Index, ctx: ExtractContext): EngineParse;
}

export function headerValue(headers: ExtractContext["headers"], name: string): string | null {
  const v = headers?.[name.toLowerCase()];
  if (Array.isArray(v)) return v[0] ?? null;
  return typeof v === "string" && v.trim() !== "" ? v.trim() : null;
}
