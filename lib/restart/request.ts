/**
 * The restart verb: the only way stepwatch ever restarts anything.
 *
 * 1. Validate against the config, the restart log and the watcher's current verdict, in this
 *    order: unknown id (404), nothing configured (501), a pending restart or the cooldown (409,
 *    with who asked and when, and until when), a healthy backend whose id was not typed (422).
 * 2. ONE SQLite transaction (BEGIN IMMEDIATE, insertRestartUnlessBlocked in db/queries/restarts.ts) inserts
 *    the restart event with INSERT ... SELECT ...
 *    WHERE NOT EXISTS (a pending restart, or one inside the cooldown), and its line in the audit
 *    log (who, from where, which backend). The partial unique index
 *    restart_events_one_pending backs it up across processes. Two concurrent confirms therefore
 *    cannot both insert, and only the one that inserted runs the action: no check-then-act in JS.
 * 3. Evidence first (issue 32): the incident's bundle (lib/watcher/evidence.ts), captured now when
 *    it has none yet, is linked to the event, and the action waits for its capture at most
 *    evidenceTimeoutSeconds: a hung evidence command never holds the restart longer.
 * 4. The action runs asynchronously, once, and only on the leader (docs/decisions.md "Replicas"):
 *    asked on a standby, the row is the request and the leader picks it up (`carryOutWaiting`,
 *    from the watcher's read of the latest restarts). Just before the command, the executor asks
 *    `isLeader()` again and marks the row started in a fenced transaction (db/fence.ts): a row is
 *    started once, by one leader. A failure (non-zero exit, timeout, webhook error) resolves the
 *    event as "failed" at once; success leaves it pending for the watcher to resolve (recovered /
 *    timed-out); a started row whose leader went before its result was recorded is resolved
 *    "unknown" by the next leader; a row no leader started within PICKUP_LIMIT_MS (lib/restart/resolve.ts)
 *    is closed "failed", not run. Nothing is retried without an operator.
 */
import { formatDateTime } from "../core/format";
import { type Reading, type Verdict, type PendingRestart, reason } from "../core/types";
import { isHealthy } from "../core/states";
import { backendOrThrow, DEFAULTS, type BackendConfig, type RestartAction } from "../config";
import { linkRestartEvidence } from "../../db/queries/evidence";
import type { Capture, EvidenceSource } from "./evidence";
import type { DbHandle } from "../../db/types";
import type { RestartEventRow } from "../../db/schema";
import { type AuditActorKind } from "../../db/queries/auth";
import { insertRestartUnlessBlocked, markRestartStarted, recordActionResult, restartBlockOf, type RestartBlock } from "../../db/queries/restarts";
import { fencedTransaction, LeaseLostError } from "../../db/fence";
import { DomainError } from "../core/errors";
import type { NotificationDraft } from "../core/events";
import { restartFinishedDraft, restartRequestedDraft } from "../notify/drafts";
import { actionFailed, notRunStale, PICKUP_LIMIT_MS } from "./resolve";
import { cooldownStart, cooldownUntil } from "./cooldown";
import { describeAction, executeAction, type ActionResult, type Env, type WebhookContext } from "./execute";
import { RestartRuns } from "./runs";

export interface RestartInput {
  backendId: string;
  /** The acting operator's name (a session's operator, an API token's or a trusted proxy user's name). */
  operator: string;
  /** How the operator was identified, for the audit log (default "operator": a session). */
  actorKind?: AuditActorKind;
  /** The client's address, for the audit log. */
  address?: string | null;
  /** The backend id typed by the operator; required when the backend is healthy. */
  confirm?: string;
  overrideCooldown?: boolean;
  note?: string;
  now: number;
}

export interface CurrentView {
  verdict: Verdict | null;
  /** The latest reading (running/waiting/start time at the moment of the request). */
  reading: Reading | null;
}

export interface RestartDeps {
  db: DbHandle;
  backends: BackendConfig[];
  restartCooldownSeconds: number;
  /**
   * The environment a restart command runs with: restartCommandEnv(process.env,
   * config.secretEnvNames). Required, so no caller hands stepwatch's own secrets to a command.
   */
  commandEnv: Env;
  /** What the watcher believes right now about a backend; null when it has not read it yet. */
  current(backendId: string): CurrentView | null;
  /** Told once the event is inserted, so the watcher shows `restarting` without waiting for a poll. */
  onPending?(backendId: string, pending: PendingRestart & { eventId: number }): void;
  /** Told when this verb resolved the event itself (the action failed), after the write committed. */
  onResolved?(backendId: string, outcome: "failed"): void;
  execute?: (action: RestartAction, ctx: WebhookContext) => Promise<ActionResult>;
  now?: () => number;
  /**
   * The incident's evidence (lib/watcher/evidence.ts EvidenceRecorder): asked after the event is
   * recorded, so a refused restart (404, 409, 422) starts no capture. None: the action runs at once.
   */
  evidence?: EvidenceSource;
  /** How long the action waits for the evidence capture (config evidenceTimeoutSeconds). */
  evidenceTimeoutSeconds?: number;
  /**
   * Writes a notification (lib/notify) inside the transaction that records the event:
   * restart-requested with the insert, restart-finished with a failed action's resolution.
   */
  notify?: (draft: NotificationDraft) => void;
  /**
   * Who may run restarts and which ones this process runs (the watcher's `restarts`). Absent: this
   * process alone on its database, always leading (tests of the verb alone).
   */
  runs?: RestartRuns;
}

export interface RestartAccepted {
  /** The audit row as inserted (lib/api/ turns it into the API's RestartEventDTO). */
  event: RestartEventRow;
  /** Settles when the action has run and its result is recorded (tests and shutdown wait on it). */
  done: Promise<void>;
  /** The evidence bundle linked to the event; null when none could be stored. */
  evidenceId: number | null;
}

const MAX_NOTE = 500;

export function requestRestart(input: RestartInput, deps: RestartDeps): RestartAccepted {
  const backend = backendOrThrow(deps.backends, input.backendId);
  if (!backend.restart) {
    throw new DomainError("not-configured", `no restart action is configured for "${backend.id}" (backends[].restart in the config)`);
  }
  const override = input.overrideCooldown === true;
  const since = override ? null : cooldownStart(input.now, deps.restartCooldownSeconds);
  // A pending restart or the cooldown is the stronger fact: the operator learns it (409) before
  // being asked to type a healthy backend's id (422). The insert below checks again, atomically.
  const block = storage(backend.id, () => restartBlockOf(deps.db.db, backend.id, since));
  if (block) throw conflictFor(backend.id, block, deps.restartCooldownSeconds);
  const view = deps.current(backend.id);
  const verdict = view?.verdict ?? null;
  const state = verdict?.state ?? "unknown";
  const healthy = isHealthy(state);
  if (healthy && input.confirm !== backend.id) {
    throw new DomainError(
      "confirmation-required",
      `"${backend.id}" is ${state} and healthy: type its id to confirm restarting it`,
      { state },
    );
  }
  const metrics = view?.reading?.metrics ?? null;
  const request = {
    backendId: backend.id,
    requestedAt: input.now,
    requestedBy: input.operator,
    note: input.note ? input.note.slice(0, MAX_NOTE) : null,
    state,
    healthy,
    running: metrics?.running ?? null,
    waiting: metrics?.waiting ?? null,
    processStartTime: metrics?.processStartTime ?? null,
    // The readings as stored for samples: without the in-memory latency histograms and finish
    // reasons (kept only for the next read's deltas; a hostile backend's could be megabytes).
    evidence: { reasons: verdict?.reasons ?? [reason("not-read-yet", "no reading yet")], readings: (verdict?.basis ?? []).map((r) => ({ ...r, latency: undefined })) },
    overrideCooldown: override,
    confirmedHealthy: healthy,
    action: describeAction(backend.restart),
  };

  let row: RestartEventRow;
  try {
    // The audit line and the restart-requested notification go in with the event, in its
    // transaction: a restart is never unaudited, and its notification is never lost.
    const result = insertRestartUnlessBlocked(deps.db.db, request, since, {
      audit: (ev) => ({
        at: ev.requestedAt,
        actor: input.operator,
        actorKind: input.actorKind ?? "operator",
        action: "restart",
        target: ev.backendId,
        address: input.address ?? null,
        detail: `restart #${ev.id}${ev.overrideCooldown ? ", cooldown overridden" : ""}${ev.confirmedHealthy ? ", confirmed while healthy" : ""}`,
      }),
      onInserted: (inserted) =>
        deps.notify?.(
          restartRequestedDraft(
            { backendId: backend.id, state, reasons: verdict?.reasons ?? [], at: input.now },
            { id: inserted.id, requestedBy: input.operator, note: inserted.note, overrideCooldown: override, action: inserted.action },
          ),
        ),
    });
    if ("blocked" in result) throw conflictFor(backend.id, result.blocked, deps.restartCooldownSeconds);
    row = result.inserted;
  } catch (e) {
    // Another process inserted between our NOT EXISTS and the write: the unique index refused it.
    if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
      throw new DomainError("conflict", `"${backend.id}" is already restarting`, { reason: "pending" });
    }
    if (e instanceof DomainError) throw e;
    throw unavailable(backend.id, e);
  }

  deps.onPending?.(backend.id, { requestedAt: row.requestedAt, processStartTime: row.processStartTimeAtRequest, eventId: row.id });
  const runs = runsOf(deps);
  if (!runs.leader.isLeader()) {
    // A standby: the row, its audit line and its notification are the request; the leader runs it.
    console.log(`[restart] restart #${row.id} of ${backend.id} asked on ${runs.leader.replicaId}, which does not lead: the leader runs it`);
    return { event: row, done: Promise.resolve(), evidenceId: null };
  }
  runs.take(row.id);
  const { capture, done } = carryOut(row, backend.restart, deps, runs);
  return { event: row, done, evidenceId: capture?.id ?? null };
}

const runsOf = (deps: RestartDeps) => deps.runs ?? new RestartRuns();

/**
 * The leader's pick-up: a pending restart asked on another replica (or by this one before it was
 * restarted) and not started yet is carried out here, once. Null when there is nothing to do
 * (not leading, started or resolved already, or this process carries it out already).
 */
export function carryOutWaiting(row: RestartEventRow, deps: RestartDeps): Promise<void> | null {
  const runs = runsOf(deps);
  if (row.outcome !== null || row.startedAt !== null || !runs.leader.isLeader() || !runs.take(row.id)) return null;
  const now = (deps.now ?? Date.now)();
  if (now - row.requestedAt > PICKUP_LIMIT_MS) {
    // Waited with no leader (the database away, every replica down): the request is stale.
    const stale = notRunStale(row, now);
    console.log(`[restart] restart #${row.id} of ${row.backendId}: ${stale.resolution}`);
    recordResult(row, { ok: false, exitCode: null, output: "", error: stale.resolution, finishedAt: now }, deps, runs, stale);
    runs.release(row.id);
    return Promise.resolve();
  }
  const action = deps.backends.find((b) => b.id === row.backendId)?.restart;
  if (!action) {
    // Another replica's config had an action this one lacks: closed as failed, never left blocking the backend.
    const error = `no restart action is configured for "${row.backendId}" on the leader (${runs.leader.replicaId})`;
    recordResult(row, { ok: false, exitCode: null, output: "", error, finishedAt: now }, deps, runs);
    runs.release(row.id);
    return Promise.resolve();
  }
  console.log(`[restart] ${runs.leader.replicaId} leads: carrying out restart #${row.id} of ${row.backendId}, asked by ${row.requestedBy}`);
  return carryOut(row, action, deps, runs).done;
}

/** Evidence first, then the action: by the leader, once; the event stays ours until its result is recorded. */
function carryOut(row: RestartEventRow, action: RestartAction, deps: RestartDeps, runs: RestartRuns): { capture: Capture | null; done: Promise<void> } {
  const capture = evidenceFirst(row, deps);
  const done = waitForEvidence(capture, deps)
    .then(() => runAndRecord(row, action, deps, runs))
    .finally(() => runs.release(row.id));
  return { capture, done };
}

/**
 * The incident's evidence bundle, captured now if it has none, linked to the event. After the
 * event's own transaction, never inside it: invariant 6's insert and audit line stay one
 * transaction, and a capture that cannot be stored costs the restart nothing but its bundle.
 */
function evidenceFirst(row: RestartEventRow, deps: RestartDeps): Capture | null {
  if (!deps.evidence) return null;
  try {
    const capture = deps.evidence.forRestart(row.backendId);
    if (capture) linkRestartEvidence(deps.db.db, row.id, capture.id);
    return capture;
  } catch (e) {
    console.error(`[restart] no evidence for restart #${row.id} of ${row.backendId}: ${(e as Error).message}`);
    return null;
  }
}

/** Until the capture ended, or evidenceTimeoutSeconds: whichever comes first. Never rejects. */
function waitForEvidence(capture: Capture | null, deps: RestartDeps): Promise<void> {
  if (!capture) return Promise.resolve();
  const ms = (deps.evidenceTimeoutSeconds ?? DEFAULTS.evidenceTimeoutSeconds) * 1000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([capture.done.catch(() => {}), timeout]).finally(() => clearTimeout(timer));
}

/**
 * Disk full, read-only or locked: without the audit row there is no restart (nothing runs
 * unrecorded), and the operator gets the reason instead of an anonymous 500.
 */
function unavailable(backendId: string, e: unknown): DomainError {
  return new DomainError("unavailable", `cannot record the restart of "${backendId}" in the database (${(e as Error).message}); nothing was run`);
}

function storage<T>(backendId: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw unavailable(backendId, e);
  }
}

/**
 * A moment in a message, in the dashboard's one format in UTC ("2026-12-01 03:19:04 UTC"): the
 * server's own zone is no one's, and the browser shows the exact time (in the details) in the
 * operator's chosen zone.
 */

/** The 409 for what blocked the restart: who asked the pending one and when, or until when the cooldown runs. */
function conflictFor(backendId: string, block: RestartBlock, cooldownSeconds: number): DomainError {
  const e = block.event;
  if (block.reason === "pending") {
    return new DomainError("conflict", `"${backendId}" is already restarting (asked by ${e.requestedBy} at ${formatDateTime(e.requestedAt)})`, {
      reason: "pending",
      pendingId: e.id,
      requestedBy: e.requestedBy,
      requestedAt: e.requestedAt,
    });
  }
  const until = cooldownUntil(e.requestedAt, cooldownSeconds);
  return new DomainError("conflict", `"${backendId}" is in cooldown until ${formatDateTime(until)}; override the cooldown to restart anyway`, {
    reason: "cooldown",
    cooldownUntil: until,
    requestedBy: e.requestedBy,
    requestedAt: e.requestedAt,
  });
}

/**
 * The last question before acting: this replica still leads, and the row is marked started by it,
 * in a fenced transaction, only if nobody started or resolved it. False: nothing runs here (a row
 * left unstarted is the next leader's to pick up).
 */
function markStarted(row: RestartEventRow, deps: RestartDeps, runs: RestartRuns, at: number): boolean {
  const { leader } = runs;
  const epoch = leader.epoch();
  if (epoch === null || !leader.isLeader()) {
    console.log(`[restart] restart #${row.id} of ${row.backendId} not run: ${leader.replicaId} does not lead any more (the leader runs it)`);
    return false;
  }
  try {
    const pinned = { replicaId: leader.replicaId, isLeader: () => true, epoch: () => epoch, sole: leader.sole };
    return fencedTransaction(deps.db.db, pinned, () => markRestartStarted(deps.db.db, row.id, { at, replicaId: leader.replicaId, epoch }));
  } catch (e) {
    const why = e instanceof LeaseLostError ? e.message : `cannot mark it started (${(e as Error).message})`;
    console.error(`[restart] restart #${row.id} of ${row.backendId} not run: ${why}`);
    return false;
  }
}

async function runAndRecord(row: RestartEventRow, action: RestartAction, deps: RestartDeps, runs: RestartRuns): Promise<void> {
  const now = deps.now ?? Date.now;
  if (!markStarted(row, deps, runs, now())) return;
  const execute = deps.execute ?? ((a, c) => executeAction(a, c, { env: deps.commandEnv, now }));
  let result: ActionResult;
  try {
    result = await execute(action, { backendId: row.backendId, eventId: row.id, requestedBy: row.requestedBy });
  } catch (e) {
    result = { ok: false, exitCode: null, output: "", error: `restart action crashed: ${(e as Error).message}`, finishedAt: now() };
  }
  recordResult(row, result, deps, runs);
}

/** The action's result, fenced: a replica deposed meanwhile writes nothing (the next leader resolves the row `unknown`). */
function recordResult(row: RestartEventRow, result: ActionResult, deps: RestartDeps, runs: RestartRuns, closed?: { outcome: "failed"; resolution: string }): void {
  let failedHere = false;
  try {
    // A failed action closes the event at once; nothing is retried without an operator.
    const failed = result.ok ? null : (closed ?? actionFailed(result.error));
    const notifyFailed = () =>
      deps.notify?.(
        restartFinishedDraft(
          { backendId: row.backendId, state: deps.current(row.backendId)?.verdict?.state ?? row.stateAtRequest, reasons: [reason("restart-action-failed", failed!.resolution)], at: result.finishedAt },
          row,
          { ...failed!, downtimeSeconds: null },
        ),
      );
    failedHere = fencedTransaction(deps.db.db, runs.leader, () => recordActionResult(deps.db.db, row.id, result, failed, notifyFailed));
  } catch (e) {
    console.error(`[restart] could not record the result of restart #${row.id} of ${row.backendId}: ${(e as Error).message}`);
  }
  if (failedHere) deps.onResolved?.(row.backendId, "failed");
}
