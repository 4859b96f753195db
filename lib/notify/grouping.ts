/**
 * Grouping, as Alertmanager does it: which pending deliveries of a channel go out together as one
 * message, and that message's id. Pure (the rows and `now` go in): the outbox (lib/notify/outbox.ts)
 * reads the rows, claims what this returns and sends it.
 *
 * A notification stays one row per cause, written with it (invariant 11); grouping happens only at
 * send time, per channel. Problems (`stuck`/`down`), reminders and recoveries each form their own
 * group; every other event (restart requested, finished, scheduled; a crash loop) goes out alone and at once.
 * A never-sent row is due at the end of its window (written as its `nextAttemptAt`); when the oldest
 * of a group is due, every never-sent row of that group goes with it, so none waits longer than
 * its own window. Once sent, a message keeps its members and its id on every retry.
 */
import { createHash } from "node:crypto";
import type { DueDelivery } from "../../db/queries/oncall";
import type { NotificationEvent } from "../core/events";

/** The groups a message can be: problems opening, reminders of open ones, recoveries. */
export const MESSAGE_GROUPS = ["problem", "reminder", "recovered"] as const;
export type MessageGroup = (typeof MESSAGE_GROUPS)[number];

/** At most this many notifications in one message; the rest go in the next (a chat message has a size limit). */
export const MAX_GROUP = 100;

/** The group of a notification, or null for one that always goes out alone. */
export function groupOf(n: { event: NotificationEvent; details: Record<string, unknown> }): MessageGroup | null {
  if (n.event === "stuck" || n.event === "down") return n.details.reminder ? "reminder" : "problem";
  if (n.event === "recovered") return "recovered";
  return null;
}

/** How long a never-sent notification of this group waits for others (ms): its first attempt is due then. */
export function windowMsOf(group: MessageGroup | null, c: { groupWaitSeconds: number; groupIntervalSeconds: number }): number {
  if (group === null) return 0;
  return (group === "reminder" ? c.groupIntervalSeconds : c.groupWaitSeconds) * 1000;
}

/**
 * The id a receiver dedupes on: a lone notification's own id (as before grouping), else derived
 * from its members' ids alone, so the same members give the same id in any order, after any
 * restart. UUID-shaped (version 8: "custom"), for receivers that expect one.
 */
export function messageIdOf(uids: string[]): string {
  if (uids.length === 1) return uids[0];
  const h = createHash("sha256").update([...uids].sort().join("\n")).digest("hex");
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface DueMessage {
  /** The message's id (also its key while in flight). */
  id: string;
  channelId: string;
  group: MessageGroup | null;
  /** Oldest first. */
  members: DueDelivery[];
  /** True when its members are not yet claimed (its first attempt). */
  fresh: boolean;
}

/** A message in flight, by channel: one lone notification's message has the same id on every channel. */
export function messageKey(m: Pick<DueMessage, "channelId" | "id">): string {
  return `${m.channelId}\u0000${m.id}`;
}

/**
 * The messages due at `now` from `rows` (lib/db `deliverable`: due rows and never-sent ones, oldest
 * first), oldest first, leaving out those in flight. A row already sent keeps its message (its
 * `messageUid`); one sent before grouping existed (attempts, no message id) goes on alone.
 */
export function dueMessages(rows: DueDelivery[], now: number, inFlight: ReadonlySet<string>, maxGroup = MAX_GROUP): DueMessage[] {
  const sent = new Map<string, DueMessage>();
  const waiting = new Map<string, DueDelivery[]>();
  const out: DueMessage[] = [];
  for (const r of rows) {
    const d = r.delivery;
    if (d.messageUid !== null || d.attempts > 0) {
      if (d.nextAttemptAt > now) continue;
      const id = d.messageUid ?? r.notification.uid;
      // By channel too: a lone notification's message has its id on every channel that takes it.
      const key = messageKey({ channelId: d.channelId, id });
      let m = sent.get(key);
      if (!m) {
        m = { id, channelId: d.channelId, group: groupOf(r.notification), members: [], fresh: false };
        sent.set(key, m);
        out.push(m);
      }
      m.members.push(r);
      continue;
    }
    const group = groupOf(r.notification);
    if (group === null) {
      if (d.nextAttemptAt <= now) out.push({ id: r.notification.uid, channelId: d.channelId, group, members: [r], fresh: true });
      continue;
    }
    const key = `${d.channelId}\u0000${group}`;
    const list = waiting.get(key) ?? [];
    list.push(r);
    waiting.set(key, list);
  }
  for (const list of waiting.values()) {
    // Oldest first (the query's order): a group is due when its oldest row's window is over, and
    // then every row of it goes, in messages of at most maxGroup.
    if (list[0].delivery.nextAttemptAt > now) continue;
    for (let i = 0; i < list.length; i += maxGroup) {
      const members = list.slice(i, i + maxGroup);
      const d = members[0].delivery;
      out.push({ id: messageIdOf(members.map((m) => m.notification.uid)), channelId: d.channelId, group: groupOf(members[0].notification), members, fresh: true });
    }
  }
  const firstAt = (m: DueMessage) => m.members[0].delivery.createdAt;
  return out.filter((m) => !inFlight.has(messageKey(m))).sort((a, b) => firstAt(a) - firstAt(b) || a.members[0].delivery.id - b.members[0].delivery.id);
}
