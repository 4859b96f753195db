/**
 * The on-call verbs of the JSON API, on the running stepwatch: route handlers parse, then call one
 * of these. The recent notifications come from SQLite; the channels' health from memory.
 */
import { recentNotifications, type NotificationWithDeliveries } from "../../db/queries/oncall";
import type { AcknowledgementDTO, MaintenanceDTO, NotificationDTO, NotificationsResponse } from "./types";
import { DomainError } from "../core/errors";
import { getRuntime, type Runtime } from "../runtime";
import { acknowledge, endMaintenance, startMaintenance, type Actor, type OnCallVerbDeps } from "../oncall/verbs";
import { backendOrThrow } from "../config";

function verbDeps(rt: Runtime): OnCallVerbDeps {
  return { db: rt.db.db, backends: rt.config.backends, book: rt.watcher.book, current: (b) => rt.watcher.current(b) };
}

export async function acknowledgeBackend(backendId: string, by: string, note?: string, actor: Actor = {}): Promise<AcknowledgementDTO> {
  const rt = await getRuntime();
  return acknowledge({ backendId, by, note, now: Date.now(), ...actor }, verbDeps(rt));
}

export async function startBackendMaintenance(backendId: string, by: string, minutes: number, note?: string, actor: Actor = {}): Promise<MaintenanceDTO> {
  const rt = await getRuntime();
  return startMaintenance({ backendId, by, minutes, note, now: Date.now(), ...actor }, verbDeps(rt));
}

export async function endBackendMaintenance(backendId: string, by: string, actor: Actor = {}): Promise<{ ended: number }> {
  const rt = await getRuntime();
  return endMaintenance({ backendId, by, now: Date.now(), ...actor }, verbDeps(rt));
}

export function notificationDTO(n: NotificationWithDeliveries): NotificationDTO {
  return {
    id: n.uid,
    event: n.event,
    backendId: n.backendId,
    state: n.state,
    previousState: n.previousState,
    reasons: n.reasons,
    at: n.at,
    link: n.link,
    details: n.details,
    labels: n.labels,
    deliveries: n.deliveries.map((d) => ({
      channelId: d.channelId,
      channelType: d.channelType,
      messageId: d.messageUid,
      status: d.status,
      attempts: d.attempts,
      nextAttemptAt: d.status === "pending" ? d.nextAttemptAt : null,
      lastError: d.lastError,
      deliveredAt: d.deliveredAt,
      recentAttempts: d.recentAttempts.map((a) => ({ at: a.at, ok: a.ok, statusCode: a.statusCode, error: a.error, durationMs: a.durationMs })),
    })),
  };
}

export async function listNotifications(filter: { backendId?: string; limit?: number } = {}): Promise<NotificationsResponse> {
  const rt = await getRuntime();
  if (filter.backendId !== undefined) backendOrThrow(rt.config.backends, filter.backendId);
  let rows: NotificationWithDeliveries[];
  try {
    rows = recentNotifications(rt.db.db, filter);
  } catch (e) {
    throw new DomainError("unavailable", `cannot read the notifications from the database: ${(e as Error).message}`);
  }
  return { channels: rt.watcher.outbox.channelStatus(), notifications: rows.map(notificationDTO) };
}
