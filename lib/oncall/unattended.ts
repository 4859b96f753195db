/**
 * The opt-in unattended restart (restart.unattended): when the watcher finds it due (lib/notify/
 * policy.ts: stuck, or down past the check's startup grace, for afterSeconds, not acknowledged,
 * not in maintenance, fewer than maxPerDay in 24 h), it goes through THE restart verb like an
 * operator's: one pending, cooldown, evidence kept, the audit row, a restart-requested
 * notification. requestedBy is "stepwatch:unattended". The verb's own rules still apply, so a
 * backend that turned healthy meanwhile is refused (nobody typed its id). Right before asking, the
 * watcher's current verdict must still be a proven problem (notProvenProblem): never a sleeping
 * backend, a down one inside startupGraceSeconds, or one with a configuration problem. Only the
 * leader asks (the watcher finds it due only while leading; asked again here): a standby's verdicts
 * are its own, and every replica asking would make one restart per replica.
 */
import { DomainError } from "../core/errors";
import { notProvenProblem } from "../notify/policy";
import type { BackendConfig } from "../config";
import { requestRestart, type RestartDeps } from "../restart/request";
import type { Watcher } from "../watcher";
import { UNATTENDED_BY } from "../watcher/monitors";

/** What the unattended restart needs, built by the root (lib/runtime.ts unattendedDeps) at the moment it is due. */
export interface UnattendedDeps {
  /** The backends of the config in force. */
  backends: readonly BackendConfig[];
  /** What the watcher knows right now: acknowledgements and maintenance, verdicts, since when a restart is recommended. */
  watcher: Pick<Watcher, "book" | "current" | "backends">;
  /** The one restart verb's collaborators. */
  restart: RestartDeps;
}

export function requestUnattendedRestart(deps: UnattendedDeps, backendId: string, now: number, log: (m: string) => void = console.log): boolean {
  const b = deps.backends.find((x) => x.id === backendId);
  if (!b?.unattended) return false;
  if (deps.restart.runs && !deps.restart.runs.leader.isLeader()) return false;
  // Checked again here, at the last moment: an acknowledgement or maintenance may be seconds old.
  if (deps.watcher.book.acknowledgement(backendId) || deps.watcher.book.silenced(backendId, now)) return false;
  const verdict = deps.watcher.current(backendId)?.verdict ?? null;
  const why = verdict ? notProvenProblem(verdict) : "not read yet";
  if (why !== null) {
    log(`stepwatch: unattended restart of ${backendId} not asked for: ${why}`);
    return false;
  }
  const stuckFor = deps.watcher.backends.get(backendId)?.problem.recommendedSince;
  const note = `unattended restart (restart.unattended.afterSeconds ${b.unattended.afterSeconds})${stuckFor ? `: restart recommended since ${new Date(stuckFor).toISOString()}` : ""}`;
  try {
    const { event, done } = requestRestart({ backendId, operator: UNATTENDED_BY, actorKind: "system", note, now }, deps.restart);
    log(`stepwatch: unattended restart #${event.id} of ${backendId} asked for`);
    done.catch((e) => log(`stepwatch: unattended restart #${event.id} of ${backendId}: ${(e as Error).message}`));
    return true;
  } catch (e) {
    log(`stepwatch: unattended restart of ${backendId} not started: ${e instanceof DomainError ? e.message : (e as Error)?.message}`);
    return false;
  }
}
