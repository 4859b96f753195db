/**
 * The 10-minute and hourly windows (sample_rollups) on a real SQLite file: each window sums exactly
 * its minutes however the retention job reached them (folds in several passes, a late write, the
 * backfill of a database from before the table), a long range reads the finest level that fits
 * MAX_HISTORY_POINTS, and windows expire with the minutes.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { applyRetention, historyLevel, historyPoints, MAX_HISTORY_POINTS, ROLLUP_WIDTHS_MS } from "@/db/queries/history";
import { insertSamples, sampleRow, type NewSample } from "@/db/queries/readings";
import type { BackendState } from "@/lib/core/states";
import type { Reading, Verdict } from "@/lib/core/types";
import { toRows } from "@/lib/core/history";
import type { HistoryColumns } from "@/lib/core/history";

/** historyPoints' columns as one object per point. */
const pts = (r: { columns: HistoryColumns }) => toRows(r.columns);

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const keep = { rawHours: 48, rollupDays: 90 };
const t0 = Date.UTC(2026, 0, 5);

let h: DbHandle;
let dir: string;
let file: string;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-rollups-"));
  file = path.join(dir, "t.db");
  h = await openTestDb(file);
});
afterEach(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const STATES: BackendState[] = ["busy", "idle", "busy", "stalled", "busy", "down"];

/** A reading every 20 s from `start` for `minutes`, figures varying, some null (down, no latency). */
function series(id: string, start: number, minutes: number, seed: number): NewSample[] {
  const rows: NewSample[] = [];
  for (let i = 0; i < minutes * 3; i++) {
    const at = start + i * 20_000 + (seed % 7) * 1000;
    const state = STATES[(i * 7 + seed) % STATES.length];
    const down = state === "down";
    const reading: Reading = {
      at,
      latencyMs: 3,
      outcome: down ? "refused" : "ok",
      metrics: down
        ? undefined
        : { processStartTime: 1000, running: (i + seed) % 5, waiting: (i * 3) % 4, steps: at / 50, promptTokens: 0, generationTokens: 0, finishedRequests: 0, kvCacheUsage: ((i % 10) + 1) / 10, models: ["m"] },
    } as Reading;
    const verdict: Verdict = {
      state,
      health: "yes",
      healthy: !down,
      restartRecommended: false,
      reasons: [],
      rates: { stepsPerSecond: down ? null : 10 + (i % 13), generationTokensPerSecond: down ? null : 100 + i, promptTokensPerSecond: null },
      basis: [],
    };
    rows.push({ ...sampleRow(id, reading, verdict), ttftP50: i % 4 === 0 ? null : 0.1 + (i % 9) / 100, preemptionsPerSecond: i % 2 ? 0.5 : null });
  }
  return rows;
}

type MinuteRow = { backend_id: string; minute: number; n: number; running_avg: number | null; running_max: number | null; steps_per_second: number | null; ttft_p50: number | null; worst_state: string };
type WindowRow = { backend_id: string; width_ms: number; start: number; n: number; running_avg: number | null; running_max: number | null; steps_per_second: number | null; ttft_p50: number | null; worst_state: string };

const RANK: Record<string, number> = { idle: 1, sleeping: 2, busy: 3, unknown: 4, "no-metrics": 5, starting: 6, restarting: 7, stalled: 8, stuck: 9, down: 10 };

/** The windows the minutes make, computed here in JavaScript: the oracle sample_rollups must equal. */
function windowsFromMinutes(minutes: MinuteRow[], width: number) {
  const by = new Map<string, MinuteRow[]>();
  for (const m of minutes) {
    const k = `${m.backend_id}|${Math.floor(m.minute / width) * width}`;
    by.set(k, [...(by.get(k) ?? []), m]);
  }
  return [...by.entries()].map(([k, ms]) => {
    const [backend, start] = k.split("|");
    const n = ms.reduce((s, m) => s + m.n, 0);
    const nonNull = (f: (m: MinuteRow) => number | null) => ms.filter((m) => f(m) !== null);
    const weighted = (f: (m: MinuteRow) => number | null, byHaving: boolean) => {
      const have = nonNull(f);
      if (!have.length) return null;
      return have.reduce((s, m) => s + f(m)! * m.n, 0) / (byHaving ? have.reduce((s, m) => s + m.n, 0) : n);
    };
    return {
      key: k,
      backend,
      start: Number(start),
      n,
      running_avg: weighted((m) => m.running_avg, false),
      running_max: nonNull((m) => m.running_max).length ? Math.max(...nonNull((m) => m.running_max).map((m) => m.running_max!)) : null,
      steps_per_second: weighted((m) => m.steps_per_second, false),
      ttft_p50: weighted((m) => m.ttft_p50, true),
      worst_state: ms.reduce((w, m) => (RANK[m.worst_state] > RANK[w] ? m.worst_state : w), "idle"),
    };
  });
}

function expectWindowsMatchMinutes(): number {
  const minutes = h.sqlite.prepare("SELECT * FROM sample_minutes").all() as MinuteRow[];
  const windows = h.sqlite.prepare("SELECT * FROM sample_rollups").all() as WindowRow[];
  expect(minutes.length).toBeGreaterThan(0);
  let checked = 0;
  for (const w of ROLLUP_WIDTHS_MS) {
    const stored = new Map(windows.filter((r) => r.width_ms === w).map((r) => [`${r.backend_id}|${r.start}`, r]));
    const expected = windowsFromMinutes(minutes, w);
    expect([...stored.keys()].sort()).toEqual(expected.map((e) => e.key).sort());
    for (const e of expected) {
      const s = stored.get(e.key)!;
      expect(s.n).toBe(e.n);
      expect(s.worst_state).toBe(e.worst_state);
      expect(s.running_max).toBe(e.running_max);
      for (const f of ["running_avg", "steps_per_second", "ttft_p50"] as const) {
        if (e[f] === null) expect(s[f]).toBeNull();
        else expect(s[f]).toBeCloseTo(e[f]!, 9);
      }
      checked++;
    }
  }
  return checked;
}

describe("10-minute and hourly windows", () => {
  it("each window sums exactly its minutes, through folds in several passes and a late write", () => {
    insertSamples(h.db, [...series("a", t0, 150, 1), ...series("b", t0 + 7 * MIN, 100, 4)]);
    // Three passes, as the watcher's job runs every 10 minutes: windows are recomputed as their minutes fill.
    for (const now of [t0 + 33 * MIN, t0 + 61 * MIN + 5000, t0 + 200 * MIN]) applyRetention(h.db, { now, ...keep });
    expect((h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples WHERE folded = 0").get() as { c: number }).c).toBe(0);
    expect(expectWindowsMatchMinutes()).toBeGreaterThan(20);
    // A late write into an hour folded long ago: its minute merges it, and its windows follow.
    const nOf = (w: number, start: number) => (h.sqlite.prepare("SELECT n FROM sample_rollups WHERE backend_id = 'a' AND width_ms = ? AND start = ?").get(w, start) as { n: number }).n;
    expect([nOf(10 * MIN, t0 + 10 * MIN), nOf(HOUR, t0)]).toEqual([30, 180]);
    insertSamples(h.db, series("a", t0 + 12 * MIN + 500, 1, 5));
    applyRetention(h.db, { now: t0 + 210 * MIN, ...keep });
    expect([nOf(10 * MIN, t0 + 10 * MIN), nOf(HOUR, t0)]).toEqual([33, 183]);
    expectWindowsMatchMinutes();
    // Running the job again changes nothing.
    const before = h.sqlite.prepare("SELECT * FROM sample_rollups ORDER BY backend_id, width_ms, start").all();
    applyRetention(h.db, { now: t0 + 211 * MIN, ...keep });
    expect(h.sqlite.prepare("SELECT * FROM sample_rollups ORDER BY backend_id, width_ms, start").all()).toEqual(before);
  });

  it("a database from before the windows gets them at open, from its minutes", async () => {
    insertSamples(h.db, series("a", t0, 130, 2));
    applyRetention(h.db, { now: t0 + 200 * MIN, ...keep });
    const built = h.sqlite.prepare("SELECT * FROM sample_rollups ORDER BY backend_id, width_ms, start").all();
    expect(built.length).toBe(13 + 3); // 13 10-minute windows; 2 hours and a part
    h.sqlite.prepare("DELETE FROM sample_rollups").run(); // what the migration leaves: the table, empty
    h.close();
    h = await openTestDb(file);
    expect(h.sqlite.prepare("SELECT * FROM sample_rollups ORDER BY backend_id, width_ms, start").all()).toEqual(built);
    // A width added later (here: the hours gone) is filled alone, the other left as it is.
    h.sqlite.prepare("DELETE FROM sample_rollups WHERE width_ms = ?").run(HOUR);
    h.sqlite.prepare("UPDATE sample_rollups SET n = n + 1000 WHERE start = ?").run(t0);
    h.close();
    h = await openTestDb(file);
    const again = h.sqlite.prepare("SELECT width_ms, start, n FROM sample_rollups WHERE start = ? ORDER BY width_ms").all(t0);
    expect(again).toEqual([
      { width_ms: 10 * MIN, start: t0, n: 1030 },
      { width_ms: HOUR, start: t0, n: 180 },
    ]);
  });

  it("windows expire with the minutes: once the window's end is rollupDays old", () => {
    insertSamples(h.db, series("a", t0, 70, 3));
    applyRetention(h.db, { now: t0 + 80 * MIN, ...keep });
    const count = (w: number) => (h.sqlite.prepare("SELECT COUNT(*) AS c FROM sample_rollups WHERE width_ms = ?").get(w) as { c: number }).c;
    expect([count(10 * MIN), count(HOUR)]).toEqual([7, 2]);
    applyRetention(h.db, { now: t0 + 90 * DAY + 10 * MIN, ...keep });
    expect([count(10 * MIN), count(HOUR)]).toEqual([6, 2]); // the first hour ends at minute 60
    applyRetention(h.db, { now: t0 + 90 * DAY + 2 * HOUR, ...keep });
    expect([count(10 * MIN), count(HOUR)]).toEqual([0, 0]);
    expect((h.sqlite.prepare("SELECT COUNT(*) AS c FROM sample_minutes").get() as { c: number }).c).toBe(0);
  });
});

describe("which level a long range reads", () => {
  it("the finest whose windows keep the range within MAX_HISTORY_POINTS, then wider hours", () => {
    expect(historyLevel(24 * HOUR)).toEqual({ widthMs: MIN, bucketMs: MIN });
    expect(historyLevel(MAX_HISTORY_POINTS * MIN)).toEqual({ widthMs: MIN, bucketMs: MIN });
    expect(historyLevel(MAX_HISTORY_POINTS * MIN + 1)).toEqual({ widthMs: 10 * MIN, bucketMs: 10 * MIN });
    expect(historyLevel(7 * DAY)).toEqual({ widthMs: 10 * MIN, bucketMs: 10 * MIN });
    expect(historyLevel(30 * DAY)).toEqual({ widthMs: HOUR, bucketMs: HOUR });
    expect(historyLevel(90 * DAY)).toEqual({ widthMs: HOUR, bucketMs: 2 * HOUR });
  });

  it("a week: one point per 10-minute window, as the minutes make them, with the raw samples not folded yet merged in", () => {
    const end = t0 + 7 * DAY;
    insertSamples(h.db, [...series("a", t0 + 2 * HOUR, 90, 1), ...series("a", end - 30 * MIN, 30, 2)]);
    applyRetention(h.db, { now: end - 15 * MIN, ...keep }); // the last ~17 minutes stay raw, unfolded
    const unfolded = (h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples WHERE folded = 0").get() as { c: number }).c;
    expect(unfolded).toBeGreaterThan(0);
    const hist = historyPoints(h.db, "a", end - 7 * DAY, end);
    expect(hist).toMatchObject({ resolution: "rollup", bucketMs: 10 * MIN });
    // Oracle: the 10-minute windows of the minutes, plus the unfolded readings bucketed alike.
    const minutes = h.sqlite.prepare("SELECT * FROM sample_minutes").all() as MinuteRow[];
    const expected = new Map(windowsFromMinutes(minutes, 10 * MIN).map((w) => [w.start, w]));
    const raw = h.sqlite.prepare("SELECT at, running, state FROM samples WHERE folded = 0").all() as Array<{ at: number; running: number | null; state: string }>;
    const rawBy = new Map<number, typeof raw>();
    for (const r of raw) {
      const k = Math.floor(r.at / (10 * MIN)) * 10 * MIN;
      rawBy.set(k, [...(rawBy.get(k) ?? []), r]);
    }
    const starts = [...new Set([...expected.keys(), ...rawBy.keys()])].sort((x, y) => x - y);
    expect(pts(hist).map((p) => p.at)).toEqual(starts);
    for (const p of pts(hist)) {
      const w = expected.get(p.at);
      const rs = rawBy.get(p.at) ?? [];
      const rawRunning = rs.filter((r) => r.running !== null);
      const rawMean = rawRunning.length ? rawRunning.reduce((s, r) => s + r.running!, 0) / rawRunning.length : null;
      const worst = [w?.worst_state, ...rs.map((r) => r.state)].filter(Boolean).reduce((a, b) => (RANK[b!] > RANK[a!] ? b : a))!;
      expect(p.state).toBe(worst);
      const mean = w && rawMean !== null ? (w.running_avg! * w.n + rawMean * rs.length) / (w.n + rs.length) : (w?.running_avg ?? rawMean);
      if (mean === null) expect(p.running).toBeNull();
      else expect(p.running).toBeCloseTo(mean, 9);
    }
  });

  it("a day: one point per minute row, as stored", () => {
    insertSamples(h.db, series("a", t0, 45, 3));
    applyRetention(h.db, { now: t0 + 3 * HOUR, ...keep });
    const hist = historyPoints(h.db, "a", t0 - 20 * HOUR, t0 + 4 * HOUR);
    expect(hist).toMatchObject({ resolution: "rollup", bucketMs: MIN });
    const minutes = h.sqlite.prepare("SELECT minute, running_avg, worst_state FROM sample_minutes ORDER BY minute").all() as MinuteRow[];
    expect(minutes).toHaveLength(45);
    expect(pts(hist).map((p) => [p.at, p.running, p.state])).toEqual(minutes.map((m) => [m.minute, m.running_avg, m.worst_state]));
  });

  it("past the hourly level's reach, hours grouped into wider buckets", () => {
    insertSamples(h.db, series("a", t0, 180, 6));
    applyRetention(h.db, { now: t0 + 4 * HOUR, ...keep });
    const hours = h.sqlite.prepare("SELECT start, n, running_avg, worst_state FROM sample_rollups WHERE width_ms = ? ORDER BY start").all(HOUR) as WindowRow[];
    expect(hours).toHaveLength(3);
    const hist = historyPoints(h.db, "a", t0 - 120 * DAY, t0 + 10 * DAY);
    expect(hist.bucketMs).toBe(3 * HOUR);
    expect(pts(hist)).toHaveLength(1);
    const n = hours.reduce((s, r) => s + r.n, 0);
    expect(pts(hist)[0].running).toBeCloseTo(hours.reduce((s, r) => s + r.running_avg! * r.n, 0) / n, 9);
    expect(pts(hist)[0].state).toBe(hours.map((r) => r.worst_state).reduce((a, b) => (RANK[b] > RANK[a] ? b : a)));
  });
});
