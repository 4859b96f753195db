/**
 * The CSV forms of the review endpoints (`?format=csv`): a backend's history, the outages and the
 * restart log, one row per point / outage / restart, times as ISO 8601 UTC.
 */
import { isoTime, toCsv, type CsvColumn } from "./csv";
import type { Outage } from "../core/outages";
import { figureColumn, HISTORY_FIGURES, toRows } from "../core/history";
import type { AvailabilityRow, HistoryResponse, RestartEventDTO } from "./types";
import { BACKEND_STATES } from "../core/states";
import type { HistoryPoint } from "../core/history";
import { reasonText } from "../core/types";

const HISTORY_COLUMNS: Array<CsvColumn<HistoryPoint>> = [
  { header: "time_utc", value: (p) => isoTime(p.at) },
  { header: "state", value: (p) => p.state },
  // Every figure of the history, in HISTORY_FIGURES order (the first six are the columns the CSV
  // always had, so their places and names stay): a figure added there is exported without a line here.
  ...HISTORY_FIGURES.map((f): CsvColumn<HistoryPoint> => ({ header: figureColumn(f), value: (p) => p[f] })),
];

const OUTAGE_COLUMNS: Array<CsvColumn<Outage>> = [
  { header: "backend", value: (o) => o.backendId },
  { header: "state", value: (o) => o.state },
  { header: "start_utc", value: (o) => isoTime(o.start) },
  { header: "end_utc", value: (o) => (o.end === null ? "ongoing" : isoTime(o.end)) },
  { header: "duration_seconds", value: (o) => Math.round(o.durationSeconds) },
  // New columns go after the ones the CSV always had, so a spreadsheet reading them by place still works.
  { header: "cause", value: (o) => o.cause },
  { header: "states", value: (o) => o.states.join(" ") },
  { header: "maintenance_seconds", value: (o) => Math.round(o.maintenanceSeconds) },
  { header: "in_maintenance", value: (o) => (o.inMaintenance ? "yes" : "no") },
  { header: "exited_not_restarted", value: (o) => (o.exitedNotRestarted ? "yes" : "no") },
];

const RESTART_COLUMNS: Array<CsvColumn<RestartEventDTO>> = [
  { header: "id", value: (r) => r.id },
  { header: "backend", value: (r) => r.backendId },
  { header: "requested_utc", value: (r) => isoTime(r.requestedAt) },
  { header: "requested_by", value: (r) => r.requestedBy },
  { header: "note", value: (r) => r.note },
  { header: "state_at_request", value: (r) => r.stateAtRequest },
  { header: "healthy_at_request", value: (r) => r.healthyAtRequest },
  { header: "running_at_request", value: (r) => r.runningAtRequest },
  { header: "waiting_at_request", value: (r) => r.waitingAtRequest },
  { header: "evidence", value: (r) => reasonText(r.evidence.reasons) },
  { header: "override_cooldown", value: (r) => r.overrideCooldown },
  { header: "action", value: (r) => r.action },
  { header: "exit_code", value: (r) => r.commandExitCode },
  { header: "error", value: (r) => r.commandError },
  { header: "recovered_utc", value: (r) => isoTime(r.recoveredAt) },
  { header: "downtime_seconds", value: (r) => r.downtimeSeconds },
  { header: "outcome", value: (r) => r.outcome ?? "pending" },
  { header: "resolution", value: (r) => r.resolution },
  // After the columns it always had, so a script reading them by position still reads them.
  { header: "started_utc", value: (r) => isoTime(r.startedAt) },
  { header: "started_by", value: (r) => r.startedBy },
  { header: "started_epoch", value: (r) => r.startedEpoch },
  { header: "evidence_id", value: (r) => r.evidenceId },
];

const AVAILABILITY_COLUMNS: Array<CsvColumn<AvailabilityRow>> = [
  { header: "backend", value: (r) => r.backendId },
  { header: "start_utc", value: (r) => isoTime(r.start) },
  { header: "end_utc", value: (r) => isoTime(r.end) },
  { header: "seconds", value: (r) => r.seconds },
  // One column per state, in the one list's order (lib/core/states.ts): a new state is a new column.
  ...BACKEND_STATES.map((s): CsvColumn<AvailabilityRow> => ({ header: `${s.replace("-", "_")}_seconds`, value: (r) => r.states[s] })),
  { header: "maintenance_seconds", value: (r) => r.maintenanceSeconds },
  { header: "available_percent", value: (r) => (r.availablePercent === null ? null : Number(r.availablePercent.toFixed(3))) },
  { header: "restarts_by_stepwatch", value: (r) => r.restartsByStepwatch },
  { header: "restarts_by_others", value: (r) => r.restartsByOthers },
  { header: "recoveries", value: (r) => r.recoveries },
  { header: "mean_time_to_recover_seconds", value: (r) => (r.meanTimeToRecoverSeconds === null ? null : Math.round(r.meanTimeToRecoverSeconds)) },
];

export const availabilityCsv = (rows: AvailabilityRow[]) => toCsv(rows, AVAILABILITY_COLUMNS);
export const historyCsv = (h: HistoryResponse) => toCsv(toRows(h.columns), HISTORY_COLUMNS);
export const outagesCsv = (o: Outage[]) => toCsv(o, OUTAGE_COLUMNS);
export const restartsCsv = (r: RestartEventDTO[]) => toCsv(r, RESTART_COLUMNS);
