/**
 * The one list of backend states. The DB column, the zod enums, the API types and the UI badges
 * all derive from these arrays: add a state here and the compiler shows every place to handle it.
 */
export const BACKEND_STATES = [
  "idle",
  "busy",
  "sleeping",
  "stalled",
  "stuck",
  "starting",
  "restarting",
  "down",
  "no-metrics",
  "unknown",
] as const;
export type BackendState = (typeof BACKEND_STATES)[number];

export const PROXY_STATES = ["up", "down", "unknown"] as const;
export type ProxyState = (typeof PROXY_STATES)[number];

/** "yes" healthy, "no" unhealthy, "watch" keep an eye on it, "unknown" cannot be judged. */
export type Health = "yes" | "no" | "watch" | "unknown";

/** The state table of docs/states.md, as data. */
export const STATE_INFO: Record<BackendState, { health: Health; label: string; description: string }> = {
  idle: { health: "yes", label: "Idle", description: "Nothing running or waiting; a tiny probe answered." },
  busy: { health: "yes", label: "Busy", description: "Work running or waiting, and the engine made progress." },
  sleeping: { health: "yes", label: "Sleeping", description: "Put to sleep on purpose (vLLM sleep mode, llama.cpp --sleep-idle-seconds): never probed, never stuck." },
  stalled: { health: "watch", label: "Stalled", description: "Work running or waiting with no progress since the last read, not yet stuck." },
  stuck: { health: "no", label: "Stuck", description: "No progress across two waits and stuckAfterSeconds with work in flight." },
  starting: { health: "watch", label: "Starting", description: "A new process since the last read, or loading its model; not yet shown serving." },
  restarting: { health: "watch", label: "Restarting", description: "A restart confirmed by an operator is in progress." },
  down: { health: "no", label: "Down", description: "Connections refused, or /metrics and /health both failing." },
  "no-metrics": { health: "unknown", label: "No metrics", description: "Reachable, but serves no load metrics: load cannot be judged." },
  unknown: { health: "unknown", label: "Unknown", description: "First read, or one failed read." },
};

export function isHealthy(state: BackendState): boolean {
  return STATE_INFO[state].health === "yes";
}

/**
 * Whether a state can call for a restart at all: stuck always; down once it has refused for
 * startupGraceSeconds (the verdict decides that, see classify).
 */
export function restartRecommended(state: BackendState): boolean {
  return state === "stuck" || state === "down";
}
