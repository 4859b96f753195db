/**
 * One front per engine. The server asks `createFront` once, and `ENGINE_CONFIG_DEFAULTS` for the engine core's defaults where the engine
 * differs from vLLM's (llama.cpp's --parallel, Ollama's OLLAMA_NUM_PARALLEL).
 */
import type { EngineConfig } from "../engine";
import { LlamaCppFront } from "./llamacpp";
import { OllamaFront } from "./ollama";
import { SglangFront } from "./sglang";
import { TgiFront } from "./tgi";
import { VllmFront } from "./vllm";
import { ENGINE_KINDS, type EngineFront, type EngineKind, type FrontContext } from "./types";

export { ENGINE_KINDS, FRONT_MODES, type EngineFront, type EngineKind, type FrontMode, type FrontOptions, type FrontState } from "./types";

export const ENGINE_CONFIG_DEFAULTS: Record<EngineKind, Partial<EngineConfig>> = {
  vllm: {},
  // llama-server's --parallel is "auto" = 4 slots; each slot gets n_ctx / 4 of the context.
  llamacpp: { maxNumSeqs: 4 },
  sglang: {},
  tgi: {},
  // OLLAMA_NUM_PARALLEL: 1 unless set (the auto value on a machine of this size).
  ollama: { maxNumSeqs: 1 },
};

export function parseEngineKind(value: string | undefined, field = "engine"): EngineKind {
  if (value !== undefined && (ENGINE_KINDS as readonly string[]).includes(value)) return value as EngineKind;
  throw new Error(`${field} must be one of ${ENGINE_KINDS.join(", ")}, got ${JSON.stringify(value)}`);
}

/** The front of `kind`. */
export function createFront(kind: EngineKind, ctx: FrontContext): EngineFront {
  switch (kind) {
    case "vllm":
      return new VllmFront(ctx);
    case "llamacpp":
      return new LlamaCppFront(ctx);
    case "sglang":
      return new SglangFront(ctx);
    case "tgi":
      return new TgiFront(ctx);
    case "ollama":
      return new OllamaFront(ctx);
  }
}
