/**
 * The operator's on-call verbs: acknowledge a problem, start or end maintenance. Each one checks
 * against the config and the watcher's verdict, writes one row (who, when, note: kept forever for
 * the audit), then tells the book to re-read that backend. Route handlers call these and map the
 * DomainError; nothing here knows HTTP.
 */
import type { Db } from "../../db/types";
import { recordAudit, type AuditActorKind } from "../../db/queries/auth";
import { endMaintenance as endMaintenanceRows, insertAcknowledgement, insertMaintenance } from "../../db/queries/oncall";
import { MAX_MAINTENANCE_MINUTES, type Acknowledgement, type Maintenance } from "../core/oncall";
import { isHealthy } from "../core/states";
import type { Verdict } from "../core/types";
import { backendOrThrow, type BackendConfig } from "../config";
import { DomainError } from "../core/errors";
import { formatDateTime } from "../core/format";
import type { OnCallBook } from "./book";

export interface OnCallVerbDeps {
  db: Db;
  backends: BackendConfig[];
  book: OnCallBook;
  current(backendId: string): { verdict: Verdict | null } | null;
}

/** Who asked, for the audit log (lib/api/operator.ts actorKindOf, clientAddress); an operator by default. */
export interface Actor {
  actorKind?: AuditActorKind;
  address?: string | null;
}

export const MAX_NOTE = 500;

/** What a verb writes to the audit log beside its row (lib/api/operator.ts actorOf gives `actor`). */
interface AuditLine {
  action: string;
  target: string;
  by: string;
  at: number;
  detail: string | null;
  actor: Actor;
}

/** Runs `f` and writes its audit line in ONE transaction: the verb's row never exists without its line. */
function stored<T>(deps: OnCallVerbDeps, what: string, f: () => T, audit: (row: T) => AuditLine | null): T {
  try {
    return deps.db.$client.transaction(() => {
      const row = f();
      const a = audit(row);
      if (a) recordAudit(deps.db, { at: a.at, actor: a.by, actorKind: a.actor.actorKind ?? "operator", action: a.action, target: a.target, address: a.actor.address ?? null, detail: a.detail });
      return row;
    })();
  } catch (e) {
    throw new DomainError("unavailable", `cannot record the ${what} in the database (${(e as Error).message})`);
  }
}

/** Stops reminders (and an unattended restart) for the current problem, until the backend is healthy again. */
export function acknowledge(input: { backendId: string; by: string; note?: string; now: number } & Actor, deps: OnCallVerbDeps): Acknowledgement {
  const b = backendOrThrow(deps.backends, input.backendId);
  const state = deps.current(b.id)?.verdict?.state ?? "unknown";
  if (isHealthy(state)) {
    throw new DomainError("conflict", `"${b.id}" is ${state} and healthy: there is nothing to acknowledge`, { reason: "healthy", state });
  }
  const row = stored(
    deps,
    "acknowledgement",
    () => insertAcknowledgement(deps.db, { backendId: b.id, at: input.now, by: input.by, note: input.note?.slice(0, MAX_NOTE) || null, stateAtAck: state }),
    (r) => ({ action: "acknowledge", target: b.id, by: input.by, at: input.now, detail: `while ${state}${r.note ? `: ${r.note}` : ""}`, actor: input }),
  );
  deps.book.refresh(b.id);
  return { id: row.id, backendId: row.backendId, at: row.at, by: row.by, note: row.note, stateAtAck: row.stateAtAck };
}

export function startMaintenance(
  input: { backendId: string; by: string; minutes: number; note?: string; now: number } & Actor,
  deps: OnCallVerbDeps,
): Maintenance {
  const b = backendOrThrow(deps.backends, input.backendId);
  if (!Number.isFinite(input.minutes) || input.minutes <= 0 || input.minutes > MAX_MAINTENANCE_MINUTES) {
    throw new DomainError("bad-request", `minutes: must be between 1 and ${MAX_MAINTENANCE_MINUTES}`);
  }
  const row = stored(
    deps,
    "maintenance",
    () => {
      // A new period replaces a running one (extend or shorten), so "until" is always one time.
      endMaintenanceRows(deps.db, b.id, input.now, input.by);
      return insertMaintenance(deps.db, {
        backendId: b.id,
        startsAt: input.now,
        endsAt: input.now + Math.round(input.minutes * 60_000),
        by: input.by,
        note: input.note?.slice(0, MAX_NOTE) || null,
      });
    },
    (r) => ({ action: "maintenance.start", target: b.id, by: input.by, at: input.now, detail: `until ${new Date(r.endsAt).toISOString()}${r.note ? `: ${r.note}` : ""}`, actor: input }),
  );
  deps.book.refresh(b.id);
  return { id: row.id, backendId: row.backendId, startsAt: row.startsAt, endsAt: row.endsAt, by: row.by, note: row.note, endedAt: null, endedBy: null };
}

/** Ends the API maintenance of a backend now. A config window cannot be ended here (change the config). */
export function endMaintenance(input: { backendId: string; by: string; now: number } & Actor, deps: OnCallVerbDeps): { ended: number } {
  const b = backendOrThrow(deps.backends, input.backendId);
  // A call that ends nothing (the 409s below) writes no audit line.
  const ended = stored(
    deps,
    "end of maintenance",
    () => endMaintenanceRows(deps.db, b.id, input.now, input.by),
    (n) => (n === 0 ? null : { action: "maintenance.end", target: b.id, by: input.by, at: input.now, detail: null, actor: input }),
  );
  deps.book.refresh(b.id);
  if (ended === 0) {
    const m = deps.book.silenced(b.id, input.now);
    if (m?.source === "config") {
      throw new DomainError("conflict", `"${b.id}" is in a maintenance window from the config until ${formatDateTime(m.until)}; change the config to end it`, {
        reason: "config-window",
      });
    }
    throw new DomainError("conflict", `"${b.id}" is not in maintenance`, { reason: "not-in-maintenance" });
  }
  return { ended };
}
