/**
 * The simulated server's public words: the `Simulator` handle that startSimulator (server.ts)
 * returns and the admin API (admin.ts) drives, its state and its received log. Here, apart from
 * server.ts, so the admin API needs only the handle, not the server that serves it.
 */
import type { VllmSimModel } from "./model";
import type { LiveMode, SimMode } from "./modes";
import type { EngineKind, FrontRequestKind, FrontState } from "./engines/types";

/** listening: serving; loading: restarted, weights loading, refused; crashed: refused until recovered. */
export type SimPhase = "listening" | "loading" | "crashed" | "closed";

/** What a request was, by its path (each engine names its own routes: EngineFront.kindOf). */
export type RequestKind = FrontRequestKind;

export interface ReceivedRequest {
  method: string;
  path: string;
  /** Wall ms. */
  at: number;
  kind: RequestKind;
  completion: boolean;
  /** Load when the request arrived. */
  running: number;
  waiting: number;
  mode: LiveMode;
}

export interface SimState {
  url: string;
  port: number;
  modelName: string;
  phase: SimPhase;
  mode: LiveMode;
  running: number;
  waiting: number;
  kvCacheUsage: number;
  counters: { steps: number; promptTokens: number; generationTokens: number; finished: number };
  /** The current process's start time (also kept when /metrics does not expose it). */
  processStartTime: number;
  exposesProcessStartTime: boolean;
  /** Process number: 1, then +1 on every restart or recovery. */
  generation: number;
  received: number;
  completionsReceivedWhileBusy: number;
  httpInFlight: number;
  engine: EngineKind;
  /** What an engine's front adds (sleeping, who woke it, llama.cpp's start header); null for vLLM, which adds nothing. */
  engineState: FrontState | null;
}

export interface LoadSpec {
  requests: number;
  promptTokens?: number;
  maxTokens?: number;
  /** Finish early with "stop" after this many tokens. */
  outputTokens?: number;
}

export interface Simulator {
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly modelName: string;
  readonly engine: EngineKind;
  /** The engine model, for in-process inspection. */
  readonly model: VllmSimModel;
  phase(): SimPhase;
  mode(): LiveMode;
  /**
   * Live modes apply at once; "restart"/"crash" as the methods below with default options; the
   * engine fronts' modes (sleep, loading, blocked) as that engine does them (sim/engines/types.ts).
   */
  setMode(mode: SimMode, opts?: { waiting?: number; forSeconds?: number; weightsLoadSeconds?: number }): Promise<void>;
  /** Resolves once the socket is closed (refusing); listens again by itself after the weights load. */
  restart(opts?: { weightsLoadSeconds?: number }): Promise<void>;
  /** Resolves once the socket is closed. With forSeconds it comes back by itself as a new process. */
  crash(opts?: { forSeconds?: number }): Promise<void>;
  /** Listen again now as a new process (after a crash, or to cut a weights load short). */
  recover(): Promise<void>;
  /** Resolves when listening (at once if it is). */
  whenListening(): Promise<void>;
  /** Start background requests inside the engine (not over HTTP). */
  load(spec: LoadSpec): number;
  state(): SimState;
  received(): ReceivedRequest[];
  completionsReceivedWhileBusy(): ReceivedRequest[];
  resetLog(): void;
  close(): Promise<void>;
}
