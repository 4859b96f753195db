/** Outages and uptime read from a real SQLite file: the window's prior state, restart names, CSV. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDb } from "@/db/client";
import { type DbHandle } from "@/db/types";
import { insertTransition } from "@/db/queries/readings";
import { restartEvents } from "@/db/schema";
import { outagesCsv } from "@/lib/api/exports";
import { outagesOf } from "@/lib/api/outages";
import { reason } from "@/lib/core/types";

let h: DbHandle;
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-outages-"));
  h = openDb(path.join(dir, "t.db"));
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
    expect(csv[0]).toBe("backend,state,start_utc,end_utc,duration_seconds,cause");
    expect(csv[1]).toMatch(/^b,stuck,\d{4}-\d\d-\d\dT[\d:.]+Z,ongoing,1800,"stuck: 2 running, 0 new steps in 130 s"$/);
  });
});
