/**
 * The simulator's modes: words the engine core (model.ts), the engine fronts (engines/), the
 * server and its admin API all speak. Kept here, importing nothing, so the core and the fronts can
 * both use them without importing each other.
 */

/**
 * Modes that keep the server listening; restart and crash close the socket (server.ts).
 * - hang: every engine stops stepping, work in place. waiting-hang: running 0, waiting N, frozen.
 * - hang-engine: data parallel, the last engine stops stepping with its work while the others go on.
 * - wedged: no engine steps, but client aborts are processed and counted (finished_reason "abort").
 * - churn: preemption churn (vLLM #25538): KV cache and num_preemptions move, no token.
 * - deferred: `waiting` requests wait on something outside the engine (reason="deferred"), nothing runs.
 * - slow-metrics: /metrics answers only after a long delay while /health answers 200 at once.
 * - no-metrics: /metrics is another app's 404.
 */
export const LIVE_MODES = ["normal", "hang", "waiting-hang", "hang-engine", "wedged", "churn", "deferred", "slow-metrics", "no-metrics"] as const;
export type LiveMode = (typeof LIVE_MODES)[number];

/**
 * Modes a front may add to the server's live modes. "sleep": llama.cpp's --sleep-idle-seconds
 * state, Ollama's unloaded model. "loading": the model is loading while the port answers (only
 * llama.cpp binds before it loads; for the others the server turns it into a restart).
 * "blocked": the engine loop is stuck inside a device call, so everything that goes through the
 * loop never answers (llama.cpp's /metrics is a task on that loop) while liveness routes still do.
 */
export const FRONT_MODES = ["sleep", "loading", "blocked"] as const;
export type FrontMode = (typeof FRONT_MODES)[number];

/**
 * The live modes, the modes an engine front adds, and the two that close the socket (the server's
 * restart and crash).
 */
export type SimMode = LiveMode | FrontMode | "restart" | "crash";
export const SIM_MODES: readonly SimMode[] = [...LIVE_MODES, ...FRONT_MODES, "restart", "crash"];
