/**
 * The audit log (issue 16) meets the on-call verbs (issue 12), on a real SQLite file: acknowledge
 * and maintenance write their audit line in the same transaction as their row; the restart verb
 * writes both its audit line and its restart-requested notification with the event; an
 * unattended restart is the system's, not an operator's.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { activeAcknowledgement, openMaintenance, recentNotifications } from "@/db/queries/oncall";
import { listAudit } from "@/db/queries/auth";
import { listRestartEvents } from "@/db/queries/restarts";
import { type Verdict, reason } from "@/lib/core/types";
import { parseConfig } from "@/lib/config";
import { OnCallBook } from "@/lib/oncall/book";
import { acknowledge, endMaintenance, startMaintenance, type OnCallVerbDeps } from "@/lib/oncall/verbs";
import { Outbox } from "@/lib/notify/outbox";
import { requestRestart } from "@/lib/restart/request";
import { UNATTENDED_BY } from "@/lib/watcher/monitors";

const stuck: Verdict = {
  state: "stuck",
  health: "no",
  healthy: false,
  restartRecommended: true,
  reasons: [reason("no-progress", "2 running, 0 new steps in 134 s across 3 reads"), reason("no-progress-stuck", "no progress across 2 waits and at least 120 s")],
  rates: { stepsPerSecond: 0, generationTokensPerSecond: 0, promptTokensPerSecond: 0 },
  basis: [],
};

const config = parseConfig(
  {
    backends: [{ id: "gb10-a", url: "http://127.0.0.1:1", restart: { command: ["/bin/false"] } }],
    notifications: { channels: [{ id: "ops", type: "webhook", url: "http://127.0.0.1:9/hook" }] },
  },
  "t",
  { env: {} },
);

let dir: string;
let h: DbHandle;
let deps: OnCallVerbDeps;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-oncall-audit-"));
  h = await openTestDb(path.join(dir, "t.db"));
  const book = new OnCallBook(h.db, [], ["gb10-a"], () => 1_000);
  deps = { db: h.db, backends: config.backends, book, current: () => ({ verdict: stuck }) };
});
afterEach(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("on-call verbs in the audit log", () => {
  it("acknowledge, start and end of maintenance each write one line naming who, from where, what", () => {
    acknowledge({ backendId: "gb10-a", by: "alice", note: "looking", now: 1_000, actorKind: "operator", address: "10.0.0.5" }, deps);
    startMaintenance({ backendId: "gb10-a", by: "ci", minutes: 30, note: "driver", now: 2_000, actorKind: "token", address: "10.0.0.6" }, deps);
    endMaintenance({ backendId: "gb10-a", by: "alice", now: 3_000 }, deps);
    const lines = listAudit(h.db, { limit: 10 }).reverse();
    expect(lines.map((l) => [l.action, l.actor, l.actorKind, l.target, l.address])).toEqual([
      ["acknowledge", "alice", "operator", "gb10-a", "10.0.0.5"],
      ["maintenance.start", "ci", "token", "gb10-a", "10.0.0.6"],
      ["maintenance.end", "alice", "operator", "gb10-a", null],
    ]);
    expect(lines[0].detail).toBe("while stuck: looking");
    expect(lines[1].detail).toContain("driver");
  });

  it("ending maintenance that is not running is a 409 and writes no line", () => {
    expect(() => endMaintenance({ backendId: "gb10-a", by: "alice", now: 3_000 }, deps)).toThrow(/not in maintenance/);
    expect(listAudit(h.db, { limit: 10 })).toEqual([]);
  });

  it("when the audit line cannot be written, neither is the acknowledgement nor the maintenance", () => {
    h.db.$client.exec("DROP TABLE audit_log");
    expect(() => acknowledge({ backendId: "gb10-a", by: "alice", now: 1_000 }, deps)).toThrow(/cannot record the acknowledgement/);
    expect(() => startMaintenance({ backendId: "gb10-a", by: "alice", minutes: 5, now: 1_000 }, deps)).toThrow(/cannot record the maintenance/);
    expect(activeAcknowledgement(h.db, "gb10-a")).toBeUndefined();
    expect(openMaintenance(h.db, "gb10-a", 1_000)).toEqual([]);
  });

  it("a restart writes its audit line and its restart-requested notification with the event; unattended is the system's", async () => {
    const outbox = new Outbox(h.db, config.notifications, { log: () => {} });
    const { event, done } = requestRestart(
      { backendId: "gb10-a", operator: UNATTENDED_BY, actorKind: "system", now: 5_000 },
      {
        db: h,
        backends: config.backends,
        restartCooldownSeconds: 600,
        commandEnv: {},
        current: () => ({ verdict: stuck, reading: null }),
        execute: async () => ({ ok: true, exitCode: 0, output: "", error: null, finishedAt: 6_000 }),
        notify: (d) => void outbox.write(d),
      },
    );
    await done;
    expect(listRestartEvents(h.db, { limit: 5 }).map((e) => e.id)).toEqual([event.id]);
    const audit = listAudit(h.db, { limit: 10 });
    expect(audit.map((l) => [l.action, l.actor, l.actorKind, l.target])).toEqual([["restart", "stepwatch:unattended", "system", "gb10-a"]]);
    expect(recentNotifications(h.db, {}).map((n) => n.event)).toContain("restart-requested");
  });
});

describe("publicUrl under either name", () => {
  const parse = (json: object) => parseConfig(json, "t", { env: {} });
  it("notifications.publicUrl alone is also the Host check's publicUrl, and the other way round", () => {
    const a = parse({ notifications: { publicUrl: "https://sw.example.org" } });
    expect([a.publicUrl, a.notifications.publicUrl]).toEqual(["https://sw.example.org", "https://sw.example.org"]);
    const b = parse({ publicUrl: "https://sw.example.org" });
    expect([b.publicUrl, b.notifications.publicUrl]).toEqual(["https://sw.example.org", "https://sw.example.org"]);
    const none = parse({});
    expect([none.publicUrl, none.notifications.publicUrl]).toEqual([undefined, null]);
  });
  it("two different values are refused, naming the field", () => {
    expect(() => parse({ publicUrl: "https://a.example.org", notifications: { publicUrl: "https://b.example.org" } })).toThrow(/notifications\.publicUrl: differs from publicUrl/);
  });
});
