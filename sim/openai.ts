/**
 * OpenAI-compatible request parsing and response bodies, shaped like vLLM's. Pure helpers for the
 * vLLM front (engines/vllm.ts) and the engines that copy vLLM's OpenAI routes.
 */
import type { EngineRequest } from "./engine";

export interface CompletionAsk {
  chat: boolean;
  stream: boolean;
  model: string | undefined;
  promptTokens: number;
  maxTokens: number;
  stopAfter: number | null;
}

export class BadRequest extends Error {
  constructor(
    message: string,
    readonly status = 400,
    readonly type = "BadRequestError",
  ) {
    super(message);
  }
}

/** vLLM's error body. */
export function errorBody(message: string, type: string, code: number): unknown {
  return { object: "error", message, type, param: null, code };
}

/** About four characters per token: close enough for a simulator's prompt-length bookkeeping. */
function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textOf).join(" ");
  if (value && typeof value === "object") {
    const v = value as Record<string, unknown>;
    if (typeof v.text === "string") return v.text;
    if ("content" in v) return textOf(v.content);
  }
  return "";
}

function positiveInt(v: unknown, field: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) throw new BadRequest(`${field} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

/**
 * Parse a /v1/completions or /v1/chat/completions body. Besides the OpenAI fields it accepts two
 * simulator extensions (vLLM ignores unknown fields): `sim_prompt_tokens` sets the prompt length
 * without sending a long text, `sim_output_tokens` ends the answer early with finish_reason "stop".
 */
export function parseCompletionAsk(body: unknown, chat: boolean, maxModelLen: number): CompletionAsk {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw new BadRequest("request body must be a JSON object");
  const b = body as Record<string, unknown>;
  if (b.model !== undefined && typeof b.model !== "string") throw new BadRequest("model must be a string");
  let text: string;
  if (chat) {
    if (!Array.isArray(b.messages) || b.messages.length === 0) throw new BadRequest("messages must be a non-empty array");
    text = textOf(b.messages);
  } else {
    if (b.prompt === undefined) throw new BadRequest("prompt is required");
    text = textOf(b.prompt);
  }
  const promptTokens = positiveInt(b.sim_prompt_tokens, "sim_prompt_tokens") ?? estimateTokens(text);
  // OpenAI's defaults: 16 for completions; chat runs to the context limit, capped here at 256.
  const maxTokens = positiveInt(b.max_tokens, "max_tokens") ?? positiveInt(b.max_completion_tokens, "max_completion_tokens") ?? (chat ? 256 : 16);
  if (promptTokens + maxTokens > maxModelLen)
    throw new BadRequest(
      `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
    );
  const stopAfter = positiveInt(b.sim_output_tokens, "sim_output_tokens") ?? null;
  return { chat, stream: b.stream === true, model: b.model as string | undefined, promptTokens, maxTokens, stopAfter };
}

const WORDS = [" The", " engine", " is", " busy", " and", " making", " progress", " step", " by", " step", "."];

/** Deterministic text for output tokens [from, to). */
export function tokensText(from: number, to: number): string {
  let s = "";
  for (let i = from; i < to; i++) s += WORDS[i % WORDS.length];
  return s;
}

export interface ResponseMeta {
  id: string;
  created: number;
  model: string;
}

function usage(r: EngineRequest) {
  return { prompt_tokens: r.promptTokens, total_tokens: r.promptTokens + r.generated, completion_tokens: r.generated, prompt_tokens_details: null };
}

export function completionBody(ask: CompletionAsk, meta: ResponseMeta, r: EngineRequest): unknown {
  const text = tokensText(0, r.generated);
  const finish = r.finishReason ?? "length";
  if (ask.chat)
    return {
      ...meta,
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: text, tool_calls: [] }, logprobs: null, finish_reason: finish, stop_reason: null }],
      usage: usage(r),
    };
  return { ...meta, object: "text_completion", choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null }], usage: usage(r) };
}

/** One SSE event carrying output tokens [from, to); finishReason set on the last one. */
export function streamChunk(ask: CompletionAsk, meta: ResponseMeta, from: number, to: number, finishReason: string | null): string {
  const text = tokensText(from, to);
  const chunk = ask.chat
    ? {
        ...meta,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: from === 0 ? { role: "assistant", content: text } : { content: text }, logprobs: null, finish_reason: finishReason }],
      }
    : { ...meta, object: "text_completion", choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null }] };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

export const STREAM_DONE = "data: [DONE]\n\n";
