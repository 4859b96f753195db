import { describe, expect, it } from "vitest";
import type { DueDelivery } from "@/db/queries/oncall";
import { dueMessages, groupOf, messageIdOf, windowMsOf } from "@/lib/notify/grouping";
import type { NotificationEvent } from "@/lib/core/events";

let seq = 0;
/** A pending delivery row as the outbox reads it (only the fields grouping looks at matter). */
function row(over: { uid?: string; event?: NotificationEvent; reminder?: boolean; channelId?: string; dueAt: number; messageUid?: string | null; attempts?: number }): DueDelivery {
  const id = ++seq;
  return {
    delivery: {
      id,
      notificationId: id,
      channelId: over.channelId ?? "ops",
      channelType: "webhook",
      status: "pending",
      attempts: over.attempts ?? 0,
      nextAttemptAt: over.dueAt,
      lastError: null,
      deliveredAt: null,
      createdAt: id,
      messageUid: over.messageUid ?? null,
    },
    notification: {
      id,
      uid: over.uid ?? `n${id}`,
      event: over.event ?? "down",
      backendId: `b${id}`,
      state: "down",
      previousState: null,
      reasons: [],
      at: id,
      link: null,
      details: over.reminder ? { reminder: true } : {},
      labels: {},
    },
  };
}

describe("grouping", () => {
  it("problems, reminders and recoveries are groups; restart events go alone", () => {
    expect(groupOf({ event: "stuck", details: {} })).toBe("problem");
    expect(groupOf({ event: "down", details: { reminder: true } })).toBe("reminder");
    expect(groupOf({ event: "recovered", details: {} })).toBe("recovered");
    expect(["restart-requested", "restart-finished", "restart-scheduled", "crash-loop"].map((e) => groupOf({ event: e as NotificationEvent, details: {} }))).toEqual([null, null, null, null]);
    const c = { groupWaitSeconds: 10, groupIntervalSeconds: 60 };
    expect([windowMsOf("problem", c), windowMsOf("recovered", c), windowMsOf("reminder", c), windowMsOf(null, c)]).toEqual([10_000, 10_000, 60_000, 0]);
  });

  it("a message's id: a lone notification's own; else the same for the same members in any order, UUID-shaped", () => {
    expect(messageIdOf(["abc"])).toBe("abc");
    const id = messageIdOf(["a", "b", "c"]);
    expect(messageIdOf(["c", "a", "b"])).toBe(id);
    expect(messageIdOf(["a", "b"])).not.toBe(id);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("a group goes when its oldest is due, with every never-sent row of it; per channel; sent messages keep their members", () => {
    const a = row({ dueAt: 100 });
    const b = row({ dueAt: 105 }); // not due itself: goes with a
    const other = row({ dueAt: 100, channelId: "chat" });
    const rec = row({ dueAt: 200, event: "recovered" }); // its own group, not due
    const sent1 = row({ dueAt: 90, messageUid: "m1", attempts: 1 });
    const sent2 = row({ dueAt: 90, messageUid: "m1", attempts: 1 });
    const legacy = row({ dueAt: 90, attempts: 3 }); // attempted before grouping existed: alone, its own id
    const ms = dueMessages([a, b, other, rec, sent1, sent2, legacy], 100, new Set());
    expect(ms.map((m) => [m.channelId, m.id, m.members.length, m.fresh])).toEqual([
      ["ops", messageIdOf([a.notification.uid, b.notification.uid]), 2, true],
      ["chat", other.notification.uid, 1, true],
      ["ops", "m1", 2, false],
      ["ops", legacy.notification.uid, 1, false],
    ]);
    // One notification's lone message to two channels: two messages with one id, each retried on its own.
    const ops = row({ dueAt: 90, uid: "n-x", messageUid: "n-x", attempts: 1 });
    const chat = { ...ops, delivery: { ...ops.delivery, id: ops.delivery.id + 1000, channelId: "chat" } };
    expect(dueMessages([ops, chat], 100, new Set()).map((m) => [m.channelId, m.id, m.members.length])).toEqual([
      ["ops", "n-x", 1],
      ["chat", "n-x", 1],
    ]);
    // In flight: left out (by channel and id).
    expect(dueMessages([sent1, sent2], 100, new Set(["ops\u0000m1"]))).toEqual([]);
    expect(dueMessages([a, b], 99, new Set())).toEqual([]);
  });
});
