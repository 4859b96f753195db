/** Outages and uptime read from a real SQLite file: the window's prior state, restart names, CSV. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { insertTransition } from "@/db/queries/readings";
import { insertMaintenance } from "@/db/queries/oncall";
import { restartEvents } from "@/db/schema";
import { outagesCsv } from "@/lib/api/exports";
import { outagesOf } from "@/lib/api/outages";
import { reason } from "@/lib/core/types";
import type { MaintenanceWindowConfig } from "@/lib/config";

let h: DbHandle;
let dir: string;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-outages-"));
  h = await openTestDb(path.join(dir, "t.db"));
});
afterEach(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const H = 3600_000;
const NOW = 100 * 24 * H;
const tr = (id: string, at: number, from: string | null, to: string, texts: string[] = []) =>
  insertTransition(h.db, { kind: "backend", targetId: id, at, fromState: from as never, toState: to as never, reasons: texts.map((t) => reason("unclassified", t)) });

describe("outages from the database", () => {
  it("finds an outage that began before the window, names restarts, and computes uptime", () => {
    tr("a", NOW - 40 * 24 * H, null, "idle");
    tr("a", NOW - 3 * H, "idle", "down", ["/metrics: connection refused on 2 reads"]);
    tr("a", NOW - 2 * H, "down", "starting");
    tr("a", NOW - 2 * H + 60_000, "starting", "idle");
    tr("a", NOW - H, "idle", "restarting");
    tr("a", NOW - H + 120_000, "restarting", "busy");
    tr("b", NOW - 10 * H, null, "idle");
    tr("b", NOW - 30 * 60_000, "idle", "stuck", ["2 running, 0 new steps in 130 s"]);
    h.db
      .insert(restartEvents)
      .values({ backendId: "a", requestedAt: NOW - H - 1000, requestedBy: "ana", note: "new weights", stateAtRequest: "idle", healthyAtRequest: true, evidence: { reasons: [], readings: [] }, action: "command: systemctl", outcome: "recovered" })
      .run();

    const r = outagesOf(h.db, ["a", "b"], NOW - 150 * 60_000, NOW, { now: NOW, unknownAfterSeconds: 120 });
    expect(r.outages.map((o) => [o.backendId, o.state, (NOW - o.start) / 60_000, o.end === null ? null : (NOW - o.end) / 60_000])).toEqual([
      ["b", "stuck", 30, null],
      ["a", "restarting", 60, 58],
      ["a", "down", 180, 119], // began before the window, seen whole
    ]);
    expect(r.outages[1].cause).toBe("restart asked for from stepwatch by ana (“new weights”)");
    expect(r.outages[0].durationSeconds).toBe(30 * 60);
    const a = r.uptime.find((u) => u.backendId === "a")!.uptime;
    // a: 61 + 2 minutes down in the last 24 h; watched for 40 days, so the 30-day window is whole.
    expect(a["24h"]).toBeCloseTo(100 * (1 - 63 / (24 * 60)), 6);
    expect(a["30d"]).toBeCloseTo(100 * (1 - 63 / (30 * 24 * 60)), 6);
    // b: watched for 10 hours only; 30 minutes stuck of them.
    expect(r.uptime.find((u) => u.backendId === "b")!.uptime["7d"]).toBeCloseTo(95, 6);

    const csv = outagesCsv(r.outages).split("\r\n");
    expect(csv[0]).toBe("backend,state,start_utc,end_utc,duration_seconds,cause,states,maintenance_seconds,in_maintenance,exited_not_restarted");
    expect(csv[1]).toMatch(/^b,stuck,\d{4}-\d\d-\d\dT[\d:.]+Z,ongoing,1800,"stuck: 2 running, 0 new steps in 130 s",stuck,0,no,no$/);
    expect(csv[2]).toMatch(/,restarting,0,no,no$/);
  });

  it("counts maintenance from the API's periods and the config's windows as planned, not downtime", () => {
    tr("a", NOW - 40 * 24 * H, null, "idle");
    tr("a", NOW - 3 * H, "idle", "down", ["refused"]);
    tr("a", NOW - 2 * H, "down", "idle");
    tr("b", NOW - 40 * 24 * H, null, "idle");
    tr("b", NOW - 5 * H, "idle", "down", ["refused"]);
    tr("b", NOW - 4 * H, "down", "idle");
    // a: maintenance from the API over its whole outage, ended early by an operator.
    insertMaintenance(h.db, { backendId: "a", startsAt: NOW - 3 * H - 60_000, endsAt: NOW + H, by: "ana", note: "driver upgrade", endedAt: NOW - 2 * H, endedBy: "ana" });
    // b: a one-off window from the config covering the first half of its outage.
    const windows: MaintenanceWindowConfig[] = [{ kind: "once", start: NOW - 5 * H, end: NOW - 4.5 * H, backends: ["b"], note: null }];
    const r = outagesOf(h.db, ["a", "b"], NOW - 24 * H, NOW, { now: NOW, unknownAfterSeconds: 120, maintenanceWindows: windows });
    const [a, b] = r.outages;
    expect([a.backendId, a.inMaintenance, a.maintenanceSeconds]).toEqual(["a", true, 3600]);
    expect([b.backendId, b.inMaintenance, b.maintenanceSeconds]).toEqual(["b", true, 1800]);
    const up = (id: string) => r.uptime.find((u) => u.backendId === id)!.uptime["24h"];
    // a: an hour of maintenance left out of the day, nothing down outside it.
    expect(up("a")).toBe(100);
    // b: half an hour planned; the other half hour down out of 23.5 watched hours.
    expect(up("b")).toBeCloseTo(100 * (1 - 0.5 / 23.5), 6);
  });
});
