/**
 * The on-call fields of a backend's JSON view (lib/api/types.ts FleetBackend): the open problem,
 * who acknowledged it, the maintenance in force, when an unattended restart will run. From
 * memory only (the fleet is read many times a second).
 */
import type { FleetBackend } from "./types";
import { recommendedNow } from "../core/states";
import type { BackendMonitor } from "../watcher/monitors";
import type { OnCallBook } from "../oncall/book";

type OnCallFields = Pick<FleetBackend, "problem" | "acknowledged" | "maintenance" | "unattendedRestartAt" | "unattendedConfigured" | "restartRecommended">;

export function onCallView(m: BackendMonitor, book: OnCallBook, now: number): OnCallFields {
  const id = m.config.id;
  const ack = book.acknowledgement(id);
  const silence = book.silenced(id, now);
  // Field by field: the wire shape stays what lib/api/types.ts says, whatever the book adds.
  const maintenance = silence && { until: silence.until, by: silence.by, note: silence.note, source: silence.source };
  const p = m.problem;
  const pending = m.lastRestart?.outcome === null;
  return {
    problem: p.open ? { event: p.open.event, since: p.open.openedAt } : null,
    acknowledged: ack ? { by: ack.by, at: ack.at, note: ack.note } : null,
    maintenance,
    // Shown only while it will really happen: acknowledged, maintenance or a pending restart cancel it.
    unattendedRestartAt: p.scheduledFor !== null && !ack && !maintenance && !pending && p.recommendedSince !== null ? p.scheduledFor : null,
    unattendedConfigured: m.config.unattended !== undefined,
    restartRecommended: recommendedNow(m.last?.verdict ?? null, silence !== null),
  };
}
