/**
 * Each channel against a real local receiver (node:http on 127.0.0.1, a real SMTP server), through
 * the real outbox on a real SQLite file: a receiver that fails first gets the same notification
 * id again after the backoff, every attempt is recorded, and nothing is dropped.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DbHandle } from "@/db/types";
import { recentNotifications } from "@/db/queries/oncall";
import { parseConfig, type NotificationsConfig } from "@/lib/config";
import { Outbox, retryDelayMs } from "@/lib/notify/outbox";
import { type NotificationDraft } from "@/lib/core/events";
import { StepwatchMetrics } from "@/lib/api/export/metrics";
import { reason } from "@/lib/core/types";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { startWatcher } from "@/lib/watcher";
import { startHttpReceiver, startSmtpReceiver, tempDbs, type HttpReceiver, type SmtpReceiver } from "../support/receivers";

let dbs: ReturnType<typeof tempDbs>;
let hook: HttpReceiver;
let smtp: SmtpReceiver;
const stops: AbortController[] = [];

const draft = (over: Partial<NotificationDraft> = {}): NotificationDraft => ({
  event: "stuck",
  backendId: "gb10-a",
  state: "stuck",
  previousState: "stalled",
  reasons: [reason("no-progress", "2 running, 0 waiting, 0 new steps in 134 s across 3 reads")],
  at: Date.parse("2026-12-01T03:05:00Z"),
  ...over,
});

/** groupWaitSeconds 0: these cases are about one notification and its channel; grouping has its own file. */
function notificationsOf(channels: unknown[], env: Record<string, string> = {}): NotificationsConfig {
  const c = parseConfig(
    { backends: [{ id: "gb10-a", url: "http://127.0.0.1:1" }, { id: "b2", url: "http://127.0.0.1:2" }], notifications: { publicUrl: "https://sw.example.org/", groupWaitSeconds: 0, channels } },
    "test",
    { env },
  );
  return c.notifications;
}

/** Runs delivery rounds until `done` holds, bounded by a deadline. */
async function deliverUntil(box: Outbox, done: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the delivery");
    await box.deliverDue();
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  dbs = tempDbs("sw-notify-");
  smtp = await startSmtpReceiver({ user: "sw", password: "mail-secret" });
});

afterEach(async () => {
  for (const c of stops.splice(0)) c.abort();
  await hook?.close();
  dbs.closeLast();
});

afterAll(async () => {
  await smtp.close();
  dbs.remove();
});

const freshDb = (name: string): Promise<DbHandle> => dbs.open(name);

describe("notification channels against real receivers", () => {
  it("webhook: POSTs the payload with env: headers; a 503 is retried with the same id, every attempt kept", async () => {
    hook = await startHttpReceiver({ failFirst: 1 });
    const db = await freshDb("webhook");
    const box = new Outbox(db.db, notificationsOf([{ id: "ops", type: "webhook", url: `${hook.url}/hook`, headers: { authorization: "env:HOOK_TOKEN" } }], { HOOK_TOKEN: "Bearer t0k" }), {
      tuning: { firstRetryMs: 30 },
      log: () => {},
    });
    const row = box.write(draft());
    await deliverUntil(box, () => hook.received.some((r) => r.status === 200));

    expect(hook.received.map((r) => r.status)).toEqual([503, 200]);
    const [first, second] = hook.received.map((r) => JSON.parse(r.body));
    expect(first.id).toBe(row.uid);
    expect(second.id).toBe(first.id); // receivers dedupe on it
    expect(second).toEqual({
      id: row.uid,
      event: "stuck",
      backendId: "gb10-a",
      state: "stuck",
      previousState: "stalled",
      // Each reason as the API gives it: the rule that fired and its words.
      reasons: [{ rule: "no-progress", text: "2 running, 0 waiting, 0 new steps in 134 s across 3 reads" }],
      at: "2026-12-01T03:05:00.000Z",
      link: "https://sw.example.org/backends/gb10-a",
      details: {},
      labels: {},
      acknowledgeLink: "https://sw.example.org/backends/gb10-a#acknowledge",
      evidenceLink: "https://sw.example.org/backends/gb10-a#evidence",
      // A lone notification is a message of one: its own id, and itself as the one notification.
      group: "problem",
      count: 1,
      notifications: [expect.objectContaining({ id: row.uid, backendId: "gb10-a" })],
      fleetLink: "https://sw.example.org/",
    });
    expect(hook.received[1].headers.authorization).toBe("Bearer t0k");
    expect(hook.received.map((r) => r.headers["x-stepwatch-notification-id"])).toEqual([row.uid, row.uid]);
    expect(hook.received[1].headers["content-type"]).toBe("application/json");

    const [n] = recentNotifications(db.db);
    expect(n.deliveries).toHaveLength(1);
    expect(n.deliveries[0]).toMatchObject({ channelId: "ops", status: "delivered", attempts: 2 });
    const attempts = n.deliveries[0].recentAttempts;
    expect(attempts.map((a) => a.ok)).toEqual([true, false]); // newest first
    expect(attempts[1]).toMatchObject({ statusCode: 503 });
    expect(attempts[1].error).toContain("HTTP 503");
    expect(box.counters).toMatchObject({ attempts: 2, delivered: 1, failedAttempts: 1 });
  });

  it("slack: a Slack-compatible {text, blocks} body with the link", async () => {
    hook = await startHttpReceiver();
    const db = await freshDb("slack");
    const box = new Outbox(db.db, notificationsOf([{ id: "chat", type: "slack", url: `${hook.url}/services/T/B/X` }]), { log: () => {} });
    const row = box.write(draft({ event: "restart-requested", state: "restarting", details: { requestedBy: "alice", note: "driver <update>" } }));
    await deliverUntil(box, () => hook.received.length === 1);
    expect(hook.received[0].headers["x-stepwatch-notification-id"]).toBe(row.uid);
    const body = JSON.parse(hook.received[0].body);
    expect(body.text).toBe("alice asked to restart gb10-a <https://sw.example.org/backends/gb10-a|open>");
    expect(body.blocks[0].type).toBe("section");
    expect(body.blocks[0].text.text).toContain("note: driver &lt;update&gt;");
    expect(body.blocks[1].elements[0].url).toBe("https://sw.example.org/backends/gb10-a");
  });

  it("ntfy: the topic URL gets a title, a high priority for stuck, the link as click action, the token", async () => {
    hook = await startHttpReceiver();
    const db = await freshDb("ntfy");
    const box = new Outbox(db.db, notificationsOf([{ id: "phone", type: "ntfy", url: `${hook.url}/stepwatch-alerts`, token: "env:NTFY" }], { NTFY: "tk_abc" }), { log: () => {} });
    const stuckRow = box.write(draft());
    const recoveredRow = box.write(draft({ event: "recovered", state: "busy", previousState: "stuck", reasons: [reason("progress", "progress: 12 steps/s")] }));
    await deliverUntil(box, () => hook.received.length === 2);
    const byTitle = (t: string) => hook.received.find((r) => r.headers.title === t)!;
    const stuck = byTitle("gb10-a is stuck");
    const recovered = byTitle("gb10-a recovered (busy)");
    expect(stuck.path).toBe("/stepwatch-alerts");
    expect(stuck.headers.title).toBe("gb10-a is stuck");
    expect(stuck.headers.priority).toBe("5");
    expect(stuck.headers.click).toBe("https://sw.example.org/backends/gb10-a");
    expect(stuck.headers.authorization).toBe("Bearer tk_abc");
    expect(stuck.body).toContain("2 running, 0 waiting");
    expect(recovered.headers.title).toBe("gb10-a recovered (busy)");
    expect(recovered.headers.priority).toBe("3");
    expect(stuck.headers["x-stepwatch-notification-id"]).toBe(stuckRow.uid);
    expect(recovered.headers["x-stepwatch-notification-id"]).toBe(recoveredRow.uid);
  });

  it("a slow receiver (answers after the deadline) gets the message at most twice, with the same id header, not on every retry", async () => {
    // Answers 200 long after the 300 ms attempt deadline: it has every request it was sent.
    hook = await startHttpReceiver({ answerAfterMs: 5_000 });
    const db = await freshDb("slow");
    const box = new Outbox(db.db, notificationsOf([{ id: "ops", type: "webhook", url: `${hook.url}/hook` }]), {
      tuning: { attemptTimeoutMs: 300, firstRetryMs: 20, maxRetryMs: 40 },
      log: () => {},
    });
    const row = box.write(draft());
    // Rounds until the delivery is settled or has had 5 attempts (before the fix: every retry a copy).
    const delivery = () => recentNotifications(db.db)[0].deliveries[0];
    await deliverUntil(box, () => delivery().status !== "pending" || delivery().attempts >= 5, 20_000);
    // A few more rounds past the backoff: nothing more goes out.
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 60));
      await box.deliverDue();
    }
    expect(hook.received.length).toBeGreaterThanOrEqual(1);
    expect(hook.received.length).toBeLessThanOrEqual(2);
    expect(new Set(hook.received.map((r) => r.headers["x-stepwatch-notification-id"]))).toEqual(new Set([row.uid]));
    const d = delivery();
    expect(d.status).toBe("delivered");
    expect(d.lastError).toMatch(/^unconfirmed: sent, no answer within 300 ms; twice: counted as delivered, unconfirmed$/);
  }, 30_000);

  it("a receiver that never got the request in full is retried as before (nothing listens: refused)", async () => {
    const db = await freshDb("refused");
    const box = new Outbox(db.db, notificationsOf([{ id: "ops", type: "webhook", url: "http://127.0.0.1:9/hook" }]), {
      tuning: { attemptTimeoutMs: 300, firstRetryMs: 20, maxRetryMs: 40 },
      log: () => {},
    });
    box.write(draft());
    const delivery = () => recentNotifications(db.db)[0].deliveries[0];
    await deliverUntil(box, () => delivery().attempts >= 3, 20_000);
    expect(delivery().status).toBe("pending");
    expect(delivery().lastError).not.toMatch(/^unconfirmed/);
  }, 30_000);

  it("email: through nodemailer to a real SMTP server; the subject names the backend and the state", async () => {
    const db = await freshDb("email");
    const box = new Outbox(
      db.db,
      notificationsOf(
        [{ id: "mail", type: "email", smtp: { host: "127.0.0.1", port: smtp.port, user: "sw", password: "env:SMTP_PW" }, from: "stepwatch@example.org", to: ["oncall@example.org", "b@example.org"] }],
        { SMTP_PW: "mail-secret" },
      ),
      { log: () => {} },
    );
    const row = box.write(draft({ event: "down", state: "down", previousState: "busy", reasons: [reason("down-refused", "connection refused on 2 consecutive reads")] }));
    await deliverUntil(box, () => smtp.mails.length === 1);
    const m = smtp.mails[0];
    expect(m.user).toBe("sw");
    expect(m.from).toBe("stepwatch@example.org");
    expect(m.to).toEqual(["oncall@example.org", "b@example.org"]);
    expect(m.subject).toBe("[stepwatch] gb10-a is down [down]");
    expect(m.raw).toContain("connection refused on 2 consecutive reads");
    expect(m.raw).toContain(`Message-ID: <${row.uid}@stepwatch>`);
    expect(recentNotifications(db.db)[0].deliveries[0].status).toBe("delivered");
  });

  it("email to an SMTP server that refuses the password is retried, not dropped", async () => {
    const db = await freshDb("email-bad");
    const box = new Outbox(
      db.db,
      notificationsOf([{ id: "mail", type: "email", smtp: { host: "127.0.0.1", port: smtp.port, user: "sw", password: "wrong" }, from: "s@example.org", to: ["o@example.org"] }]),
      { log: () => {}, tuning: { firstRetryMs: 60_000 } },
    );
    box.write(draft());
    await deliverUntil(box, () => box.counters.attempts === 1);
    const d = recentNotifications(db.db)[0].deliveries[0];
    expect(d.status).toBe("pending");
    expect(d.lastError).toMatch(/smtp: .*EAUTH/i);
    expect(d.nextAttemptAt).toBeGreaterThan(Date.now() + 30_000);
  });

  it("filters: a channel takes only its events and backends", async () => {
    hook = await startHttpReceiver();
    const db = await freshDb("filters");
    const box = new Outbox(db.db, notificationsOf([{ id: "b2-only", type: "webhook", url: hook.url, events: ["recovered"], backends: ["b2"] }]), { log: () => {} });
    box.write(draft()); // stuck of gb10-a: not taken
    box.write(draft({ backendId: "b2", event: "stuck" })); // wrong event
    box.write(draft({ backendId: "b2", event: "recovered", state: "idle" }));
    await deliverUntil(box, () => hook.received.length === 1);
    await box.deliverDue();
    expect(hook.received).toHaveLength(1);
    expect(JSON.parse(hook.received[0].body)).toMatchObject({ backendId: "b2", event: "recovered" });
    expect(recentNotifications(db.db)).toHaveLength(3); // every notification is recorded, taken or not
  });

  it("a receiver that never answers within the retry window is marked failed after two days, and the channel shows failing", async () => {
    hook = await startHttpReceiver({ failFirst: 1_000 });
    const db = await freshDb("give-up");
    let now = Date.parse("2026-12-01T00:00:00Z");
    const box = new Outbox(db.db, notificationsOf([{ id: "ops", type: "webhook", url: hook.url }]), { now: () => now, log: () => {} });
    box.write(draft());
    // Walk the clock through the backoff: each round tries once, then waits until the next attempt.
    for (let i = 0; i < 200 && recentNotifications(db.db)[0].deliveries[0].status === "pending"; i++) {
      await box.deliverDue();
      now = recentNotifications(db.db)[0].deliveries[0].nextAttemptAt;
    }
    const d = recentNotifications(db.db)[0].deliveries[0];
    expect(d.status).toBe("failed");
    expect(d.lastError).toMatch(/^given up after \d+ attempts over 48 h: HTTP 503/);
    expect(now - Date.parse("2026-12-01T00:00:00Z")).toBeGreaterThanOrEqual(24 * 3600_000); // retried at least a day
    expect(box.channelStatus()[0]).toMatchObject({ id: "ops", failing: true });
    // A new Outbox (a restart of stepwatch) still knows the channel keeps failing.
    expect(new Outbox(db.db, box.config, { log: () => {} }).channelStatus()[0].failing).toBe(true);
  });

  it("the delivery loop delivers in the background and stops on abort", async () => {
    hook = await startHttpReceiver();
    const db = await freshDb("loop");
    const box = new Outbox(db.db, notificationsOf([{ id: "ops", type: "webhook", url: hook.url }]), { log: () => {} });
    const c = new AbortController();
    stops.push(c);
    const loop = box.run(c.signal);
    box.write(draft());
    const deadline = Date.now() + 10_000;
    while (hook.received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(hook.received).toHaveLength(1);
    c.abort();
    await loop;
  });
});

describe("a receiver that hangs", () => {
  it("holds only its own delivery: another channel's is delivered meanwhile", async () => {
    hook = await startHttpReceiver({ holdPaths: ["/hold"] });
    const db = await freshDb("hold");
    const box = new Outbox(
      db.db,
      notificationsOf([
        { id: "hangs", type: "webhook", url: `${hook.url}/hold` },
        { id: "fine", type: "webhook", url: `${hook.url}/fine` },
      ]),
      { log: () => {}, tuning: { attemptTimeoutMs: 60_000 } },
    );
    const c = new AbortController();
    stops.push(c);
    const loop = box.run(c.signal);
    box.write(draft());
    const deadline = Date.now() + 10_000;
    while (!hook.received.some((r) => r.path === "/hold") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    box.write(draft({ event: "recovered", state: "idle" }));
    while (hook.received.filter((r) => r.path === "/fine").length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(hook.received.filter((r) => r.path === "/fine" && r.status === 200)).toHaveLength(2);
    const hangs = recentNotifications(db.db).flatMap((n) => n.deliveries.filter((d) => d.channelId === "hangs"));
    expect(hangs.every((d) => d.status === "pending" && d.attempts === 0)).toBe(true); // still in flight, nothing invented
    c.abort();
    await loop;
    // Cut short by the shutdown: not recorded as an attempt, still pending for the next start.
    expect(recentNotifications(db.db).flatMap((n) => n.deliveries.filter((d) => d.channelId === "hangs")).map((d) => [d.status, d.attempts])).toEqual([
      ["pending", 0],
      ["pending", 0],
    ]);
  });
});

describe("failed deliveries on /metrics (stepwatch_notification_failures_total)", () => {
  it("the watcher's outbox counts every failed attempt per channel; every channel's series exists at 0", async () => {
    hook = await startHttpReceiver({ failFirst: 2 });
    const db = await freshDb("metrics");
    const metrics = new StepwatchMetrics({ defaultMetrics: false });
    const config = parseConfig(
      {
        // Nothing listens there: down inside the startup grace, which notifies nothing by itself.
        backends: [{ id: "gb10-a", url: "http://127.0.0.1:1" }],
        notifications: {
          groupWaitSeconds: 0,
          channels: [
            { id: "ops", type: "webhook", url: `${hook.url}/ops` },
            { id: "mail", type: "email", smtp: { host: "127.0.0.1", port: smtp.port }, from: "sw@example.org", to: ["o@example.org"], events: ["recovered"] },
          ],
        },
      },
      "test",
      { env: {} },
    );
    const w = startWatcher({ config, db: db.db, telemetry: metrics.telemetry, log: () => {}, outbox: { tuning: { firstRetryMs: 30, tickMs: 50 } } });
    try {
      const failures = async () => {
        const text = await metrics.render();
        const parsed = parsePrometheus(text);
        expect(parsed.errors).toEqual([]);
        const of = (channel: string) => parsed.samples.find((x) => x.name === "stepwatch_notification_failures_total" && x.labels.channel === channel)?.value;
        return { ops: of("ops"), mail: of("mail") };
      };
      expect(await failures()).toEqual({ ops: 0, mail: 0 });
      db.db.$client.transaction(() => w.notify(draft()))();
      const deadline = Date.now() + 15_000;
      while (!hook.received.some((r) => r.status === 200)) {
        if (Date.now() > deadline) throw new Error("timed out waiting for the delivery");
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(hook.received.map((r) => r.status)).toEqual([503, 503, 200]);
      // Two failed attempts, then delivered: the counter says 2 and stays there; mail took nothing.
      expect(await failures()).toEqual({ ops: 2, mail: 0 });
    } finally {
      await w.stop();
    }
  });
});

describe("retryDelayMs", () => {
  it("doubles from the first retry up to the cap", () => {
    const t = { firstRetryMs: 5000, maxRetryMs: 30 * 60_000 };
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, t))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(40, t)).toBe(30 * 60_000);
  });
});
