/**
 * The latency figures of a reading, stored with its sample. The counters (finish reasons,
 * preemptions) are in every read: their rates are between this reading and the previous one. The
 * histograms are asked once per latencyEverySeconds (lib/check/read.ts): a percentile is of the
 * requests finished between two reads that asked them, and is stored with the later read only, so
 * no sample ever shows an old percentile as its own; the reads in between store none (not "no
 * requests": not measured). Counters of two processes are never compared.
 */
import { sameProcess } from "../check/classify";
import type { Reading } from "../core/types";
import { latencyFigures, latencySample } from "../metrics/vllm-latency";
import { EMPTY_LATENCY_FIGURES, type LatencyFigures, type LatencySample, type VllmLatency } from "../core/latency";

const withHistograms = (l: VllmLatency | undefined): boolean => l !== undefined && l.histogramsAsked !== false;

/** The newest reading of `history` with metrics whose latency passes `keep`. */
function newestWith(history: Reading[], keep: (l: VllmLatency | undefined) => boolean): Reading | undefined {
  for (let i = history.length - 1; i >= 0; i--) if (history[i].metrics && history[i].latency && keep(history[i].latency)) return history[i];
  return undefined;
}

function between(prev: Reading | undefined, reading: Reading): LatencyFigures {
  if (!prev || !sameProcess(prev.metrics!, reading.metrics!)) return EMPTY_LATENCY_FIGURES;
  return latencyFigures(prev.latency, reading.latency, (reading.at - prev.at) / 1000);
}

export function latencyOf(history: Reading[], reading: Reading): LatencySample {
  if (!reading.metrics || !reading.latency) return latencySample(EMPTY_LATENCY_FIGURES);
  const rates = between(newestWith(history, (l) => l !== undefined), reading);
  if (!withHistograms(reading.latency)) return latencySample(rates); // its percentiles are null: not asked
  // The percentiles: from the last read that asked the histograms (the previous read, when every read does).
  const q = between(newestWith(history, withHistograms), reading);
  const figures: LatencyFigures = { ...q, preemptionsPerSecond: rates.preemptionsPerSecond, successPerSecond: rates.successPerSecond };
  return latencySample(figures);
}

/**
 * Only the newest reading with latency and the newest with histograms are ever compared
 * (latencyOf looks for them), so older readings drop theirs: ~4 histograms of buckets per reading x
 * up to MAX_HISTORY_READINGS readings per backend was most of the watcher's heap at 1000 vLLM backends.
 */
export function dropOlderLatency(history: Reading[]): void {
  let newest = true;
  let newestHistograms = true;
  for (let i = history.length - 1; i >= 0; i--) {
    const r = history[i];
    if (!r.latency) continue;
    let keep = false;
    if (r.metrics) {
      if (newest) keep = true;
      if (newestHistograms && withHistograms(r.latency)) keep = true;
      newest = false;
      if (withHistograms(r.latency)) newestHistograms = false;
    }
    // Not `delete`: that turns the reading into a slow dictionary-mode object.
    if (!keep) r.latency = undefined;
  }
}
