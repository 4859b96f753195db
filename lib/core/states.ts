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

/**
 * How the backends a proxy fronts (`proxies[].backends`) stand: "ok" all healthy, "degraded" some,
 * "none" not one. A proxy's own `ProxyState` only says it answers /v1/models, which it does with
 * every backend behind it down; this is the word its colour is taken from (amber some, red none).
 */
export type ProxyHealth = "ok" | "degraded" | "none";

export function proxyHealth(healthy: number, total: number): ProxyHealth {
  return healthy >= total ? "ok" : healthy === 0 ? "none" : "degraded";
}

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

/** What besides the state decides a restart recommendation (each optional: absent means "not known to hold it back"). */
export interface RestartFacts {
  /** A `down` from refused connections: how long it has refused (s). A `down` without it (timeouts) counts at once. */
  refusedSeconds?: number;
  /** startupGraceSeconds of the check: a server refusing for less may be loading its weights. */
  startupGraceSeconds?: number;
  /** A maintenance in force (lib/oncall/book.ts `silenced`): nothing is recommended during it. */
  silenced?: boolean;
}

/**
 * The one rule of a restart recommendation: stuck always; down once it has refused for
 * startupGraceSeconds (vLLM refuses while it loads its weights, and a restart then starts the load
 * over); nothing while the backend is in maintenance. The classifier asks it with the refusal's
 * span, the notification policy, the fleet view and the stored state with what they know.
 */
export function restartRecommended(state: BackendState, facts: RestartFacts = {}): boolean {
  if (facts.silenced) return false;
  if (state === "stuck") return true;
  if (state !== "down") return false;
  return facts.refusedSeconds === undefined || facts.refusedSeconds >= (facts.startupGraceSeconds ?? 0);
}

/**
 * A verdict's recommendation (made by the classifier with restartRecommended) as it stands now:
 * none without a verdict, none in maintenance.
 */
export function recommendedNow(verdict: { restartRecommended: boolean } | null, silenced: boolean): boolean {
  return verdict !== null && verdict.restartRecommended && !silenced;
}
