/**
 * The reads that seed each monitor are drizzle queries prepared once per connection
 * (db/queries/readings.ts, db/queries/oncall.ts): a prepared query must answer each call's own values,
 * on its own connection, and see rows written after it was prepared.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { activeAcknowledgement, insertAcknowledgement, insertMaintenance, insertNotification, lastNotificationOf, openMaintenance } from "@/db/queries/oncall";
import { insertTransition, lastTransition } from "@/db/queries/readings";

let dir: string;
let a: DbHandle;
let b: DbHandle;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-seed-"));
  a = await openTestDb(path.join(dir, "a.db"));
  b = await openTestDb(path.join(dir, "b.db"));
});

afterEach(() => {
  a.close();
  b.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

let uid = 0;
const notify = (h: DbHandle, backendId: string, event: "stuck" | "down" | "recovered" | "restart-scheduled", at: number) =>
  insertNotification(h.db, { uid: `n${++uid}`, event, backendId, state: "stuck", reasons: [], at, details: { at } }, [], at);

describe("seed reads, prepared once per connection", () => {
  it("the newest notification of each event list, per backend, including rows written after the first read", () => {
    const problems: Array<"stuck" | "down" | "recovered"> = ["stuck", "down", "recovered"];
    expect(lastNotificationOf(a.db, "x", problems)).toBeUndefined();
    notify(a, "x", "stuck", 1000);
    notify(a, "x", "restart-scheduled", 2000);
    notify(a, "y", "down", 3000);
    expect(lastNotificationOf(a.db, "x", problems)?.at).toBe(1000);
    expect(lastNotificationOf(a.db, "x", ["restart-scheduled"])?.at).toBe(2000);
    expect(lastNotificationOf(a.db, "y", problems)?.event).toBe("down");
    expect(lastNotificationOf(a.db, "y", ["restart-scheduled"])).toBeUndefined();
    notify(a, "x", "recovered", 4000);
    expect(lastNotificationOf(a.db, "x", problems)?.event).toBe("recovered");
    // Another connection has its own statements and its own rows.
    expect(lastNotificationOf(b.db, "x", problems)).toBeUndefined();
    notify(b, "x", "down", 10);
    expect(lastNotificationOf(b.db, "x", problems)?.at).toBe(10);
    expect(lastNotificationOf(a.db, "x", problems)?.at).toBe(4000);
  });

  it("acknowledgements, maintenance and transitions answer each call's own values", () => {
    expect(activeAcknowledgement(a.db, "x")).toBeUndefined();
    insertAcknowledgement(a.db, { backendId: "x", at: 100, by: "alice", note: "on it", stateAtAck: "stuck" });
    expect(activeAcknowledgement(a.db, "x")?.by).toBe("alice");
    expect(activeAcknowledgement(a.db, "y")).toBeUndefined();
    expect(activeAcknowledgement(b.db, "x")).toBeUndefined();

    insertMaintenance(a.db, { backendId: "x", startsAt: 0, endsAt: 5000, by: "bob", note: null });
    expect(openMaintenance(a.db, "x", 1000).map((p) => p.by)).toEqual(["bob"]);
    expect(openMaintenance(a.db, "x", 6000)).toEqual([]); // the bound `now` is this call's
    expect(openMaintenance(a.db, "y", 1000)).toEqual([]);

    insertTransition(a.db, { kind: "backend", targetId: "x", at: 1, fromState: null, toState: "idle", reasons: [] });
    insertTransition(a.db, { kind: "proxy", targetId: "x", at: 2, fromState: null, toState: "up", reasons: [] });
    expect(lastTransition(a.db, "backend", "x")?.toState).toBe("idle");
    expect(lastTransition(a.db, "proxy", "x")?.toState).toBe("up");
    expect(lastTransition(b.db, "backend", "x")).toBeUndefined();
  });
});
