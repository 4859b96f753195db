/**
 * When a backend's verdicts become notifications: pure, no I/O, no clock (the reading's time
 * goes in). The watcher calls `decide` after every verdict and writes what it returns in the same
 * transaction as the transition.
 *
 * A *problem* opens when the verdict recommends a restart (stuck; down only after the
 * startupGraceSeconds of the check, which the classifier folds into restartRecommended) and sends
 * one `stuck`/`down`. It stays open until the backend has been healthy for recoveredAfterSeconds
 * on end, then sends one `recovered` and clears the acknowledgement.
 *
 * `sleeping` is healthy: never a problem, and a stuck server put to sleep counts as over.
 *
 * Flap debounce: a stuck -> busy -> stuck flap shorter than recoveredAfterSeconds neither closes
 * the problem nor opens a new one, so it sends nothing; the check itself already needs two waits
 * (stuck) or two refused reads (down) before it recommends anything. A problem that stays
 * unacknowledged is re-sent every renotifyMinutes (never while acknowledged, in maintenance or
 * while a restart is pending).
 */
import { isHealthy, recommendedNow, restartRecommended, type BackendState } from "../core/states";
import type { Verdict } from "../core/types";
import type { UnattendedConfig } from "../config";
import type { NotificationDraft } from "../core/events";
import { problemDraft, recoveredDraft, reminderDraft, restartScheduledDraft, type DraftBase } from "./drafts";

export interface ProblemState {
  /** The open problem, or null. */
  open: { event: "stuck" | "down"; openedAt: number; lastSentAt: number; previousState: BackendState | null } | null;
  /** Healthy on every verdict since then; null when the last verdict was not healthy. */
  healthySince: number | null;
  /** restartRecommended on every verdict since then (the unattended countdown starts here). */
  recommendedSince: number | null;
  /** The restart time a restart-scheduled notification was sent for (one per countdown). */
  scheduledFor: number | null;
}

export const NO_PROBLEM: ProblemState = { open: null, healthySince: null, recommendedSince: null, scheduledFor: null };

export interface DecideInput {
  backendId: string;
  verdict: Verdict;
  at: number;
  /** The state before the current one (transition's from). */
  previousState: BackendState | null;
  acknowledged: boolean;
  inMaintenance: boolean;
  restartPending: boolean;
  renotifyMinutes: number;
  recoveredAfterSeconds: number;
  /** Only when configured for the backend. */
  unattended?: UnattendedConfig;
  /** False once maxPerDay unattended restarts of this backend ran in the last 24 h. */
  unattendedAllowed: boolean;
}

export interface Decision {
  state: ProblemState;
  drafts: NotificationDraft[];
  /** The problem is over: clear the acknowledgement. */
  clearAcknowledgement: boolean;
  /** The unattended restart is due now (the caller asks the one restart verb). */
  restartNow: boolean;
}

/**
 * Why a verdict is not a proven problem, or null when it is one: the one test behind a `stuck`/
 * `down` notification and the unattended restart (lib/oncall/unattended.ts asks it again at the
 * last moment). A sleeping server was put to sleep on purpose; a down one inside
 * startupGraceSeconds may be loading its weights (the classifier then leaves restartRecommended
 * false); a configuration problem (the probe needs the API key) is stepwatch's, not the engine's.
 */
export function notProvenProblem(verdict: Verdict): string | null {
  if (verdict.state === "sleeping") return "it is sleeping (put to sleep on purpose)";
  if (verdict.configProblem) return `a configuration problem keeps it from being judged (${verdict.configProblem})`;
  if (!recommendedNow(verdict, false)) {
    return verdict.state === "down" ? "down, but inside startupGraceSeconds (it may be loading its weights)" : `${verdict.state}: no restart recommended`;
  }
  return null;
}

export function decide(prev: ProblemState, i: DecideInput): Decision {
  const { verdict, at } = i;
  const healthy = verdict.healthy && isHealthy(verdict.state);
  const recommended = notProvenProblem(verdict) === null && recommendedNow(verdict, i.inMaintenance);
  const state: ProblemState = {
    ...prev,
    healthySince: healthy ? (prev.healthySince ?? at) : null,
    recommendedSince: recommended ? (prev.recommendedSince ?? at) : null,
  };
  if (!recommended) state.scheduledFor = null;
  const drafts: NotificationDraft[] = [];
  const base: DraftBase = { backendId: i.backendId, state: verdict.state, reasons: verdict.reasons, at };
  const quiet = state.healthySince !== null && at - state.healthySince >= i.recoveredAfterSeconds * 1000;
  let clearAcknowledgement = false;

  if (state.open && quiet) {
    if (!i.inMaintenance) {
      drafts.push(recoveredDraft(base, state.open.event, state.open.openedAt));
    }
    state.open = null;
    clearAcknowledgement = true;
  } else if (!state.open && quiet && i.acknowledged) {
    clearAcknowledgement = true; // acknowledged a wobble that never became a problem: healthy again
  }

  if (!state.open && recommended) {
    const event = verdict.state === "down" ? "down" : "stuck";
    state.open = { event, openedAt: at, lastSentAt: at, previousState: i.previousState };
    drafts.push(problemDraft(base, event, i.previousState));
  } else if (state.open && !healthy && !i.acknowledged && !i.inMaintenance && !i.restartPending && verdict.state !== "restarting") {
    if (at - state.open.lastSentAt >= i.renotifyMinutes * 60_000) {
      const event = verdict.state === "down" ? "down" : verdict.state === "stuck" ? "stuck" : state.open.event;
      drafts.push(reminderDraft(base, event, state.open.previousState, state.open.openedAt));
      state.open = { ...state.open, lastSentAt: at };
    }
  }

  let restartNow = false;
  const eligible = i.unattended && recommended && state.recommendedSince !== null && !i.acknowledged && !i.restartPending && !healthy && i.unattendedAllowed;
  if (eligible) {
    const due = state.recommendedSince! + i.unattended!.afterSeconds * 1000;
    if (state.scheduledFor !== due) {
      drafts.push(restartScheduledDraft(base, i.previousState, due, i.unattended!.afterSeconds));
      state.scheduledFor = due;
    }
    restartNow = at >= due;
  }
  return { state, drafts, clearAcknowledgement, restartNow };
}

/** The problem state after a restart of stepwatch, from the stored notifications and the last transition. */
export function seedProblemState(
  seed: { lastProblem: { event: string; at: number; previousState: BackendState | null; details: Record<string, unknown> } | null; lastScheduled: { at: number; details: Record<string, unknown> } | null },
  storedState: BackendState | null,
  since: number | null,
): ProblemState {
  const p = seed.lastProblem;
  const openedAt = p && typeof p.details.openSince === "string" ? Date.parse(p.details.openSince) : NaN;
  const open =
    p && (p.event === "stuck" || p.event === "down")
      ? { event: p.event as "stuck" | "down", openedAt: Number.isFinite(openedAt) ? openedAt : p.at, lastSentAt: p.at, previousState: p.previousState }
      : null;
  const current = storedState !== null && since !== null;
  // The stored state is all that survives a restart of stepwatch: a stored down counts as past its grace.
  const recommendedSince = current && restartRecommended(storedState) ? since : null;
  const s = seed.lastScheduled;
  const scheduledFor =
    recommendedSince !== null && s && s.at >= recommendedSince && typeof s.details.scheduledAt === "number" ? s.details.scheduledAt : null;
  return { open, healthySince: current && isHealthy(storedState) ? since : null, recommendedSince, scheduledFor };
}
