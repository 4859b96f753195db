/**
 * The one place a notification draft is made: the policy (problem, reminder, recovered, restart
 * scheduled), the restart verb (requested, a failed action) and the watcher (a restart resolved)
 * call these. Pure: the caller writes what they return inside its own transaction (invariant 11).
 * A field a message or a receiver reads (lib/notify/message.ts) is named here once, per event.
 */
import type { BackendState } from "../core/states";
import type { NotificationDraft } from "../core/events";
import type { Reason } from "../core/types";
import type { RestartOutcome } from "../../db/schema";
import type { CrashLoop, CrashLoopRule } from "../core/crash-loop";

/** What every draft of one backend at one moment carries. */
export interface DraftBase {
  backendId: string;
  state: BackendState;
  reasons: Reason[];
  at: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A problem opens: one `stuck` or `down`. */
export function problemDraft(base: DraftBase, event: "stuck" | "down", previousState: BackendState | null): NotificationDraft {
  return { ...base, event, previousState, details: { openSince: iso(base.at) } };
}

/** The same problem, still unacknowledged after renotifyMinutes. */
export function reminderDraft(base: DraftBase, event: "stuck" | "down", previousState: BackendState | null, openedAt: number): NotificationDraft {
  return { ...base, event, previousState, details: { reminder: true, openSince: iso(openedAt) } };
}

/** The problem is over: healthy for recoveredAfterSeconds on end. */
export function recoveredDraft(base: DraftBase, problem: "stuck" | "down", openedAt: number): NotificationDraft {
  return {
    ...base,
    event: "recovered",
    previousState: problem,
    details: { problem, openSince: iso(openedAt), problemSeconds: Math.round((base.at - openedAt) / 1000) },
  };
}

/** The unattended restart's countdown: when it will run. */
export function restartScheduledDraft(base: DraftBase, previousState: BackendState | null, scheduledAt: number, afterSeconds: number): NotificationDraft {
  return { ...base, event: "restart-scheduled", previousState, details: { scheduledAt, scheduledAtIso: iso(scheduledAt), afterSeconds } };
}

/** A restart event was inserted (by an operator or the unattended restart). */
export function restartRequestedDraft(
  base: DraftBase,
  restart: { id: number; requestedBy: string; note: string | null; overrideCooldown: boolean; action: string },
): NotificationDraft {
  return {
    ...base,
    event: "restart-requested",
    previousState: null,
    details: { restartId: restart.id, requestedBy: restart.requestedBy, note: restart.note, overrideCooldown: restart.overrideCooldown, action: restart.action },
  };
}

/** A pending restart was closed: recovered or timed out (the watcher), failed (the verb). */
export function restartFinishedDraft(
  base: DraftBase,
  restart: { id: number; requestedBy: string },
  end: { outcome: RestartOutcome; resolution: string; downtimeSeconds: number | null },
): NotificationDraft {
  return {
    ...base,
    event: "restart-finished",
    previousState: "restarting",
    details: { restartId: restart.id, requestedBy: restart.requestedBy, outcome: end.outcome, downtimeSeconds: end.downtimeSeconds, resolution: end.resolution },
  };
}

/**
 * A crash loop began: `rule.restarts` new processes stepwatch did not cause within
 * `rule.windowMinutes`. One per loop (its `since`); the loop's end sends nothing of its own.
 */
export function crashLoopDraft(base: DraftBase, loop: CrashLoop, rule: CrashLoopRule): NotificationDraft {
  return {
    ...base,
    event: "crash-loop",
    previousState: null,
    details: { loopSince: iso(loop.since), restarts: loop.restarts, windowMinutes: rule.windowMinutes, threshold: rule.restarts, clearsAt: iso(loop.clearsAt) },
  };
}
