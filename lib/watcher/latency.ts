/**
 * The latency figures of a reading: from the bucket deltas between it and the previous reading of
 * the same process (counters of two processes are never compared), stored with the sample.
 */
import { sameProcess } from "../check/classify";
import type { Reading } from "../check/types";
import { EMPTY_LATENCY_FIGURES, latencyFigures, latencySample, type LatencySample } from "../metrics/vllm-latency";

export function latencyOf(history: Reading[], reading: Reading): LatencySample {
  const m = reading.metrics;
  let prev: Reading | undefined;
  for (let i = history.length - 1; i >= 0 && !prev; i--) if (history[i].metrics && history[i].latency) prev = history[i];
  if (!m || !reading.latency || !prev || !sameProcess(prev.metrics!, m)) return latencySample(EMPTY_LATENCY_FIGURES);
  return latencySample(latencyFigures(prev.latency, reading.latency, (reading.at - prev.at) / 1000));
}
