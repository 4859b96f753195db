/**
 * The adapters by engine, and detection: which engine a /metrics body is from, by the families it
 * carries. Detection runs on every answer (cheap: one look at the names), so a backend restarted
 * into another engine is seen as that engine at once.
 */
import type { EngineAdapter, EngineRules } from "./adapter";
import { llamacppAdapter } from "./llamacpp";
import { ollamaAdapter } from "./ollama";
import { hasPrefix, type Index } from "./series";
import { sglangAdapter } from "./sglang";
import { tgiAdapter } from "./tgi";
import type { EngineKind } from "../core/engine";
import { vllmAdapter } from "./vllm";

export const ADAPTERS: Record<EngineKind, EngineAdapter> = {
  vllm: vllmAdapter,
  llamacpp: llamacppAdapter,
  sglang: sglangAdapter,
  tgi: tgiAdapter,
  ollama: ollamaAdapter,
};

/** The rules of an engine; an unknown engine is judged by vLLM's (the first version's) rules. */
export function rulesOf(kind: EngineKind | undefined): EngineRules {
  return ADAPTERS[kind ?? "vllm"].rules;
}

/** Detection's order: a body with two engines' families is the earlier one's. */
export const DETECTION_ORDER: readonly EngineKind[] = ["vllm", "llamacpp", "sglang", "tgi"];

/** The engine whose families the body carries (the first that matches), or null. */
export function detectEngine(index: Index): EngineKind | null {
  for (const kind of DETECTION_ORDER) {
    const prefix = ADAPTERS[kind].prefix;
    if (prefix && hasPrefix(index, prefix)) return kind;
  }
  return null;
}
