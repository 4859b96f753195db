/**
 * Availability from progress, read from a real SQLite file: per backend and period, the time in
 * each state (maintenance apart) adds up to the period, time before stepwatch first saw a backend
 * is `unknown`, restarts are told apart by who caused them, and the mean time to recover is the
 * outages' (lib/outages.ts).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { insertTransition } from "@/db/queries/readings";
import { insertMaintenance } from "@/db/queries/oncall";
import { insertProcessStart } from "@/db/queries/processes";
import { restartEvents } from "@/db/schema";
import { availabilityOf } from "@/lib/api/availability";
import { availabilityCsv } from "@/lib/api/exports";
import { periodsBetween, timeInStates } from "@/lib/outages";
import { BACKEND_STATES } from "@/lib/core/states";
import { reason } from "@/lib/core/types";

let h: DbHandle;
let dir: string;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-availability-"));
  h = await openTestDb(path.join(dir, "a.db"));
});
afterEach(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const M = 60_000;
const H = 60 * M;
const DAY = 24 * H;
const D0 = Date.UTC(2026, 11, 1); // a Tuesday
const tr = (id: string, at: number, from: string | null, to: string) =>
  insertTransition(h.db, { kind: "backend", targetId: id, at, fromState: from as never, toState: to as never, reasons: [reason("unclassified", to)] });
const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

describe("availability", () => {
  it("a day adds up to the day: states and maintenance, unknown before the first transition; restarts by whom; mean time to recover", () => {
    // Watched from 01:00 (before: unknown). Busy and idle, a crash its supervisor brought back, a
    // silent exit restarted from stepwatch, and an hour of maintenance.
    tr("gb10", D0 + 1 * H, null, "idle");
    tr("gb10", D0 + 2 * H, "idle", "busy");
    tr("gb10", D0 + 5 * H, "busy", "stalled");
    tr("gb10", D0 + 5 * H + 1 * M, "stalled", "stuck");
    tr("gb10", D0 + 5 * H + 10 * M, "stuck", "restarting");
    tr("gb10", D0 + 5 * H + 12 * M, "restarting", "idle");
    tr("gb10", D0 + 8 * H, "idle", "down");
    tr("gb10", D0 + 8 * H + 2 * M, "down", "starting");
    tr("gb10", D0 + 8 * H + 4 * M, "starting", "busy");
    tr("gb10", D0 + 12 * H, "busy", "sleeping");
    tr("gb10", D0 + 14 * H, "sleeping", "idle");
    tr("gb10", D0 + 20 * H, "idle", "down");
    tr("gb10", D0 + 22 * H, "down", "restarting");
    tr("gb10", D0 + 22 * H + 6 * M, "restarting", "idle");
    tr("gb10", D0 + DAY + H, "idle", "busy"); // the next day: not in this one
    insertMaintenance(h.db, { backendId: "gb10", startsAt: D0 + 16 * H, endsAt: D0 + 17 * H, by: "ana", note: "driver", endedAt: null, endedBy: null });
    const restart = (at: number) =>
      h.db.insert(restartEvents).values({ backendId: "gb10", requestedAt: at, requestedBy: "ana", note: null, stateAtRequest: "stuck", healthyAtRequest: false, evidence: { reasons: [], readings: [] }, action: "command: systemctl", outcome: "recovered" }).run();
    restart(D0 + 5 * H + 10 * M - 1000);
    restart(D0 + 22 * H - 1000);
    insertProcessStart(h.db, { backendId: "gb10", at: D0 + 5 * H + 11 * M, processStartTime: null, restartId: 1, byStepwatch: true });
    insertProcessStart(h.db, { backendId: "gb10", at: D0 + 8 * H + 2 * M, processStartTime: null, restartId: null, byStepwatch: false });
    insertProcessStart(h.db, { backendId: "gb10", at: D0 + 22 * H + 5 * M, processStartTime: null, restartId: 2, byStepwatch: true });

    const r = availabilityOf(h.db, ["gb10"], { from: D0, to: D0 + DAY, period: "day" }, { now: D0 + 10 * DAY, unknownAfterSeconds: 120, graceSeconds: 600 });
    expect(r.rows).toHaveLength(1);
    const [day] = r.rows;
    expect(day.seconds).toBe(86_400);
    // The day adds up to the day.
    expect(sum(day.states) + day.maintenanceSeconds).toBeCloseTo(86_400, 6);
    expect(day.maintenanceSeconds).toBe(3600);
    expect(day.states).toMatchObject({
      unknown: 3600,
      busy: 3 * 3600 + (12 * 3600 - (8 * 3600 + 4 * 60)),
      stalled: 60,
      stuck: 9 * 60,
      restarting: 2 * 60 + 6 * 60,
      starting: 2 * 60,
      down: 2 * 60 + 2 * 3600,
      sleeping: 2 * 3600,
    });
    expect(day.restartsByStepwatch).toBe(2);
    expect(day.restartsByOthers).toBe(1);
    // Three outages ended this day: stuck 12 min (from the stall to idle), down 4 min, down 2 h 6 min.
    expect(day.recoveries).toBe(3);
    expect(day.meanTimeToRecoverSeconds).toBeCloseTo((12 * 60 + 4 * 60 + (2 * 3600 + 6 * 60)) / 3, 6);
    expect(day.availablePercent).toBeGreaterThan(0);
    expect(day.availablePercent).toBeLessThan(100);

    const csv = availabilityCsv(r.rows).split("\r\n");
    expect(csv[0]).toBe(
      `backend,start_utc,end_utc,seconds,${BACKEND_STATES.map((s) => `${s.replace("-", "_")}_seconds`).join(",")},maintenance_seconds,available_percent,restarts_by_stepwatch,restarts_by_others,recoveries,mean_time_to_recover_seconds`,
    );
    expect(csv[1]).toMatch(/^gb10,2026-12-01T00:00:00.000Z,2026-12-02T00:00:00.000Z,86400,/);
  });

  it("every period of a week adds up, a period still going on ends now, and a backend never seen is all unknown", () => {
    tr("a", D0 - 3 * DAY, null, "idle");
    tr("a", D0 + 3 * H, "idle", "busy");
    const now = D0 + 2 * DAY + 5 * H;
    const r = availabilityOf(h.db, ["a", "never"], { from: D0 - 7 * DAY, to: D0 + 7 * DAY, period: "day" }, { now, unknownAfterSeconds: 120 });
    expect(r.to).toBe(now);
    for (const row of r.rows) expect(sum(row.states) + row.maintenanceSeconds, `${row.backendId} ${row.start}`).toBeCloseTo(row.seconds, 6);
    const a = r.rows.filter((x) => x.backendId === "a");
    expect(a).toHaveLength(10);
    expect(a.at(-1)).toMatchObject({ start: D0 + 2 * DAY, end: now, seconds: 5 * 3600 });
    expect(a[0].states.unknown).toBe(86_400); // before stepwatch first saw it
    expect(r.rows.filter((x) => x.backendId === "never").every((x) => x.states.unknown === x.seconds && x.availablePercent === 0)).toBe(true);
  });

  it("cuts UTC days, ISO weeks from Monday and calendar months", () => {
    expect(periodsBetween(D0 + H, D0 + 2 * DAY, "day")).toEqual([
      { start: D0 + H, end: D0 + DAY },
      { start: D0 + DAY, end: D0 + 2 * DAY },
    ]);
    const monday = Date.UTC(2026, 10, 30);
    expect(periodsBetween(D0, D0 + 10 * DAY, "week")).toEqual([
      { start: D0, end: monday + 7 * DAY },
      { start: monday + 7 * DAY, end: D0 + 10 * DAY },
    ]);
    expect(periodsBetween(Date.UTC(2026, 0, 15), Date.UTC(2026, 2, 2), "month").map((p) => new Date(p.start).toISOString().slice(0, 10))).toEqual(["2026-01-15", "2026-02-01", "2026-03-01"]);
  });

  it("a transition exactly at the period's start counts from there; one at its end belongs to the next", () => {
    const t = [
      { at: D0, from: null, to: "busy", reasons: [] },
      { at: D0 + DAY, from: "busy", to: "down", reasons: [] },
    ];
    expect(timeInStates(t, D0, D0 + DAY).states.busy).toBe(DAY);
    expect(timeInStates(t, D0, D0 + DAY).states.down).toBe(0);
  });
});
