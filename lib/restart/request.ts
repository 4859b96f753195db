/**
 * The restart verb: the only way stepwatch ever restarts anything.
 *
 * 1. Validate against the config and the watcher's current verdict (unknown id, nothing
 *    configured, a healthy backend whose id was not typed).
 * 2. ONE SQLite transaction (BEGIN IMMEDIATE) inserts the audit row with INSERT ... SELECT ...
 *    WHERE NOT EXISTS (a pending restart, or one inside the cooldown). The partial unique index
 *    restart_events_one_pending backs it up across processes. Two concurrent confirms therefore
 *    cannot both insert, and only the one that inserted runs the action: no check-then-act in JS.
 * 3. The action runs asynchronously, once. A failure (non-zero exit, timeout, webhook error)
 *    resolves the event as "failed" at once; success leaves it pending for the watcher to resolve
 *    (recovered / timed-out). Nothing is retried without an operator.
 */
import type { Reading, Verdict, PendingRestart } from "../check/types";
import { isHealthy } from "../check/states";
import type { BackendConfig, RestartAction } from "../config";
import type { DbHandle } from "../../db/client";
import { eq } from "drizzle-orm";
import { restartEvents, type RestartEventRow } from "../../db/schema";
import { resolveRestart } from "../../db/queries";
import { restartDTO } from "../watcher/snapshot";
import type { RestartEventDTO } from "../api/types";
import { DomainError } from "../errors";
import { formatClock } from "../ui/format";
import type { NotificationDraft } from "../notify/outbox";
import type { Runtime } from "../runtime";
import { describeAction, executeAction, restartCommandEnv, type ActionResult, type Env, type WebhookContext } from "./execute";

export interface RestartInput {
  backendId: string;
  /** The signed-in operator's name. */
  operator: string;
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
  execute?: (action: RestartAction, ctx: WebhookContext) => Promise<ActionResult>;
  now?: () => number;
  /**
   * Writes a notification (lib/notify) inside the transaction that records the event:
   * restart-requested with the insert, restart-finished with a failed action's resolution.
   */
  notify?: (draft: NotificationDraft) => void;
}

/** The verb's dependencies in a running stepwatch: its config, its database, its watcher. */
export function restartDeps(rt: Pick<Runtime, "config" | "db" | "watcher">, env: NodeJS.ProcessEnv = process.env): RestartDeps {
  return {
    db: rt.db,
    backends: rt.config.backends,
    restartCooldownSeconds: rt.config.restartCooldownSeconds,
    commandEnv: restartCommandEnv(env, rt.config.secretEnvNames),
    current: (b) => rt.watcher.current(b),
    onPending: (b, p) => rt.watcher.notifyRestartRequested(b, p),
    notify: (d) => rt.watcher.notify(d),
  };
}

export interface RestartAccepted {
  event: RestartEventDTO;
  /** Settles when the action has run and its result is recorded (tests and shutdown wait on it). */
  done: Promise<void>;
}

const INSERT_SQL = `
INSERT INTO restart_events (
  backend_id, requested_at, requested_by, note, state_at_request, healthy_at_request,
  running_at_request, waiting_at_request, process_start_time_at_request, evidence,
  override_cooldown, confirmed_healthy, action)
SELECT @backendId, @requestedAt, @requestedBy, @note, @state, @healthy,
  @running, @waiting, @processStartTime, @evidence,
  @overrideCooldown, @confirmedHealthy, @action
WHERE NOT EXISTS (
  SELECT 1 FROM restart_events
  WHERE backend_id = @backendId
    AND (outcome IS NULL OR (@enforceCooldown = 1 AND requested_at > @cooldownStart))
)`;

const MAX_NOTE = 500;

export function requestRestart(input: RestartInput, deps: RestartDeps): RestartAccepted {
  const backend = deps.backends.find((b) => b.id === input.backendId);
  if (!backend) throw new DomainError("not-found", `no backend "${input.backendId}" in the config`);
  if (!backend.restart) {
    throw new DomainError("not-configured", `no restart action is configured for "${backend.id}" (backends[].restart in the config)`);
  }
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
  const override = input.overrideCooldown === true;
  const cooldownMs = deps.restartCooldownSeconds * 1000;
  const params = {
    backendId: backend.id,
    requestedAt: input.now,
    requestedBy: input.operator,
    note: input.note ? input.note.slice(0, MAX_NOTE) : null,
    state,
    healthy: healthy ? 1 : 0,
    running: metrics?.running ?? null,
    waiting: metrics?.waiting ?? null,
    processStartTime: metrics?.processStartTime ?? null,
    evidence: JSON.stringify({ reasons: verdict?.reasons ?? ["no reading yet"], readings: verdict?.basis ?? [] }),
    overrideCooldown: override ? 1 : 0,
    confirmedHealthy: healthy ? 1 : 0,
    action: describeAction(backend.restart),
    enforceCooldown: override ? 0 : 1,
    cooldownStart: input.now - cooldownMs,
  };

  const sqlite = deps.db.sqlite;
  const insertTx = sqlite.transaction((): RestartEventRow => {
    const info = sqlite.prepare(INSERT_SQL).run(params);
    if (info.changes !== 1) throw conflictFor(deps.db, backend.id, cooldownMs);
    const inserted = selectEvent(deps.db, Number(info.lastInsertRowid));
    deps.notify?.({
      event: "restart-requested",
      backendId: backend.id,
      state,
      previousState: null,
      reasons: verdict?.reasons ?? [],
      at: input.now,
      details: { restartId: inserted.id, requestedBy: input.operator, note: inserted.note, overrideCooldown: override, action: inserted.action },
    });
    return inserted;
  });
  let row: RestartEventRow;
  try {
    row = insertTx.immediate();
  } catch (e) {
    // Another process inserted between our NOT EXISTS and the write: the unique index refused it.
    if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
      throw new DomainError("conflict", `"${backend.id}" is already restarting`, { reason: "pending" });
    }
    if (e instanceof DomainError) throw e;
    // Disk full, read-only or locked: without the audit row there is no restart (nothing runs
    // unrecorded), and the operator gets the reason instead of an anonymous 500.
    throw new DomainError("unavailable", `cannot record the restart of "${backend.id}" in the database (${(e as Error).message}); nothing was run`);
  }

  deps.onPending?.(backend.id, { requestedAt: row.requestedAt, processStartTime: row.processStartTimeAtRequest, eventId: row.id });
  const done = runAndRecord(row, backend.restart, deps);
  return { event: restartDTO(row), done };
}

function selectEvent(db: DbHandle, id: number): RestartEventRow {
  // Same connection, inside the open transaction: drizzle maps columns, JSON and booleans.
  const row = db.db.select().from(restartEvents).where(eq(restartEvents.id, id)).get();
  if (!row) throw new Error(`restart event #${id} vanished inside its own transaction`);
  return row;
}

/** Why the conditional insert inserted nothing, read inside the same transaction. */
function conflictFor(db: DbHandle, backendId: string, cooldownMs: number): DomainError {
  const pending = db.sqlite
    .prepare("SELECT id, requested_by, requested_at FROM restart_events WHERE backend_id = ? AND outcome IS NULL")
    .get(backendId) as { id: number; requested_by: string; requested_at: number } | undefined;
  if (pending) {
    return new DomainError(
      "conflict",
      `"${backendId}" is already restarting (asked by ${pending.requested_by} at ${formatClock(pending.requested_at)})`,
      { reason: "pending", pendingId: pending.id },
    );
  }
  const last = db.sqlite
    .prepare("SELECT MAX(requested_at) AS at FROM restart_events WHERE backend_id = ?")
    .get(backendId) as { at: number | null };
  const until = (last.at ?? 0) + cooldownMs;
  return new DomainError("conflict", `"${backendId}" is in cooldown until ${formatClock(until)}; override the cooldown to restart anyway`, {
    reason: "cooldown",
    cooldownUntil: until,
  });
}

async function runAndRecord(row: RestartEventRow, action: RestartAction, deps: RestartDeps): Promise<void> {
  const now = deps.now ?? Date.now;
  const execute = deps.execute ?? ((a, c) => executeAction(a, c, { env: deps.commandEnv, now }));
  let result: ActionResult;
  try {
    result = await execute(action, { backendId: row.backendId, eventId: row.id, requestedBy: row.requestedBy });
  } catch (e) {
    result = { ok: false, exitCode: null, output: "", error: `restart action crashed: ${(e as Error).message}`, finishedAt: now() };
  }
  try {
    const sqlite = deps.db.sqlite;
    sqlite.transaction(() => {
      sqlite
        .prepare(
          "UPDATE restart_events SET command_exit_code = ?, command_output = ?, command_error = ?, command_finished_at = ? WHERE id = ?",
        )
        .run(result.exitCode, result.output, result.error, result.finishedAt, row.id);
      if (!result.ok) {
        // Conditional on still pending: the watcher may have resolved it meanwhile (it came back anyway).
        const resolution = `the restart action failed: ${result.error ?? "unknown error"}; not retried`;
        const won = resolveRestart(deps.db.db, row.id, { outcome: "failed", resolvedAt: result.finishedAt, resolution });
        if (won) {
          deps.notify?.({
            event: "restart-finished",
            backendId: row.backendId,
            state: deps.current(row.backendId)?.verdict?.state ?? row.stateAtRequest,
            previousState: "restarting",
            reasons: [resolution],
            at: result.finishedAt,
            details: { restartId: row.id, requestedBy: row.requestedBy, outcome: "failed", downtimeSeconds: null, resolution },
          });
        }
      }
    })();
  } catch (e) {
    console.error(`[restart] could not record the result of restart #${row.id} of ${row.backendId}: ${(e as Error).message}`);
  }
}
