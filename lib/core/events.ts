/**
 * The one list of notification events and channel types. The DB columns, the config's zod enums,
 * the API types and the UI derive from these arrays. Imports nothing: client files may use it.
 */
import type { BackendState } from "./states";
import type { Reason } from "./types";
export const NOTIFICATION_EVENTS = [
  "stuck",
  "down",
  "recovered",
  "restart-requested",
  "restart-finished",
  "restart-scheduled",
  "crash-loop",
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];

export const CHANNEL_TYPES = ["webhook", "slack", "ntfy", "email"] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/** pending: waiting for its next attempt; delivered; failed: given up (a 4xx, or retried past the limit). */
export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Events that open a problem (and are re-sent while it stays unacknowledged). */
export function isProblemEvent(e: NotificationEvent): e is "stuck" | "down" {
  return e === "stuck" || e === "down";
}

export const EVENT_TITLES: Record<NotificationEvent, string> = {
  stuck: "stuck",
  down: "down",
  recovered: "recovered",
  "restart-requested": "restart requested",
  "restart-finished": "restart finished",
  "restart-scheduled": "restart scheduled",
  "crash-loop": "crash loop",
};

/** A notification as its cause writes it (the outbox stores it with the transition or restart). */
export interface NotificationDraft {
  event: NotificationEvent;
  backendId: string;
  state: BackendState;
  previousState: BackendState | null;
  reasons: Reason[];
  at: number;
  details?: Record<string, unknown>;
}


/** A channel's delivery health, as the dashboard shows it. */
export interface ChannelStatus {
  id: string;
  type: ChannelType;
  consecutiveFailures: number;
  lastAttemptAt: number | null;
  lastOkAt: number | null;
  lastError: string | null;
  /** consecutiveFailures >= failingAfter. */
  failing: boolean;
}

