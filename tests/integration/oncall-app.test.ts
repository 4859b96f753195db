/**
 * The on-call loop end to end in the real built app (`next start`), with real simulators in hang
 * mode, a real webhook receiver that fails first, a real SMTP server:
 * - a stuck backend's notification survives a stop of stepwatch while its receiver fails, and is
 *   delivered (same id) after the next start;
 * - a channel that keeps failing is shown in the fleet;
 * - acknowledge and maintenance over HTTP (auth, origin, who/when/note in the fleet, reminders
 *   stop, nothing sent in maintenance, DELETE ends it);
 * - the unattended restart: restart-scheduled at once, then the one restart verb as
 *   "stepwatch:unattended", restart-finished, recovered; at most maxPerDay;
 * - never a problem, with restart.unattended configured: a sleeping simulator, a backend down inside
 *   startupGraceSeconds, one whose probe needs the API key (a configuration problem);
 * - failed deliveries on GET /metrics; the fleet's ETag moves with an acknowledgement or maintenance.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetBackend, FleetResponse, NotificationDTO, NotificationsResponse, RestartEventDTO } from "@/lib/api/types";
import type { MessagePayload, NotificationPayload } from "@/lib/notify/message";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { startSimulator, type Simulator } from "@/sim/server";
import { startHttpReceiver, startSmtpReceiver, type HttpReceiver, type SmtpReceiver } from "../support/receivers";
import { assertBuilt, call, getJson, nodeScript, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

const IDS = ["hung", "ackme", "maint", "auto", "calm", "sleepy", "keyed"] as const;
/** Backends that are never a problem (with restart.unattended): asleep, down in the grace, a config problem. */
const QUIET = ["sleepy", "keyed", "gone"];
let dir: string;
let env: Record<string, string>;
let app: RunningApp | null = null;
let cookie: string;
const sims = {} as Record<(typeof IDS)[number], Simulator>;
let hook: HttpReceiver;
let smtp: SmtpReceiver;

const fleet = async () => (await getJson<FleetResponse>(`${app!.url}/api/fleet`))!.body;
const backend = async (id: string): Promise<FleetBackend> => (await fleet()).backends.find((b) => b.id === id)!;
const notifications = async (id?: string) =>
  (await getJson<NotificationsResponse>(`${app!.url}/api/notifications?limit=500${id ? `&backend=${id}` : ""}`))!.body;
const messagesTo = (p: string): MessagePayload[] =>
  hook.received.filter((r) => r.path === p && r.status === 200).map((r) => JSON.parse(r.body) as MessagePayload);
/** Every notification delivered to a path, whether it went alone or in a group (lib/notify/grouping.ts). */
const sentTo = (p: string): NotificationPayload[] => messagesTo(p).flatMap((m) => m.notifications);
const eventsOf = (id: string, p = "/all") => sentTo(p).filter((n) => n.backendId === id).map((n) => n.event + (n.details.reminder ? "(reminder)" : ""));
const post = (p: string, body: unknown, opts: { cookie?: string; origin?: string; method?: string } = { cookie: undefined }) =>
  call(`${app!.url}${p}`, { method: opts.method ?? "POST", body: body === undefined ? undefined : JSON.stringify(body), cookie: opts.cookie, origin: opts.origin });
const asOlga = { get cookie() { return cookie; }, get origin() { return app!.url; } };

async function hang(s: Simulator): Promise<void> {
  s.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
  await s.setMode("hang");
}

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-oncall-"));
  for (const id of IDS) sims[id] = await startSimulator({ weightsLoadSeconds: 1, ...(id === "keyed" ? { apiKey: "sim-only-key" } : {}) });
  hook = await startHttpReceiver({ failFirst: 0, holdPaths: ["/hold"] });
  smtp = await startSmtpReceiver();
  // The restart "command" of the unattended backend: restart the simulator (a hang is cured by it).
  const restartAuto = nodeScript(
    dir,
    "restart-auto",
    `fetch(process.argv[2]+"/_sim/restart",{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify({weightsLoadSeconds:1})})
       .then(r=>{console.log("sim restart",r.status);process.exit(r.ok?0:1)},e=>{console.error(e.message);process.exit(1)});`,
    [sims.auto.url],
  );
  const noop = { command: [process.execPath, "-e", "process.exit(0)"], unattended: { afterSeconds: 1, maxPerDay: 5 } };
  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      probeTimeoutSeconds: 2,
      idleProbeSeconds: 60,
      restartCooldownSeconds: 0,
      recoveryTimeoutSeconds: 60,
      // "gone" stays inside it for the whole file: down, never recommended.
      startupGraceSeconds: 3600,
      backends: [
        { id: "hung", url: sims.hung.url },
        { id: "ackme", url: sims.ackme.url },
        { id: "maint", url: sims.maint.url },
        { id: "auto", url: sims.auto.url, restart: { command: restartAuto, unattended: { afterSeconds: 2, maxPerDay: 1 } } },
        { id: "calm", url: sims.calm.url },
        { id: "sleepy", url: sims.sleepy.url, restart: noop },
        { id: "keyed", url: sims.keyed.url, restart: noop },
        { id: "gone", url: "http://127.0.0.1:1", restart: noop },
      ],
      operators: [{ name: "olga", password: "env:SW_ONCALL_PW" }],
      notifications: {
        publicUrl: "http://stepwatch.test:3000",
        renotifyMinutes: 0.1,
        recoveredAfterSeconds: 2,
        // Each event as soon as written (grouping has its own tests: notify-grouping*.test.ts).
        groupWaitSeconds: 0,
        groupIntervalSeconds: 0,
        channels: [
          { id: "ops", type: "webhook", url: `${hook.url}/ops`, backends: ["hung"], headers: { "x-token": "env:SW_HOOK_TOKEN" } },
          { id: "all", type: "webhook", url: `${hook.url}/all`, backends: ["ackme", "maint", "auto"] },
          { id: "broken", type: "webhook", url: "http://127.0.0.1:9/nobody-listens", backends: ["hung"] },
          { id: "hold", type: "webhook", url: `${hook.url}/hold`, backends: ["hung"], events: ["stuck"] },
          { id: "quiet", type: "webhook", url: `${hook.url}/quiet`, backends: QUIET },
          { id: "mail", type: "email", smtp: { host: "127.0.0.1", port: smtp.port }, from: "sw@example.org", to: ["oncall@example.org"], events: ["restart-scheduled"] },
        ],
      },
    }),
  );
  env = { STEPWATCH_CONFIG: configPath, STEPWATCH_DB: path.join(dir, "db", "stepwatch.db"), SW_ONCALL_PW: "oncall-pw-1", SW_HOOK_TOKEN: "hook-secret-1" };
  app = await startApp(env);
  cookie = await signIn(app, "olga", "oncall-pw-1");
  await waitFor("every backend read", async () => (await fleet()).backends.every((b) => QUIET.includes(b.id) || b.state === "idle"), 30_000);
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await hook?.close();
  await smtp?.close();
  await Promise.allSettled(Object.values(sims).map((s) => s.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the outbox across a restart of stepwatch", () => {
  it("a stuck notification whose receiver fails is kept, and delivered with the same id after the next start", async () => {
    hook.failFirst = 1_000; // the receiver is down for now
    await hang(sims.hung);
    const first = await waitFor("a failed attempt of hung's stuck notification", () => hook.received.find((r) => r.path === "/ops"), 30_000);
    expect(first.status).toBe(503);
    const firstPayload = JSON.parse(first.body) as MessagePayload;
    expect(firstPayload).toMatchObject({ event: "stuck", backendId: "hung", state: "stuck", link: "http://stepwatch.test:3000/backends/hung" });
    expect(first.headers["x-token"]).toBe("hook-secret-1");
    const pending = await waitFor("the failed attempt recorded", async () => {
      const n = (await notifications("hung")).notifications.find((x) => x.id === firstPayload.id);
      const d = n?.deliveries.find((x) => x.channelId === "ops");
      return d && d.attempts >= 1 ? d : null;
    });
    expect(pending.status).toBe("pending");
    expect(pending.lastError).toContain("HTTP 503");

    await app!.stop();
    hook.failFirst = 0; // the receiver is back while stepwatch is down
    app = await startApp(env);
    cookie = await signIn(app, "olga", "oncall-pw-1");

    const delivered = await waitFor("the same notification delivered after the restart", () => messagesTo("/ops").find((p) => p.id === firstPayload.id), 60_000);
    expect(delivered).toEqual(firstPayload);
    const n = await waitFor("delivery recorded", async () => {
      const x = (await notifications("hung")).notifications.find((y) => y.id === firstPayload.id);
      return x?.deliveries.find((d) => d.channelId === "ops")?.status === "delivered" ? x : null;
    });
    const ops = n.deliveries.find((d) => d.channelId === "ops")!;
    expect(ops.recentAttempts[0]).toMatchObject({ ok: true, statusCode: 200 });
    expect(ops.recentAttempts.some((a) => !a.ok && a.statusCode === 503)).toBe(true);
    // Still stuck after the restart of stepwatch: no second "stuck" opened for the same problem.
    expect(sentTo("/ops").filter((p) => p.event === "stuck" && !p.details.reminder).length).toBe(1);
  }, 150_000);

  it("a receiver that never answers delays no poll: reads go on while its delivery hangs", async () => {
    await waitFor("a delivery to the hanging receiver in flight", () => hook.received.some((r) => r.path === "/hold"), 30_000);
    const t = Date.now();
    // Its attempt is cut at 10 s; meanwhile every backend is read about once a second.
    const f = await waitFor("five more polls of every backend", async () => {
      const x = await fleet();
      return x.backends.every((b) => (b.lastReadAt ?? 0) > t + 5000) ? x : null;
    }, 20_000, 250);
    expect(f.backends.find((b) => b.id === "hung")!.state).toBe("stuck");
  }, 60_000);

  it("a channel that keeps failing is shown in the fleet, with its error", async () => {
    const ch = await waitFor(
      "the broken channel shown failing",
      async () => (await fleet()).notificationChannels.find((c) => c.id === "broken" && c.failing),
      60_000,
      500,
    );
    expect(ch.lastError).toMatch(/refused|ECONNREFUSED|connect/i);
    expect((await fleet()).notificationChannels.find((c) => c.id === "ops")?.failing).toBe(false);
    // The same failures on GET /metrics, per channel; a channel that failed nothing is there at 0.
    const m = await call(`${app!.url}/metrics`);
    expect(m.status).toBe(200);
    const parsed = parsePrometheus(m.text);
    expect(parsed.errors).toEqual([]);
    const failures = (channel: string) => parsed.samples.find((x) => x.name === "stepwatch_notification_failures_total" && x.labels.channel === channel)?.value;
    expect(failures("broken")).toBeGreaterThan(0);
    expect(failures("mail")).toBe(0);
    expect(JSON.stringify(await fleet())).not.toContain("hook-secret-1");
    expect(JSON.stringify(await notifications())).not.toContain("hook-secret-1");
  }, 90_000);
});

describe("acknowledge over HTTP", () => {
  it("needs an operator from the same origin; a healthy backend has nothing to acknowledge", async () => {
    expect((await post("/api/backends/ackme/acknowledge", {})).status).toBe(401);
    expect((await post("/api/backends/ackme/acknowledge", {}, { cookie, origin: "http://evil.example" })).status).toBe(403);
    expect((await post("/api/backends/nope/acknowledge", {}, asOlga)).status).toBe(404);
    const calm = await post("/api/backends/calm/acknowledge", {}, asOlga);
    expect(calm.status).toBe(409);
    expect((calm.json as { message: string }).message).toMatch(/healthy/);
    expect((await post("/api/backends/ackme/acknowledge", { note: 5 }, asOlga)).status).toBe(400);
  });

  it("stops reminders for the current problem, shows who and when, and clears once healthy again", async () => {
    await hang(sims.ackme);
    await waitFor("a stuck and a reminder for ackme", () => eventsOf("ackme").includes("stuck(reminder)"), 40_000);
    const seen = await call(`${app!.url}/api/fleet`); // what the dashboard holds (and the server just encoded)
    const etag = seen.headers.get("etag")!;
    expect(etag).toBeTruthy();
    const r = await post("/api/backends/ackme/acknowledge", { note: "looking at it" }, asOlga);
    expect(r.status, r.text).toBe(201);
    // The dashboard's refetch right after its POST: a new ETag and the acknowledgement, never a 304.
    const again = await call(`${app!.url}/api/fleet`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(200);
    expect(again.headers.get("etag")).not.toBe(etag);
    const b = (again.json as FleetResponse).backends.find((x) => x.id === "ackme")!;
    expect(b.acknowledged).toMatchObject({ by: "olga", note: "looking at it" });
    expect(b.acknowledged!.at).toBeGreaterThan(Date.now() - 60_000);
    expect(b.problem).toMatchObject({ event: "stuck" });
    const sentAtAck = eventsOf("ackme").length;
    // Two reminder periods (6 s each) later: nothing more was sent.
    const t = Date.now();
    await waitFor("two reminder periods", () => Date.now() - t > 13_000, 20_000, 500);
    expect(eventsOf("ackme").length).toBe(sentAtAck);

    await sims.ackme.setMode("normal");
    await waitFor("ackme recovered notification", () => eventsOf("ackme").includes("recovered"), 40_000);
    const after = await waitFor("the acknowledgement cleared", async () => {
      const x = await backend("ackme");
      return x.acknowledged === null && x.problem === null ? x : null;
    });
    expect(after.healthy).toBe(true);
  }, 120_000);
});

describe("maintenance over HTTP", () => {
  it("no notification and no restart recommendation while in maintenance; the card data says until when, who and why; DELETE ends it", async () => {
    expect((await post("/api/backends/maint/maintenance", { minutes: 30 })).status).toBe(401);
    expect((await post("/api/backends/maint/maintenance", { minutes: 30 }, { cookie, origin: "http://evil.example" })).status).toBe(403);
    expect((await post("/api/backends/maint/maintenance", { minutes: -1 }, asOlga)).status).toBe(400);
    const etag = (await call(`${app!.url}/api/fleet`)).headers.get("etag")!;
    const r = await post("/api/backends/maint/maintenance", { minutes: 30, note: "driver update" }, asOlga);
    expect(r.status, r.text).toBe(201);
    const again = await call(`${app!.url}/api/fleet`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(200);
    expect((again.json as FleetResponse).backends.find((x) => x.id === "maint")!.maintenance).toMatchObject({ by: "olga", note: "driver update" });

    await hang(sims.maint);
    const b = await waitFor("maint stuck", async () => {
      const x = await backend("maint");
      return x.state === "stuck" ? x : null;
    }, 30_000);
    expect(b.restartRecommended).toBe(false);
    expect(b.maintenance).toMatchObject({ by: "olga", note: "driver update", source: "api" });
    expect(b.maintenance!.until).toBeGreaterThan(Date.now() + 25 * 60_000);
    // A few polls as stuck, in maintenance: nothing recorded, nothing sent.
    const t = Date.now();
    await waitFor("three polls", async () => ((await backend("maint")).lastReadAt ?? 0) > t + 3000, 20_000);
    expect((await notifications("maint")).notifications).toEqual([]);
    expect(eventsOf("maint")).toEqual([]);

    const end = await call(`${app!.url}/api/backends/maint/maintenance`, { method: "DELETE", cookie, origin: app!.url });
    expect(end.status, end.text).toBe(200);
    expect((await call(`${app!.url}/api/backends/maint/maintenance`, { method: "DELETE", cookie, origin: app!.url })).status).toBe(409);
    // Maintenance over and still stuck: the problem opens now.
    await waitFor("maint stuck notification after the maintenance", () => eventsOf("maint").includes("stuck"), 30_000);
    const after = await backend("maint");
    expect(after.maintenance).toBeNull();
    expect(after.restartRecommended).toBe(true);
    await sims.maint.setMode("normal");
  }, 120_000);
});

describe("unattended restart end to end", () => {
  it("announces the restart at once, runs it through the one restart verb as stepwatch:unattended, and never more than maxPerDay", async () => {
    const startBefore = sims.auto.state().processStartTime;
    await hang(sims.auto);
    const scheduled = await waitFor("restart-scheduled sent", () => sentTo("/all").find((n) => n.backendId === "auto" && n.event === "restart-scheduled"), 40_000);
    expect(typeof scheduled.details.scheduledAt).toBe("number");
    const mail = await waitFor("the restart-scheduled email", () => smtp.mails.find((m) => m.subject.includes("auto will be restarted at")), 20_000);
    expect(mail.subject).toMatch(/^\[stepwatch\] auto will be restarted at \d\d:\d\d \S+ unless someone acknowledges \[stuck\]$/);

    const ev = await waitFor("the unattended restart recorded and recovered", async () => {
      const all = (await getJson<RestartEventDTO[]>(`${app!.url}/api/restarts?backend=auto`))!.body;
      return all.length === 1 && all[0].outcome === "recovered" ? all[0] : null;
    }, 60_000);
    expect(ev).toMatchObject({ requestedBy: "stepwatch:unattended", stateAtRequest: "stuck", healthyAtRequest: false });
    expect(ev.note).toMatch(/unattended restart/);
    expect(ev.evidence.reasons.map((r) => r.rule)).toContain("no-progress");
    expect(ev.requestedAt).toBeGreaterThanOrEqual(scheduled.details.scheduledAt as number);
    expect(sims.auto.state().processStartTime).not.toBe(startBefore);

    await waitFor("restart-requested, restart-finished and recovered sent", () => {
      const e = eventsOf("auto");
      return e.includes("restart-requested") && e.includes("restart-finished") && e.includes("recovered");
    }, 40_000);
    const requested = sentTo("/all").find((n) => n.backendId === "auto" && n.event === "restart-requested")!;
    expect(requested.details).toMatchObject({ requestedBy: "stepwatch:unattended" });
    const finished = sentTo("/all").find((n) => n.backendId === "auto" && n.event === "restart-finished")!;
    expect(finished.details).toMatchObject({ outcome: "recovered" });
    expect(finished.details.downtimeSeconds).toEqual(expect.any(Number));

    // Stuck again the same day: maxPerDay 1 is used up, so it stays stuck, notified, not restarted.
    await waitFor("auto healthy", async () => (await backend("auto")).healthy, 30_000);
    await hang(sims.auto);
    await waitFor("auto stuck again, notified", () => eventsOf("auto").filter((e) => e === "stuck").length === 2, 40_000);
    const t = Date.now();
    await waitFor("five more polls", async () => ((await backend("auto")).lastReadAt ?? 0) > t + 5000, 20_000);
    const all = (await getJson<RestartEventDTO[]>(`${app!.url}/api/restarts?backend=auto`))!.body;
    expect(all).toHaveLength(1);
    expect(eventsOf("auto").filter((e) => e === "restart-scheduled")).toHaveLength(1);
    expect((await backend("auto")).unattendedRestartAt).toBeNull();
  }, 180_000);
});

describe("GET /api/notifications", () => {
  it("lists recent notifications with their deliveries, filters by backend, and rejects an unknown one", async () => {
    const all = await notifications();
    expect(all.channels.map((c) => c.id)).toEqual(["ops", "all", "broken", "hold", "quiet", "mail"]);
    const auto = (await notifications("auto")).notifications as NotificationDTO[];
    expect(auto.length).toBeGreaterThan(0);
    expect(auto.every((n) => n.backendId === "auto")).toBe(true);
    expect(auto.some((n) => n.deliveries.some((d) => d.channelId === "mail" && d.status === "delivered"))).toBe(true);
    expect((await getJson(`${app!.url}/api/notifications?backend=nope`))!.status).toBe(404);
  });
});

describe("never a problem, although restart.unattended is configured", () => {
  it("a sleeping server, one down inside startupGraceSeconds, one whose probe needs the API key: nothing sent, nothing restarted", async () => {
    const slept = await fetch(`${sims.sleepy.url}/sleep?level=1`, { method: "POST", signal: AbortSignal.timeout(10_000) });
    expect(slept.ok).toBe(true);
    const by = (f: FleetResponse, id: string) => f.backends.find((b) => b.id === id)!;
    await waitFor("sleepy sleeping, gone down, keyed with its configuration problem", async () => {
      const f = await fleet();
      return by(f, "sleepy").state === "sleeping" && by(f, "gone").state === "down" && by(f, "keyed").configProblem !== null;
    }, 30_000);
    const seenAsleepAt = Date.now();
    // Many times afterSeconds (1 s): an unattended restart would have been asked by now.
    const t = Date.now();
    await waitFor("five more polls", async () => ((await backend("sleepy")).lastReadAt ?? 0) > t + 5000, 20_000);
    const f = await fleet();
    expect(by(f, "sleepy")).toMatchObject({ state: "sleeping", healthy: true });
    expect(by(f, "gone").reasons[0].rule).toBe("down-grace");
    expect(by(f, "keyed")).toMatchObject({ state: "unknown", configProblem: "the probe needs the API key: 401" });
    for (const id of QUIET) {
      expect(by(f, id), id).toMatchObject({ restartRecommended: false, problem: null, unattendedRestartAt: null, unattendedConfigured: true });
      expect((await notifications(id)).notifications, id).toEqual([]);
      expect((await getJson<RestartEventDTO[]>(`${app!.url}/api/restarts?backend=${id}`))!.body, id).toEqual([]);
    }
    expect(hook.received.filter((r) => r.path === "/quiet")).toEqual([]);
    // The sleeping simulator was never woken, and no probe (POST /v1/...) was sent to it while asleep.
    const asleep = (await (await fetch(`${sims.sleepy.url}/is_sleeping`, { signal: AbortSignal.timeout(10_000) })).json()) as { is_sleeping: boolean };
    expect(asleep.is_sleeping).toBe(true);
    expect(sims.sleepy.model.sleepLevel).toBe(1);
    expect(sims.sleepy.received().filter((q) => q.at >= seenAsleepAt && q.path.startsWith("/v1/"))).toEqual([]);
  }, 60_000);
});
