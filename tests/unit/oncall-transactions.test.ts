/**
 * "A notification is written in the same transaction as what caused it", checked on a real SQLite
 * file: the restart verb's restart-requested / restart-finished, and the watcher's flush of a
 * transition with its notification (a failure writes neither, and both are retried).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { listRestartEvents } from "@/db/queries/restarts";
import { lastTransition } from "@/db/queries/readings";
import { recentNotifications } from "@/db/queries/oncall";
import { type Verdict, reason } from "@/lib/core/types";
import { parseConfig } from "@/lib/config";
import { Outbox } from "@/lib/notify/outbox";
import { requestRestart, type RestartDeps } from "@/lib/restart/request";
import { WatchStore } from "@/lib/watcher/store";

const stuck: Verdict = {
  state: "stuck",
  health: "no",
  healthy: false,
  restartRecommended: true,
  reasons: [reason("no-progress", "2 running, 0 new steps in 134 s across 3 reads"), reason("no-progress-stuck", "no progress across 2 waits and at least 120 s")],
  rates: { stepsPerSecond: 0, generationTokensPerSecond: 0, promptTokensPerSecond: 0 },
  basis: [],
};

let dir: string;
let h: DbHandle;
let outbox: Outbox;
const config = parseConfig(
  {
    backends: [{ id: "gb10-a", url: "http://127.0.0.1:1", restart: { command: ["/bin/false"] } }],
    notifications: { channels: [{ id: "ops", type: "webhook", url: "http://127.0.0.1:9/hook" }] },
  },
  "t",
  { env: {} },
);

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-oncall-tx-"));
  h = await openTestDb(path.join(dir, "t.db"));
  outbox = new Outbox(h.db, config.notifications, { log: () => {} });
});
afterEach(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function deps(over: Partial<RestartDeps> = {}): RestartDeps {
  return {
    db: h,
    backends: config.backends,
    restartCooldownSeconds: 600,
    commandEnv: {},
    current: () => ({ verdict: stuck, reading: null }),
    execute: async () => ({ ok: false, exitCode: 1, output: "", error: "exited with status 1", finishedAt: 2000 }),
    notify: (d) => void outbox.write(d),
    ...over,
  };
}

describe("the restart verb's notifications", () => {
  it("restart-requested (who, note) is stored with the event; a failed action adds restart-finished", async () => {
    const { event, done } = requestRestart({ backendId: "gb10-a", operator: "alice", note: "3 a.m. hang", now: 1000 }, deps());
    await done;
    const ns = recentNotifications(h.db).reverse();
    expect(ns.map((n) => n.event)).toEqual(["restart-requested", "restart-finished"]);
    expect(ns[0]).toMatchObject({ backendId: "gb10-a", state: "stuck", at: 1000, details: { restartId: event.id, requestedBy: "alice", note: "3 a.m. hang" } });
    expect(ns[0].deliveries.map((d) => [d.channelId, d.status])).toEqual([["ops", "pending"]]);
    expect(ns[1].details).toMatchObject({ outcome: "failed", restartId: event.id });
  });

  it("when the notification cannot be written, the restart is not recorded and nothing runs", () => {
    let ran = false;
    const d = deps({
      notify: () => {
        throw new Error("disk I/O error");
      },
      execute: async () => {
        ran = true;
        return { ok: true, exitCode: 0, output: "", error: null, finishedAt: 1 };
      },
    });
    expect(() => requestRestart({ backendId: "gb10-a", operator: "alice", now: 1000 }, d)).toThrow(/cannot record the restart/);
    expect(listRestartEvents(h.db, { backendId: "gb10-a" })).toEqual([]);
    expect(ran).toBe(false);
  });
});

describe("the watcher's flush", () => {
  it("writes a transition and its notification together; a failed write keeps both queued and retries both", () => {
    const store = new WatchStore(h.db, undefined, () => {});
    let fail = true;
    store.enqueueTransition({ kind: "backend", targetId: "gb10-a", at: 5000, fromState: "stalled", toState: "stuck", reasons: stuck.reasons });
    store.enqueueAfter(() => {
      if (fail) throw new Error("database is locked");
      outbox.write({ event: "stuck", backendId: "gb10-a", state: "stuck", previousState: "stalled", reasons: stuck.reasons, at: 5000 });
    });
    expect(store.flush()).toBe(false);
    expect(lastTransition(h.db, "backend", "gb10-a")).toBeUndefined(); // rolled back with the notification
    expect(recentNotifications(h.db)).toEqual([]);
    expect(store.storageError).toMatch(/database is locked/);

    fail = false;
    expect(store.flush()).toBe(true);
    expect(lastTransition(h.db, "backend", "gb10-a")?.toState).toBe("stuck");
    expect(recentNotifications(h.db).map((n) => n.event)).toEqual(["stuck"]);
    expect(store.queued).toBe(0);
  });
});
