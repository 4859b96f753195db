/**
 * The engine-neutral shape every adapter (lib/engines/<engine>.ts) produces and the classifier
 * reads. Field names are vLLM's first version's (stored readings in SQLite keep that shape); every
 * field added since is optional, so a reading stored before an upgrade still classifies.
 */

/** The engines stepwatch knows; config `engine` is one of these or "auto". */
export const ENGINE_KINDS = ["vllm", "llamacpp", "sglang", "tgi", "ollama"] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
export const ENGINE_CHOICES = ["auto", ...ENGINE_KINDS] as const;
export type EngineChoice = (typeof ENGINE_CHOICES)[number];

export const ENGINE_LABELS: Record<EngineKind, string> = {
  vllm: "vLLM",
  llamacpp: "llama.cpp",
  sglang: "SGLang",
  tgi: "TGI",
  ollama: "Ollama",
};

/** The figures of one engine core (a vLLM data-parallel rank), or of the whole server (the sums). */
export interface EngineSlice {
  running: number;
  waiting: number;
  /**
   * The part of `waiting` that is the engine's to schedule (vLLM `reason="capacity"`). Requests
   * deferred on something outside the engine (a grammar compile, KV from a remote prefill, a
   * streaming client) are not. null/absent: the engine does not say, all of `waiting` counts.
   */
  waitingCapacity?: number | null;
  /** The adapter's step counter (vLLM steps, llama.cpp n_decode, SGLang forward passes, TGI forward calls). */
  steps: number | null;
  promptTokens: number | null;
  generationTokens: number | null;
  /** Requests that finished by themselves: aborted and errored ones are not progress. */
  finishedRequests: number | null;
  /** 0..1. */
  kvCacheUsage: number | null;
  /** Requests pushed back to recompute (vLLM num_preemptions_total): a KV change with these rising is churn. */
  preemptions?: number | null;
  /** A throughput gauge (SGLang gen_throughput, tokens/s of the last log interval). */
  throughput?: number | null;
  /** Put to sleep on purpose (vLLM engine_sleep_state awake=0). */
  asleep?: boolean | null;
  /**
   * Busy slots per engine step since the engine's last scrape (llama.cpp n_busy_slots_per_decode):
   * with every busy slot decoding one token per step, generation tokens ≈ steps × this.
   */
  slotsPerStep?: number | null;
}

/** Counters a comparison of two reads may use; the adapter says which are evidence of a hang. */
export const PROGRESS_COUNTERS = ["steps", "promptTokens", "generationTokens", "finishedRequests"] as const;
export type ProgressCounter = (typeof PROGRESS_COUNTERS)[number];
/**
 * When an engine moves a figure (docs/engines.md "Cadence"): on every engine step ("step"), when its
 * scheduler logs ("scheduler-log", SGLang: every 40 decode steps), when a request (or a prompt)
 * ends ("request-end"), or as a gauge over the window since the last scrape ("scrape-window").
 * Only a "step" figure shows progress between any two reads; the others are shown as averages
 * over a window long enough to span them, never as 0 then a spike.
 */
export const CADENCES = ["step", "scheduler-log", "request-end", "scrape-window"] as const;
export type Cadence = (typeof CADENCES)[number];
/** The figures an adapter states a cadence for; one it does not name is "step". */
export type CadencedFigure = ProgressCounter | "throughput";

/** Figures whose staying flat, with work in flight, is evidence of a hang. */
export type EvidenceFigure = "steps" | "promptTokens" | "generationTokens" | "throughput";

export interface EngineMetrics extends EngineSlice {
  /** process_start_time_seconds (unix seconds); null when not exposed. */
  processStartTime: number | null;
  /**
   * An opaque value that changes with every new process when no start time is exposed (llama.cpp's
   * Process-Start-Time-Unix response header). Compared for equality only.
   */
  processToken?: string | null;
  /** Served model names. */
  models: string[];
  /** Per data-parallel engine (vLLM's `engine` label), present only when there are two or more. */
  engines?: Record<string, EngineSlice>;
  /** vLLM sleep level while asleep (1 weights offloaded, 2 discard all). */
  sleepLevel?: number | null;
  /**
   * Which figures' flatness is evidence of a hang, stated by the adapter. Absent (readings stored
   * by the first version): steps, prompt and generation tokens, as vLLM.
   */
  evidence?: EvidenceFigure[];
  /** When each figure moves, stated by the adapter; a figure not named (and readings stored before this) is "step". */
  cadence?: Partial<Record<CadencedFigure, Cadence>>;
}

/** What a read of an engine produced, before the classifier: the adapter's part of a Reading. */
export interface EngineParse {
  metrics: EngineMetrics | null;
  /** Why metrics is null, for a person. */
  error?: string;
  /** Unusable values treated as missing, unparseable lines in an otherwise good body. */
  warnings: string[];
}
