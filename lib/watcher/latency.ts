/**
 * The latency figures of a reading: from the bucket deltas between it and the previous reading of
 * the same process (counters of two processes are never compared), stored with the sample.
 */
import { sameProcess } from "../check/classify";
import type { Reading } from "../core/types";
import { latencyFigures, latencySample } from "../metrics/vllm-latency";
import { EMPTY_LATENCY_FIGURES, type LatencySample } from "../core/latency";

export function latencyOf(history: Reading[], reading: Reading): LatencySample {
  const m = reading.metrics;
  let prev: Reading | undefined;
  for (let i = history.length - 1; i >= 0 && !prev; i--) if (history[i].metrics && history[i].latency) prev = history[i];
  if (!m || !reading.latency || !prev || !sameProcess(prev.metrics!, m)) return latencySample(EMPTY_LATENCY_FIGURES);
  return latencySample(latencyFigures(prev.latency, reading.latency, (reading.at - prev.at) / 1000));
}

/**
 * Only the newest reading with latency histograms is ever compared (latencyOf looks for it), so
 * older readings drop theirs: ~4 histograms of buckets per reading x up to MAX_HISTORY_READINGS
 * readings per backend was most of the watcher's heap at 1000 vLLM backends.
 */
export function dropOlderLatency(history: Reading[]): void {
  let newest = true;
  for (let i = history.length - 1; i >= 0; i--) {
    const r = history[i];
    if (!r.latency) continue;
    if (newest && r.metrics) newest = false;
    // Not `delete`: that turns the reading into a slow dictionary-mode object.
    else r.latency = undefined;
  }
}
