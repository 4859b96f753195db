/** The real /metrics scrapes every engine test reads (tests/fixtures), and how to read one. */
import { readFileSync } from "node:fs";

export const fixture = (p: string) => readFileSync(new URL(`../fixtures/${p}`, import.meta.url), "utf8");

/** One of each engine: three vLLM versions, SGLang, TGI, llama.cpp. */
export const SCRAPES = [
  "real-metrics/vllm-0.29.0-inferstack.prom",
  "real-metrics/vllm-unstated-lmswitch.prom",
  "real-metrics/vllm-0.4.3-plus-v1-families-datadog.prom",
  "real-metrics/sglang-0.5.10-datadog.prom",
  "real-metrics/tgi-datadog-truncated.prom",
  "engines/llamacpp-to_metrics.prom",
];
