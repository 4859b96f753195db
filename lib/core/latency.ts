/**
 * The words for vLLM's latency figures, shared by the extraction (lib/metrics/vllm-latency.ts),
 * the reading, the stored sample columns (db/schema.ts), the history codec and the charts.
 */

/**
 * How often the watcher asks vLLM for its latency histograms (the config's latencyEverySeconds):
 * the percentiles are of the requests finished in this window. The other figures are read every poll.
 */
export const LATENCY_EVERY_SECONDS = 30;

/** One histogram summed over its label sets (engines): cumulative counts per upper bound. */
export interface Histogram {
  /** [upper bound, cumulative count], ascending, +Inf last. */
  buckets: Array<[number, number]>;
  count: number;
  sum: number;
}

/** The raw cumulative figures of one read; null where the server does not expose them usably. */
export interface VllmLatency {
  ttft: Histogram | null;
  itl: Histogram | null;
  e2e: Histogram | null;
  queue: Histogram | null;
  /** vllm:request_success_total per finished_reason, summed over engines. */
  successByReason: Record<string, number> | null;
  preemptions: number | null;
  /**
   * false: this read did not ask for the histograms (ttft..queue are null for that reason, not
   * because the server lacks them). vLLM's histograms are asked once per latencyEverySeconds
   * (lib/check/read.ts FilterMemory); the percentiles are measured between two reads that asked
   * them (lib/watcher/latency.ts). Absent: asked (every full read).
   */
  histogramsAsked?: false;
}

/**
 * What the interval's figures and the stored sample have alike: p50/p95 of each histogram's delta
 * (seconds) and preemptions per second.
 */
export interface LatencyQuantiles {
  ttftP50: number | null;
  ttftP95: number | null;
  itlP50: number | null;
  itlP95: number | null;
  e2eP50: number | null;
  e2eP95: number | null;
  queueP50: number | null;
  queueP95: number | null;
  preemptionsPerSecond: number | null;
}

/** Per-interval figures between two reads of one process (seconds; per second for the rates). */
export interface LatencyFigures extends LatencyQuantiles {
  /** Finished requests per second per finish reason (stop, length, abort, error...). */
  successPerSecond: Record<string, number> | null;
}

export const EMPTY_LATENCY_FIGURES: LatencyFigures = {
  ttftP50: null,
  ttftP95: null,
  itlP50: null,
  itlP95: null,
  e2eP50: null,
  e2eP95: null,
  queueP50: null,
  queueP95: null,
  preemptionsPerSecond: null,
  successPerSecond: null,
};

/**
 * The figures as stored and served, flat (one column each): the finish reasons vLLM uses are
 * stop, length, abort and error; any other ("repetition" and future ones) counts as other.
 */
export interface LatencySample extends LatencyQuantiles {
  successStopPerSecond: number | null;
  successLengthPerSecond: number | null;
  successAbortPerSecond: number | null;
  successErrorPerSecond: number | null;
  successOtherPerSecond: number | null;
}

export const LATENCY_FIELDS = [
  "ttftP50",
  "ttftP95",
  "itlP50",
  "itlP95",
  "e2eP50",
  "e2eP95",
  "queueP50",
  "queueP95",
  "preemptionsPerSecond",
  "successStopPerSecond",
  "successLengthPerSecond",
  "successAbortPerSecond",
  "successErrorPerSecond",
  "successOtherPerSecond",
] as const satisfies ReadonlyArray<keyof LatencySample>;
