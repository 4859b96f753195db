/**
 * How a state looks: a tone (the badge colour, defined in app/globals.css) always paired with the
 * state's words, so nothing is told by colour alone. Derived from the one list of states.
 */
import { STATE_INFO, type BackendState, type ProxyState } from "../core/states";

export type Tone = "ok" | "warn" | "bad" | "info" | "muted";

export const STATE_TONE: Record<BackendState, Tone> = {
  idle: "ok",
  busy: "ok",
  sleeping: "ok",
  stalled: "warn",
  stuck: "bad",
  starting: "info",
  restarting: "info",
  down: "bad",
  "no-metrics": "muted",
  unknown: "muted",
};

export const PROXY_TONE: Record<ProxyState, Tone> = { up: "ok", down: "bad", unknown: "muted" };

export function stateLabel(state: BackendState): string {
  return STATE_INFO[state].label;
}

/** What the restart dialog must ask for: a healthy backend needs its id typed. */
export function needsTypedConfirmation(state: BackendState): boolean {
  return STATE_INFO[state].health === "yes";
}

/** "2 running and 1 waiting requests will fail." — the cost of a restart, in the operator's words. */
export function inFlightWarning(running: number | null, waiting: number | null): string {
  if (running === null && waiting === null) return "The number of requests in flight is not known; any will fail.";
  const r = running ?? 0;
  const w = waiting ?? 0;
  const n = r + w;
  if (n === 0) return "No requests are in flight right now.";
  const parts = [r ? `${fmt(r)} running` : null, w ? `${fmt(w)} waiting` : null].filter(Boolean).join(" and ");
  return `${parts} ${n === 1 ? "request" : "requests"} will fail.`;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}
