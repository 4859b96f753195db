import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDb, type DbHandle } from "@/db/client";
import {
  applyRetention,
  historyPoints,
  insertRestartUnlessBlocked,
  insertSamples,
  insertTransition,
  lastRestartOf,
  lastTransition,
  listRestartEvents,
  pendingRestartOf,
  recentReadings,
  recordActionResult,
  resolveRestart,
  sampleRow,
  transitionsInRange,
  type NewSample,
} from "@/db/queries";
import { restartEvents } from "@/db/schema";
import type { BackendState } from "@/lib/check/states";
import type { Reading, Verdict } from "@/lib/check/types";

let h: DbHandle;
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-db-"));
  h = openDb(path.join(dir, "sub", "t.db"));
});
afterEach(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function reading(at: number, running = 1): Reading {
  return {
    at,
    latencyMs: 3,
    outcome: "ok",
    metrics: {
      processStartTime: 1000,
      running,
      waiting: 0,
      steps: at / 100,
      promptTokens: 0,
      generationTokens: 0,
      finishedRequests: 0,
      kvCacheUsage: 0.5,
      models: ["m"],
    },
  };
}
function verdict(state: BackendState, sps: number | null = 10): Verdict {
  return {
    state,
    health: "yes",
    healthy: true,
    restartRecommended: false,
    reasons: [],
    rates: { stepsPerSecond: sps, generationTokensPerSecond: sps, promptTokensPerSecond: null },
    basis: [],
  };
}
const sample = (id: string, at: number, state: BackendState = "busy", running = 1, sps: number | null = 10): NewSample =>
  sampleRow(id, reading(at, running), verdict(state, sps));

function addRestart(backendId: string, requestedAt: number, outcome: "recovered" | null = null) {
  return h.db
    .insert(restartEvents)
    .values({
      backendId,
      requestedAt,
      requestedBy: "ana",
      stateAtRequest: "stuck",
      healthyAtRequest: false,
      evidence: { reasons: ["r"], readings: [] },
      action: "command: x",
      processStartTimeAtRequest: 1000,
      outcome,
    })
    .returning()
    .get();
}

describe("db", () => {
  it("opens in WAL with synchronous=NORMAL and the migrations applied", () => {
    expect(h.sqlite.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(h.sqlite.pragma("synchronous", { simple: true })).toBe(1);
    const tables = h.sqlite.prepare("SELECT name FROM sqlite_master WHERE type='table'").all().map((r: any) => r.name);
    expect(tables).toEqual(expect.arrayContaining(["samples", "sample_minutes", "transitions", "restart_events"]));
    h.close();
    h = openDb(path.join(dir, "sub", "t.db")); // re-applying migrations is a no-op
  });

  it("stores samples in a batch and gives back the readings of a window, oldest first", () => {
    insertSamples(h.db, [sample("a", 1000), sample("a", 2000), sample("b", 2500), sample("a", 3000), sample("a", 4000)]);
    expect(recentReadings(h.db, "a", 2000, 10).map((r) => r.at)).toEqual([2000, 3000, 4000]);
    expect(recentReadings(h.db, "a", 0, 2).map((r) => r.at)).toEqual([3000, 4000]);
    expect(recentReadings(h.db, "a", 0, 10)[0]).toEqual(reading(1000));
  });

  it("last transition per target and transitions in a range", () => {
    insertTransition(h.db, { kind: "backend", targetId: "a", at: 10, fromState: null, toState: "unknown", reasons: ["first read"] });
    insertTransition(h.db, { kind: "backend", targetId: "a", at: 20, fromState: "unknown", toState: "busy", reasons: ["progress"] });
    insertTransition(h.db, { kind: "proxy", targetId: "a", at: 30, fromState: null, toState: "up", reasons: [] });
    expect(lastTransition(h.db, "backend", "a")?.toState).toBe("busy");
    expect(lastTransition(h.db, "proxy", "a")?.toState).toBe("up");
    expect(lastTransition(h.db, "backend", "zz")).toBeUndefined();
    expect(transitionsInRange(h.db, "backend", "a", 15, 100).map((t) => t.reasons)).toEqual([["progress"]]);
  });

  it("restart events: newest first, filter, pending, resolved once", () => {
    const e1 = addRestart("a", 100, "recovered");
    const e2 = addRestart("a", 200);
    addRestart("b", 150);
    expect(listRestartEvents(h.db).map((e) => e.id)).toEqual([e2.id, 3, e1.id]);
    expect(listRestartEvents(h.db, { backendId: "a", limit: 1 }).map((e) => e.id)).toEqual([e2.id]);
    expect(pendingRestartOf(h.db, "a")?.id).toBe(e2.id);
    expect(lastRestartOf(h.db, "a")?.id).toBe(e2.id);
    expect(resolveRestart(h.db, e2.id, { outcome: "recovered", resolvedAt: 260, recoveredAt: 250, downtimeSeconds: 0.05, resolution: "new process serving" })).toBe(true);
    // A second resolution (the restart verb racing the watcher) changes nothing.
    expect(resolveRestart(h.db, e2.id, { outcome: "timed-out", resolvedAt: 999, resolution: "late" })).toBe(false);
    const row = listRestartEvents(h.db, { backendId: "a" })[0];
    expect(row).toMatchObject({ outcome: "recovered", recoveredAt: 250, downtimeSeconds: 0.05 });
    expect(pendingRestartOf(h.db, "a")).toBeUndefined();
  });

  it("insertRestartUnlessBlocked: inserts, then reports the pending one, then the cooldown; recordActionResult", () => {
    const ask = (at: number, by: string) => ({
      backendId: "b",
      requestedAt: at,
      requestedBy: by,
      note: null,
      state: "stuck" as const,
      healthy: false,
      running: 2,
      waiting: 0,
      processStartTime: 5,
      evidence: { reasons: ["r"], readings: [] },
      overrideCooldown: false,
      confirmedHealthy: false,
      action: "command: /bin/true",
    });
    const first = insertRestartUnlessBlocked(h.db, ask(1_000, "ana"), 0);
    if (!("inserted" in first)) throw new Error("the first restart was blocked");
    expect(first.inserted).toMatchObject({ backendId: "b", requestedBy: "ana", runningAtRequest: 2, healthyAtRequest: false, outcome: null });
    expect(first.inserted.evidence).toEqual({ reasons: ["r"], readings: [] });

    const pending = insertRestartUnlessBlocked(h.db, ask(2_000, "bo"), null);
    expect(pending).toEqual({ blocked: { reason: "pending", event: expect.objectContaining({ id: first.inserted.id, requestedBy: "ana" }) } });

    recordActionResult(h.db, first.inserted.id, { exitCode: 0, output: "ok", error: null, finishedAt: 1_500 }, null);
    expect(pendingRestartOf(h.db, "b")).toMatchObject({ commandExitCode: 0, commandOutput: "ok", commandFinishedAt: 1_500 });
    resolveRestart(h.db, first.inserted.id, { outcome: "recovered", resolvedAt: 3_000, resolution: "back" });

    // Inside the cooldown (asked after cooldownStart): blocked; with an override (null): inserted.
    const cooling = insertRestartUnlessBlocked(h.db, ask(4_000, "bo"), 999);
    expect(cooling).toEqual({ blocked: { reason: "cooldown", event: expect.objectContaining({ id: first.inserted.id }) } });
    expect(insertRestartUnlessBlocked(h.db, ask(4_000, "bo"), 1_000)).toHaveProperty("inserted");

    const second = pendingRestartOf(h.db, "b")!;
    recordActionResult(h.db, second.id, { exitCode: 1, output: "", error: "exit 1", finishedAt: 4_100 }, { resolution: "failed: exit 1" });
    expect(lastRestartOf(h.db, "b")).toMatchObject({ id: second.id, commandExitCode: 1, outcome: "failed", resolvedAt: 4_100, resolution: "failed: exit 1" });
    expect(listRestartEvents(h.db)).toHaveLength(2);
  });

  it("history: raw readings for short ranges, minute buckets for long ones", () => {
    const t0 = Date.UTC(2025, 0, 1);
    const rows: NewSample[] = [];
    for (let i = 0; i < 120; i++) rows.push(sample("a", t0 + i * 30_000, i === 5 ? "stuck" : "busy", i % 2 ? 2 : 4));
    insertSamples(h.db, rows);
    const raw = historyPoints(h.db, "a", t0, t0 + 3600_000);
    expect(raw.resolution).toBe("raw");
    expect(raw.points).toHaveLength(120);
    const long = historyPoints(h.db, "a", t0 - 86_400_000, t0 + 3600_000);
    expect(long.resolution).toBe("minute");
    expect(long.points).toHaveLength(60);
    expect(long.points[0]).toMatchObject({ at: t0, running: 3 });
    expect(long.points[2].state).toBe("stuck"); // worst state of its minute
  });
});

describe("retention with an injected clock", () => {
  const HOUR = 3600_000;
  const DAY = 24 * HOUR;
  const keep = { rawHours: 48, rollupDays: 90 };

  it("rolls raw samples older than rawHours into minutes, deletes them, and is idempotent", () => {
    const t0 = Date.UTC(2025, 0, 1);
    // 4 samples in minute 0 (one stalled), 2 in minute 1; then a recent one.
    insertSamples(h.db, [
      sample("a", t0 + 1000, "busy", 2, 10),
      sample("a", t0 + 16_000, "stalled", 4, 0),
      sample("a", t0 + 31_000, "busy", 2, 20),
      sample("a", t0 + 46_000, "busy", 4, 10),
      sample("a", t0 + 61_000, "idle", 0, null),
      sample("a", t0 + 91_000, "idle", 0, null),
      sample("b", t0 + 5000, "down", 0, null),
    ]);
    insertTransition(h.db, { kind: "backend", targetId: "a", at: t0, fromState: null, toState: "busy", reasons: [] });
    const e = addRestart("a", t0);
    insertSamples(h.db, [sample("a", t0 + 3 * DAY)]);

    let now = t0 + 47 * HOUR;
    expect(applyRetention(h.db, { now, ...keep })).toEqual({ rolledMinutes: 0, deletedSamples: 0, deletedRollups: 0 });
    now = t0 + 49 * HOUR; // days pass in milliseconds
    const r = applyRetention(h.db, { now, ...keep });
    expect(r.deletedSamples).toBe(7);
    expect(r.rolledMinutes).toBe(3);
    const minutes = h.sqlite.prepare("SELECT * FROM sample_minutes ORDER BY backend_id, minute").all() as any[];
    expect(minutes).toEqual([
      expect.objectContaining({ backend_id: "a", minute: t0, n: 4, running_avg: 3, running_max: 4, steps_per_second: 10, worst_state: "stalled" }),
      expect.objectContaining({ backend_id: "a", minute: t0 + 60_000, n: 2, running_avg: 0, steps_per_second: null, worst_state: "idle" }),
      expect.objectContaining({ backend_id: "b", minute: t0, n: 1, worst_state: "down" }),
    ]);
    // Again: nothing changes.
    expect(applyRetention(h.db, { now, ...keep })).toEqual({ rolledMinutes: 0, deletedSamples: 0, deletedRollups: 0 });
    expect(h.sqlite.prepare("SELECT n FROM sample_minutes WHERE backend_id='a' AND minute=?").get(t0)).toEqual({ n: 4 });

    // A late write into an already-folded minute is merged by weight, not lost nor double-counted.
    insertSamples(h.db, [sample("a", t0 + 2000, "busy", 7, 10)]);
    applyRetention(h.db, { now, ...keep });
    expect(h.sqlite.prepare("SELECT n, running_avg, running_max FROM sample_minutes WHERE backend_id='a' AND minute=?").get(t0)).toEqual({
      n: 5,
      running_avg: (3 * 4 + 7) / 5,
      running_max: 7,
    });

    // The long-range history still covers the rolled minutes.
    const hist = historyPoints(h.db, "a", t0 - DAY, t0 + 4 * DAY);
    expect(hist.resolution).toBe("minute");
    expect(hist.points.length).toBeGreaterThan(0);

    // 91 days later the rollups go too; transitions and restart events stay.
    now = t0 + 91 * DAY;
    const r2 = applyRetention(h.db, { now, ...keep });
    expect(r2.deletedRollups).toBe(3);
    expect(r2.deletedSamples).toBe(1);
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM sample_minutes WHERE minute < ?").get(now - 90 * DAY)).toEqual({ c: 0 });
    expect(lastTransition(h.db, "backend", "a")?.toState).toBe("busy");
    expect(listRestartEvents(h.db).map((x) => x.id)).toEqual([e.id]);
  });

  it("a configurable window: rawHours 1 keeps only the last hour raw", () => {
    const t0 = Date.UTC(2025, 0, 1);
    insertSamples(h.db, Array.from({ length: 180 }, (_, i) => sample("a", t0 + i * 60_000)));
    applyRetention(h.db, { now: t0 + 180 * 60_000, rawHours: 1, rollupDays: 1 });
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples").get()).toEqual({ c: 60 });
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM sample_minutes").get()).toEqual({ c: 120 });
  });
});
