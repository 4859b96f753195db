/**
 * Grouped notifications, as Alertmanager does it, through the real outbox on a real SQLite file to
 * real receivers on 127.0.0.1 (webhook, Slack- and ntfy-shaped HTTP receivers, a real SMTP server):
 * problems written within groupWaitSeconds go out as ONE message per channel naming every backend,
 * with the count, the labels and the links; recoveries likewise; reminders by
 * groupIntervalSeconds; a lone problem alone after its wait; a failed grouped message is retried
 * whole, with the same id; every member's delivery records every attempt. The clock is the
 * outbox's injected `now`, so "not before the window ends, and at its end" is a fact, not a timing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DbHandle } from "@/db/types";
import { recentNotifications } from "@/db/queries/oncall";
import { parseConfig, type NotificationsConfig } from "@/lib/config";
import { Outbox } from "@/lib/notify/outbox";
import { messageIdOf } from "@/lib/notify/grouping";
import type { MessagePayload } from "@/lib/notify/message";
import { type NotificationDraft } from "@/lib/core/events";
import { reason } from "@/lib/core/types";
import { startHttpReceiver, startSmtpReceiver, tempDbs, type HttpReceiver, type SmtpReceiver } from "../support/receivers";

let dbs: ReturnType<typeof tempDbs>;
let hook: HttpReceiver;
let smtp: SmtpReceiver;
const T0 = Date.parse("2026-12-01T03:05:00Z");
const IDS = Array.from({ length: 200 }, (_, i) => `b${String(i + 1).padStart(3, "0")}`);
const labelsOf = (id: string) => ({ site: Number(id.slice(1)) % 2 ? "ams" : "fra", gpu: "h100" });

const down = (backendId: string, at: number, over: Partial<NotificationDraft> = {}): NotificationDraft => ({
  event: "down",
  backendId,
  state: "down",
  previousState: "idle",
  reasons: [reason("down-refused", "connection refused on 2 consecutive reads")],
  at,
  details: { openSince: new Date(at).toISOString() },
  ...over,
});
const recovered = (backendId: string, at: number): NotificationDraft => ({
  event: "recovered",
  backendId,
  state: "idle",
  previousState: "down",
  reasons: [reason("progress", "progress: 12 steps/s")],
  at,
  details: { problem: "down" },
});

function notificationsOf(over: Record<string, unknown> = {}): NotificationsConfig {
  return parseConfig(
    {
      backends: IDS.map((id, i) => ({ id, url: `http://127.0.0.1:${i + 1}`, labels: labelsOf(id) })),
      notifications: {
        publicUrl: "https://sw.example.org",
        channels: [
          { id: "ops", type: "webhook", url: `${hook.url}/hook` },
          { id: "chat", type: "slack", url: `${hook.url}/slack` },
          { id: "phone", type: "ntfy", url: `${hook.url}/ntfy` },
          { id: "mail", type: "email", smtp: { host: "127.0.0.1", port: smtp.port }, from: "sw@example.org", to: ["oncall@example.org"] },
        ],
        ...over,
      },
    },
    "test",
    { env: {} },
  ).notifications;
}

const at = (p: string) => hook.received.filter((r) => r.path === p && r.status === 200);
const hooks = () => at("/hook").map((r) => JSON.parse(r.body) as MessagePayload);

beforeAll(async () => {
  dbs = tempDbs("sw-group-");
  smtp = await startSmtpReceiver();
});

afterEach(async () => {
  await hook?.close();
  dbs.closeLast();
  smtp.mails.length = 0;
});

afterAll(async () => {
  await smtp.close();
  dbs.remove();
});

const freshDb = (name: string): Promise<DbHandle> => dbs.open(name);

/** Delivery rounds at the outbox's clock, until `done` or a bounded number of rounds. */
async function rounds(box: Outbox, done: () => boolean, max = 50): Promise<void> {
  for (let i = 0; i < max && !done(); i++) {
    await box.deliverDue();
    if (!done()) await new Promise((r) => setTimeout(r, 20));
  }
  if (!done()) throw new Error(`not done after ${max} delivery rounds`);
}

describe("grouped notifications", () => {
  it("20 problems inside the window: one message per channel naming every backend, the count, the labels, the links; recoveries likewise", async () => {
    hook = await startHttpReceiver();
    const db = await freshDb("storm");
    let now = T0;
    const box = new Outbox(db.db, notificationsOf(), { now: () => now, log: () => {}, labelsOf });
    const failing = IDS.slice(40, 60);
    // Written over 4 s, as the polls of a fleet find them (inside the 10 s default window).
    const rows = failing.map((id, i) => {
      now = T0 + i * 200;
      return box.write(down(id, now));
    });
    now = T0 + 9_999; // the oldest is not 10 s old yet: nothing goes
    expect(await box.deliverDue()).toBe(0);
    now = T0 + 10_000;
    await rounds(box, () => at("/hook").length + at("/slack").length + at("/ntfy").length + smtp.mails.length >= 4);
    await box.deliverDue(); // nothing more is due
    expect([at("/hook").length, at("/slack").length, at("/ntfy").length, smtp.mails.length]).toEqual([1, 1, 1, 1]);

    const [m] = hooks();
    const id = messageIdOf(rows.map((r) => r.uid));
    expect(m).toMatchObject({ id, group: "problem", count: 20, fleetLink: "https://sw.example.org/" });
    expect(m.notifications.map((n) => n.backendId)).toEqual(failing);
    expect(m.notifications.map((n) => n.id)).toEqual(rows.map((r) => r.uid));
    expect(m.notifications[0]).toMatchObject({
      event: "down",
      labels: labelsOf(failing[0]),
      link: `https://sw.example.org/backends/${failing[0]}`,
      acknowledgeLink: `https://sw.example.org/backends/${failing[0]}#acknowledge`,
      // Each problem points at its evidence bundles (issue 32: captured when it went down).
      evidenceLink: `https://sw.example.org/backends/${failing[0]}#evidence`,
    });
    // The same id on every HTTP channel's header (receivers drop duplicates on it), and the mail's Message-ID.
    for (const p of ["/hook", "/slack", "/ntfy"]) expect(at(p)[0].headers["x-stepwatch-notification-id"]).toBe(id);
    expect(smtp.mails[0].raw).toContain(`Message-ID: <${id}@stepwatch>`);

    const slack = JSON.parse(at("/slack")[0].body) as { text: string; blocks: Array<{ text?: { text: string } }> };
    expect(slack.text).toMatch(/^20 backends down: b041, b042, b043, b044, b045 and 15 more/);
    const sections = slack.blocks.filter((x) => x.text).map((x) => x.text!.text).join("\n");
    for (const b of failing) expect(sections).toContain(`<https://sw.example.org/backends/${b}|${b}>`);
    expect(sections).toContain("<https://sw.example.org/backends/b041#acknowledge|acknowledge>");
    const ntfy = at("/ntfy")[0];
    expect(ntfy.headers.title).toBe("20 backends down: b041, b042, b043, b044, b045 and 15 more");
    expect(ntfy.headers.priority).toBe("5");
    expect(ntfy.headers.click).toBe("https://sw.example.org/");
    for (const b of failing) expect(ntfy.body).toContain(`- ${b}: idle -> down; connection refused on 2 consecutive reads [site=${labelsOf(b).site}, gpu=h100]`);
    expect(smtp.mails[0].subject).toBe("[stepwatch] 20 backends down: b041, b042, b043, b044, b045 and 15 more [down]");

    // Every member's delivery on every channel records the one attempt of its message.
    const ns = recentNotifications(db.db, { limit: 500 });
    expect(ns).toHaveLength(20);
    for (const n of ns) {
      expect(n.deliveries.map((d) => [d.channelId, d.status, d.attempts, d.messageUid]).sort()).toEqual(
        ["chat", "mail", "ops", "phone"].map((c) => [c, "delivered", 1, id]),
      );
    }

    // They come back: the 20 recoveries, written over 3 s, are one message per channel too.
    const back = T0 + 60_000;
    const recoveredRows = failing.map((b, i) => {
      now = back + i * 150;
      return box.write(recovered(b, now));
    });
    now = back + 10_000;
    await rounds(box, () => at("/hook").length + at("/slack").length + at("/ntfy").length + smtp.mails.length >= 8);
    await box.deliverDue();
    expect([at("/hook").length, at("/slack").length, at("/ntfy").length, smtp.mails.length]).toEqual([2, 2, 2, 2]);
    const r = hooks()[1];
    expect(r).toMatchObject({ id: messageIdOf(recoveredRows.map((x) => x.uid)), group: "recovered", count: 20 });
    expect(r.notifications.every((n) => n.acknowledgeLink === null)).toBe(true); // nothing to acknowledge
    expect(at("/ntfy")[1].headers.title).toBe("20 backends recovered: b041, b042, b043, b044, b045 and 15 more");
    expect(at("/ntfy")[1].headers.priority).toBe("3");
  });

  it("a receiver that fails then succeeds gets the same grouped id; every member records both attempts", async () => {
    hook = await startHttpReceiver({ failFirst: 1 });
    const db = await freshDb("retry");
    let now = T0;
    const box = new Outbox(db.db, notificationsOf({ channels: [{ id: "ops", type: "webhook", url: `${hook.url}/hook` }] }), {
      now: () => now,
      log: () => {},
      tuning: { firstRetryMs: 5_000 },
    });
    const rows = IDS.slice(0, 5).map((b, i) => box.write(down(b, T0 + i)));
    now = T0 + 10_000;
    await rounds(box, () => hook.received.length >= 1);
    // A problem written now (after the message went) is not added to it: its retry stays the same message.
    const late = box.write(down("b100", now));
    now += 5_000; // the backoff
    await rounds(box, () => at("/hook").length >= 1);
    expect(hook.received.map((r) => r.status)).toEqual([503, 200]);
    const id = messageIdOf(rows.map((r) => r.uid));
    expect(hook.received.map((r) => r.headers["x-stepwatch-notification-id"])).toEqual([id, id]);
    const [a, b] = hook.received.map((r) => JSON.parse(r.body) as MessagePayload);
    expect(b).toEqual(a);
    expect(b.count).toBe(5);
    for (const n of recentNotifications(db.db).filter((x) => x.uid !== late.uid)) {
      expect(n.deliveries[0]).toMatchObject({ status: "delivered", attempts: 2, messageUid: id });
      expect(n.deliveries[0].recentAttempts.map((x) => [x.ok, x.statusCode])).toEqual([
        [true, 200],
        [false, 503],
      ]);
    }
    // The late one goes alone, at the end of its own window (never held for the other message's retries).
    now = late.at + 10_000;
    await rounds(box, () => at("/hook").length >= 2);
    expect(hooks()[1]).toMatchObject({ id: late.uid, count: 1, backendId: "b100" });
  });

  it("a single problem goes out alone after the wait, with its own id; a restart request at once", async () => {
    hook = await startHttpReceiver();
    const db = await freshDb("alone");
    let now = T0;
    const box = new Outbox(db.db, notificationsOf({ channels: [{ id: "ops", type: "webhook", url: `${hook.url}/hook` }] }), { now: () => now, log: () => {}, labelsOf });
    const row = box.write(down("b007", T0));
    const restart = box.write({ event: "restart-requested", backendId: "b009", state: "restarting", previousState: null, reasons: [], at: T0, details: { requestedBy: "alice" } });
    await rounds(box, () => at("/hook").length >= 1);
    expect(hooks().map((m) => [m.id, m.group, m.count])).toEqual([[restart.uid, null, 1]]);
    now = T0 + 9_999;
    expect(await box.deliverDue()).toBe(0);
    now = T0 + 10_000;
    await rounds(box, () => at("/hook").length >= 2);
    const m = hooks()[1];
    // A message of one is the notification as before grouping, plus the group fields.
    expect(m).toMatchObject({ id: row.uid, group: "problem", count: 1, event: "down", backendId: "b007", labels: labelsOf("b007") });
    expect(m.notifications).toHaveLength(1);
  });

  it("reminders are grouped by groupIntervalSeconds; problems and reminders are separate messages", async () => {
    hook = await startHttpReceiver();
    const db = await freshDb("reminders");
    let now = T0;
    const box = new Outbox(db.db, notificationsOf({ groupWaitSeconds: 5, groupIntervalSeconds: 30, channels: [{ id: "ops", type: "webhook", url: `${hook.url}/hook` }] }), {
      now: () => now,
      log: () => {},
    });
    const reminders = IDS.slice(0, 3).map((b, i) => box.write(down(b, T0 + i * 1000, { details: { reminder: true, openSince: new Date(T0 - 3600_000).toISOString() } })));
    now = T0 + 5_000;
    const fresh = box.write(down("b050", now));
    now = T0 + 10_000;
    await rounds(box, () => at("/hook").length >= 1);
    expect(hooks().map((m) => [m.group, m.count])).toEqual([["problem", 1]]); // the reminders wait for their 30 s
    expect(hooks()[0].id).toBe(fresh.uid);
    now = T0 + 29_999;
    expect(await box.deliverDue()).toBe(0);
    now = T0 + 30_000;
    await rounds(box, () => at("/hook").length >= 2);
    expect(hooks()[1]).toMatchObject({ id: messageIdOf(reminders.map((r) => r.uid)), group: "reminder", count: 3 });
    expect(JSON.parse(JSON.stringify(hooks()[1].notifications.map((n) => n.details.reminder)))).toEqual([true, true, true]);
  });

  it("a message cut short by a shutdown is sent whole, with the same id, by the next start", async () => {
    hook = await startHttpReceiver({ holdPaths: ["/hold"] });
    const db = await freshDb("restart");
    let now = T0;
    const first = new Outbox(db.db, notificationsOf({ channels: [{ id: "ops", type: "webhook", url: `${hook.url}/hold` }] }), { now: () => now, log: () => {} });
    const rows = IDS.slice(0, 4).map((b, i) => first.write(down(b, T0 + i * 2_000)));
    now = T0 + 10_000;
    const c = new AbortController();
    const round = first.deliverDue(c.signal);
    const deadline = Date.now() + 10_000;
    while (!hook.received.some((r) => r.path === "/hold") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    c.abort();
    await round;
    // Written meanwhile, after the message was made: not part of it.
    first.write(down("b150", now));
    // The next start (another Outbox on the same file; the channel's receiver answers now).
    const next = new Outbox(db.db, notificationsOf({ channels: [{ id: "ops", type: "webhook", url: `${hook.url}/hook` }] }), { now: () => now, log: () => {} });
    await rounds(next, () => at("/hook").length >= 1);
    const m = hooks()[0];
    expect(m.id).toBe(messageIdOf(rows.map((r) => r.uid)));
    expect(m.notifications.map((n) => n.id)).toEqual(rows.map((r) => r.uid));
    expect(hook.received.find((r) => r.path === "/hold")!.headers["x-stepwatch-notification-id"]).toBe(m.id);
  });

  it("more than 100 at once: messages of at most 100, nothing left behind", async () => {
    hook = await startHttpReceiver();
    const db = await freshDb("many");
    let now = T0;
    const box = new Outbox(db.db, notificationsOf({ channels: [{ id: "ops", type: "webhook", url: `${hook.url}/hook` }] }), { now: () => now, log: () => {} });
    const rows = db.db.$client.transaction(() => IDS.slice(0, 150).map((b) => box.write(down(b, T0))))();
    now = T0 + 10_000;
    await rounds(box, () => at("/hook").length >= 2);
    await box.deliverDue();
    expect(hooks().map((m) => m.count)).toEqual([100, 50]);
    expect(hooks().flatMap((m) => m.notifications.map((n) => n.id))).toEqual(rows.map((r) => r.uid));
  });
});
