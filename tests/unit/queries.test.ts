import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb, TEST_ENGINE } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { applyRetention, FOLD_AFTER_MS, historyPoints } from "@/db/queries/history";
import { insertRestartUnlessBlocked, lastRestartOf, latestRestartsOf, listRestartEvents, pendingRestartOf, recordActionResult, resolveRestart } from "@/db/queries/restarts";
import { insertSamples, insertTransition, lastTransition, recentReadings, sampleRow, transitionsInRange, type NewSample } from "@/db/queries/readings";
import { desc, eq } from "drizzle-orm";
import { restartEvents, samples } from "@/db/schema";
import type { BackendState } from "@/lib/core/states";
import { reason, type Reading, type Verdict } from "@/lib/core/types";
import { toRows } from "@/lib/core/history";
import type { HistoryColumns } from "@/lib/core/history";

const R = reason("no-progress-stuck", "r");

/** historyPoints' columns as one object per point. */
const pts = (r: { columns: HistoryColumns }) => toRows(r.columns);

let h: DbHandle;
let dir: string;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-db-"));
  h = await openTestDb(path.join(dir, "sub", "t.db"));
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
      evidence: { reasons: [R], readings: [] },
      action: "command: x",
      processStartTimeAtRequest: 1000,
      outcome,
    })
    .returning()
    .get();
}

describe("db", () => {
  it("opens with the migrations applied (SQLite: in WAL with synchronous=NORMAL)", async () => {
    if (TEST_ENGINE === "sqlite") {
      expect(h.sqlite.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(h.sqlite.pragma("synchronous", { simple: true })).toBe(1);
    }
    const listTables =
      TEST_ENGINE === "sqlite" ? "SELECT name FROM sqlite_master WHERE type='table'" : "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'";
    const tables = h.sqlite.prepare(listTables).all().map((r: any) => r.name);
    expect(tables).toEqual(expect.arrayContaining(["samples", "sample_minutes", "transitions", "restart_events"]));
    h.close();
    h = await openTestDb(path.join(dir, "sub", "t.db")); // re-applying migrations is a no-op
  });

  it("stores samples in a batch and gives back the readings of a window, oldest first", () => {
    insertSamples(h.db, [sample("a", 1000), sample("a", 2000), sample("b", 2500), sample("a", 3000), sample("a", 4000)]);
    expect(recentReadings(h.db, "a", 2000, 10).map((r) => r.at)).toEqual([2000, 3000, 4000]);
    expect(recentReadings(h.db, "a", 0, 2).map((r) => r.at)).toEqual([3000, 4000]);
    expect(recentReadings(h.db, "a", 0, 10)[0]).toEqual(reading(1000));
  });

  it("the prepared sample insert stores exactly what drizzle's own insert stores, column by column", () => {
    const probed = (ok: boolean): Reading => ({ ...reading(7000, 3), probe: { ok, at: 7001, latencyMs: 12.6, status: ok ? 200 : 504 } });
    const rows: NewSample[] = [
      sample("x", 5000),
      sampleRow("x", probed(true), verdict("idle", null)),
      sampleRow("x", { ...probed(false), error: "probe: HTTP 504" }, verdict("stalled", 0)),
      sampleRow("x", { at: 9000, latencyMs: 10.4, outcome: "refused", metrics: null, error: "connection refused", health: { outcome: "refused" } }, verdict("down", null)),
    ];
    insertSamples(h.db, rows);
    for (const r of rows) h.db.insert(samples).values({ ...r, backendId: "y" }).run();
    const strip = ({ id: _id, backendId: _b, ...rest }: typeof samples.$inferSelect) => rest;
    const ours = h.db.select().from(samples).where(eq(samples.backendId, "x")).orderBy(samples.id).all().map(strip);
    const drizzles = h.db.select().from(samples).where(eq(samples.backendId, "y")).orderBy(samples.id).all().map(strip);
    expect(ours).toEqual(drizzles);
    expect(ours.map((r) => r.probeOk)).toEqual([null, true, false, null]);
    // The raw stored values too (booleans as 1/0, the reading as JSON text).
    const raw = (b: string) => h.sqlite.prepare("SELECT * FROM samples WHERE backend_id = ? ORDER BY id").all(b).map((r: any) => ({ ...r, id: 0, backend_id: "" }));
    expect(raw("x")).toEqual(raw("y"));
  });

  it("stores a batch of more rows than one PostgreSQL statement takes parameters for (65535), each once and in order", () => {
    const rows = Array.from({ length: 2500 }, (_, i) => sample(`b${i % 7}`, 10_000 + i, "busy", i % 5, i));
    insertSamples(h.db, rows);
    const stored = h.sqlite.prepare("SELECT backend_id AS b, at, steps_per_second AS s FROM samples ORDER BY id").all();
    expect(stored).toEqual(rows.map((r) => ({ b: r.backendId, at: r.at, s: r.stepsPerSecond })));
  });

  it("the prepared lastRestartOf gives the same row as the unprepared query, across inserts and updates", () => {
    const unprepared = (b: string) => h.db.select().from(restartEvents).where(eq(restartEvents.backendId, b)).orderBy(desc(restartEvents.requestedAt), desc(restartEvents.id)).limit(1).get();
    expect(lastRestartOf(h.db, "a")).toBeUndefined();
    const e1 = addRestart("a", 100, "recovered");
    expect(lastRestartOf(h.db, "a")).toEqual(unprepared("a"));
    addRestart("b", 300);
    const e3 = addRestart("a", 200);
    expect(lastRestartOf(h.db, "a")).toEqual(unprepared("a"));
    expect(lastRestartOf(h.db, "a")?.id).toBe(e3.id);
    resolveRestart(h.db, e3.id, { outcome: "timed-out", resolvedAt: 900, resolution: "late" });
    expect(lastRestartOf(h.db, "a")).toEqual(unprepared("a"));
    expect(lastRestartOf(h.db, "a")).toMatchObject({ outcome: "timed-out", healthyAtRequest: false, evidence: { reasons: [R], readings: [] } });
    expect(lastRestartOf(h.db, "b")).toEqual(unprepared("b"));
    expect(e1.id).not.toBe(e3.id);
  });

  it("latestRestartsOf: every backend's newest event in one query, as lastRestartOf gives it (ties on the time: the later id)", () => {
    expect(latestRestartsOf(h.db).size).toBe(0);
    addRestart("a", 100, "recovered");
    addRestart("b", 300);
    const a2 = addRestart("a", 200, "recovered");
    const a3 = addRestart("a", 200); // same moment as a2: the later id is the newer, as in lastRestartOf
    addRestart("a", 50, "recovered"); // inserted later, asked earlier: not the newest
    const all = latestRestartsOf(h.db);
    expect([...all.keys()].sort()).toEqual(["a", "b"]);
    for (const b of ["a", "b"]) expect(all.get(b)).toEqual(lastRestartOf(h.db, b));
    expect(all.get("a")?.id).toBe(a3.id);
    expect(a2.id).not.toBe(a3.id);
    resolveRestart(h.db, a3.id, { outcome: "timed-out", resolvedAt: 900, resolution: "late" });
    expect(latestRestartsOf(h.db).get("a")).toMatchObject({ id: a3.id, outcome: "timed-out", evidence: { reasons: [R], readings: [] } });
  });

  it("last transition per target and transitions in a range", () => {
    insertTransition(h.db, { kind: "backend", targetId: "a", at: 10, fromState: null, toState: "unknown", reasons: [reason("first-read", "first read")] });
    insertTransition(h.db, { kind: "backend", targetId: "a", at: 20, fromState: "unknown", toState: "busy", reasons: [reason("progress", "progress")] });
    insertTransition(h.db, { kind: "proxy", targetId: "a", at: 30, fromState: null, toState: "up", reasons: [] });
    expect(lastTransition(h.db, "backend", "a")?.toState).toBe("busy");
    expect(lastTransition(h.db, "proxy", "a")?.toState).toBe("up");
    expect(lastTransition(h.db, "backend", "zz")).toBeUndefined();
    expect(transitionsInRange(h.db, "backend", "a", 15, 100).map((t) => t.reasons)).toEqual([[{ rule: "progress", text: "progress" }]]);
  });

  it("rows stored before reasons had rule ids read back as unclassified reasons, through every read", () => {
    // What an older stepwatch wrote: plain strings in the JSON columns (no migration rewrites them).
    const legacy = JSON.stringify(["2 running, 0 new steps in 134 s across 3 reads"]);
    const unclassified = [{ rule: "unclassified", text: "2 running, 0 new steps in 134 s across 3 reads" }];
    h.sqlite.prepare("INSERT INTO transitions (kind, target_id, at, from_state, to_state, reasons) VALUES ('backend', 'old', 10, 'stalled', 'stuck', ?)").run(legacy);
    h.sqlite
      .prepare(
        "INSERT INTO restart_events (backend_id, requested_at, requested_by, state_at_request, healthy_at_request, evidence, action) VALUES ('old', 20, 'ana', 'stuck', 0, ?, 'command: x')",
      )
      .run(JSON.stringify({ reasons: JSON.parse(legacy), readings: [{ at: 1 }] }));
    expect(lastTransition(h.db, "backend", "old")?.reasons).toEqual(unclassified);
    expect(transitionsInRange(h.db, "backend", "old", 0, 100)[0].reasons).toEqual(unclassified);
    expect(lastRestartOf(h.db, "old")?.evidence).toEqual({ reasons: unclassified, readings: [{ at: 1 }] });
    expect(listRestartEvents(h.db, { backendId: "old" })[0].evidence.reasons).toEqual(unclassified);
    // New rows keep their ids, mixed with old ones in one table.
    insertTransition(h.db, { kind: "backend", targetId: "old", at: 30, fromState: "stuck", toState: "busy", reasons: [reason("progress", "+5 steps in 5 s")] });
    expect(transitionsInRange(h.db, "backend", "old", 0, 100).map((t) => t.reasons[0].rule)).toEqual(["unclassified", "progress"]);
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
      evidence: { reasons: [R], readings: [] },
      overrideCooldown: false,
      confirmedHealthy: false,
      action: "command: /bin/true",
    });
    const first = insertRestartUnlessBlocked(h.db, ask(1_000, "ana"), 0);
    if (!("inserted" in first)) throw new Error("the first restart was blocked");
    expect(first.inserted).toMatchObject({ backendId: "b", requestedBy: "ana", runningAtRequest: 2, healthyAtRequest: false, outcome: null });
    expect(first.inserted.evidence).toEqual({ reasons: [R], readings: [] });

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
    expect(pts(raw)).toHaveLength(120);
    const long = historyPoints(h.db, "a", t0 - 86_400_000, t0 + 3600_000);
    expect(long.resolution).toBe("rollup");
    expect(long.bucketMs).toBe(60_000);
    expect(pts(long)).toHaveLength(60);
    expect(pts(long)[0]).toMatchObject({ at: t0, running: 3 });
    expect(pts(long)[2].state).toBe("stuck"); // worst state of its minute
  });
});

describe("retention with an injected clock", () => {
  const HOUR = 3600_000;
  const DAY = 24 * HOUR;
  const keep = { rawHours: 48, rollupDays: 90 };

  it("folds raw samples into minutes a few minutes after they are written, deletes them after rawHours, and is idempotent", () => {
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

    // A minute is folded once it is FOLD_AFTER_MS behind; until then its samples stay raw, unfolded.
    expect(applyRetention(h.db, { now: t0 + 60_000 + FOLD_AFTER_MS - 1, ...keep })).toEqual({ rolledMinutes: 0, deletedSamples: 0, deletedRollups: 0 });
    expect(applyRetention(h.db, { now: t0 + 60_000 + FOLD_AFTER_MS, ...keep })).toEqual({ rolledMinutes: 2, deletedSamples: 0, deletedRollups: 0 });
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples WHERE folded = 0").get()).toEqual({ c: 3 }); // minute 1 of a, and the t0 + 3 days one
    let now = t0 + 47 * HOUR;
    // Folded long before rawHours: every minute is in the rollups, and every raw sample still there.
    expect(applyRetention(h.db, { now, ...keep })).toEqual({ rolledMinutes: 1, deletedSamples: 0, deletedRollups: 0 });
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples WHERE folded = 1").get()).toEqual({ c: 7 });
    now = t0 + 49 * HOUR; // days pass in milliseconds
    const r = applyRetention(h.db, { now, ...keep });
    expect(r.deletedSamples).toBe(7);
    expect(r.rolledMinutes).toBe(0); // all of it was folded already
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
    expect(hist.resolution).toBe("rollup");
    expect(pts(hist).length).toBeGreaterThan(0);

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
    // Minutes 0..177 folded (the last two are under FOLD_AFTER_MS old): 120 of them no longer raw.
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM sample_minutes").get()).toEqual({ c: 178 });
  });

  it("a long-range history counts each sample once, folded or not: the same points before and after folding", () => {
    const t0 = Date.UTC(2025, 0, 1);
    const rows: NewSample[] = [];
    // Rates never null here: a rollup averages a rate over its non-null samples but weighs the minute
    // by all of them, so with nulls in a bucket the merge is close, not exact (as it always was).
    for (let i = 0; i < 720; i++) rows.push(sample("a", t0 + i * 10_000, i % 97 === 0 ? "stuck" : i % 3 ? "busy" : "idle", i % 5, (i % 11) + 1));
    insertSamples(h.db, rows);
    const range = [t0 - 7 * DAY, t0 + 2 * HOUR] as const;
    const before = historyPoints(h.db, "a", ...range);
    // Fold all but the last few minutes, then fold a late write into an old minute on top.
    const now = t0 + 7200_000 + 30_000;
    applyRetention(h.db, { now, ...keep });
    expect((h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples WHERE folded = 0").get() as { c: number }).c).toBeGreaterThan(0);
    const after = historyPoints(h.db, "a", ...range);
    expect(after.resolution).toBe("rollup");
    expect(after.bucketMs).toBe(600_000); // 7 days and 2 h: 10-minute windows
    expect(pts(after).length).toBe(pts(before).length);
    pts(after).forEach((p, i) => {
      const b = pts(before)[i];
      expect(p.at).toBe(b.at);
      expect(p.state).toBe(b.state);
      for (const k of ["running", "waiting", "stepsPerSecond", "generationTokensPerSecond", "kvCacheUsage"] as const) {
        if (b[k] === null) expect(p[k]).toBeNull();
        else expect(p[k]).toBeCloseTo(b[k]!, 9);
      }
    });
    insertSamples(h.db, [sample("a", t0 + 5000, "down", 9, 1)]);
    const late = historyPoints(h.db, "a", ...range);
    applyRetention(h.db, { now, ...keep });
    const lateFolded = historyPoints(h.db, "a", ...range);
    expect(pts(late)[0].state).toBe("down");
    expect(pts(lateFolded)[0]).toEqual(pts(late)[0]);
  });
});
