/**
 * The history's wire form (lib/core/history.ts): `at`, each figure as spans of values (a null
 * column for a figure no point has), states as runs, three significant digits (integers exact),
 * and back to the same rows; and on a real SQLite file, historyOf's columns are historyPoints' rows.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openTestDb, TEST_ENGINE } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { historyPoints } from "@/db/queries/history";
import { insertSamples, sampleRow } from "@/db/queries/readings";
import { HISTORY_FIGURES, spanValues, threeDigits, toColumns, toRows } from "@/lib/core/history";
import { historyOf } from "@/lib/api/snapshot";
import { historyCsv } from "@/lib/api/exports";
import type { HistoryPoint } from "@/lib/core/history";
import type { Reading, Verdict } from "@/lib/core/types";
import type { HistoryColumns } from "@/lib/core/history";

/** historyPoints' columns as one object per point. */
const pts = (r: { columns: HistoryColumns }) => toRows(r.columns);

const empty = Object.fromEntries(HISTORY_FIGURES.map((f) => [f, null])) as Omit<HistoryPoint, "at" | "state">;
const pt = (at: number, state: HistoryPoint["state"], extra: Partial<HistoryPoint> = {}): HistoryPoint => ({ ...empty, at, state, ...extra });

describe("history columns", () => {
  it("columns, null columns, state runs, three digits; rows back", () => {
    const rows = [
      pt(1000, "busy", { running: 3, waiting: 1, stepsPerSecond: 12.34567, kvCacheUsage: 0.123456 }),
      pt(6000, "busy", { running: 2.6666667, waiting: 0, stepsPerSecond: 1234.5678, kvCacheUsage: null }),
      pt(11000, "idle", { running: 0, waiting: 0, stepsPerSecond: 0 }),
      pt(16000, "busy", { running: 12345, waiting: 0, stepsPerSecond: NaN }),
    ];
    const c = toColumns(rows);
    expect(c.at).toEqual([1000, 6000, 11000, 16000]);
    expect(c.state).toEqual([
      [0, "busy"],
      [2, "idle"],
      [3, "busy"],
    ]);
    expect(c.running).toEqual([[0, [3, 2.67, 0, 12345]]]);
    expect(c.stepsPerSecond).toEqual([[0, [12.3, 1230, 0, NaN]]]);
    expect(c.kvCacheUsage).toEqual([[0, [0.123]]]); // one value, then nothing: no nulls sent
    expect(c.ttftP50).toBeNull(); // no point has it: one null, not four
    for (const f of HISTORY_FIGURES) expect(c[f] === null || spanValues(c[f], 4).length === 4, f).toBe(true);

    const back = toRows(c);
    expect(back.map((r) => r.state)).toEqual(["busy", "busy", "idle", "busy"]);
    expect(back[1]).toMatchObject({ at: 6000, running: 2.67, stepsPerSecond: 1230, ttftP50: null });
    // exact: every digit (the CSV)
    expect(toRows(toColumns(rows, true))).toEqual(rows);
    expect(toColumns([])).toMatchObject({ at: [], state: [], running: null });
    expect(threeDigits(null)).toBeNull();
    expect(threeDigits(0.00012345)).toBe(0.000123);
  });

  it("a figure with gaps is one span per stretch of values, and reads back with nulls in the gaps", () => {
    const vals = [null, 1, 2, null, null, 3, null, 4];
    const rows = vals.map((v, i) => pt(1000 * i, "busy", { ttftP50: v }));
    const c = toColumns(rows, true);
    expect(c.ttftP50).toEqual([
      [1, [1, 2]],
      [5, [3]],
      [7, [4]],
    ]);
    expect(spanValues(c.ttftP50, vals.length)).toEqual(vals);
    expect(toRows(c).map((r) => r.ttftP50)).toEqual(vals);
    expect(spanValues(null, 3)).toEqual([null, null, null]);
  });

  // The page draws what spanValues gives: spans that overlap, go backwards or past the points
  // would put values at the wrong times, so they are refused, not drawn.
  it("refuses spans that do not fit the points", () => {
    expect(() => spanValues([[2, [1, 2]]], 3)).toThrow(/does not fit/); // past the end
    expect(() => spanValues([[0, [1, 2]], [1, [3]]], 5)).toThrow(/does not fit/); // overlap
    expect(() => spanValues([[3, [1]], [0, [2]]], 5)).toThrow(/does not fit/); // backwards
    expect(() => spanValues([[0.5, [1]]], 5)).toThrow(/does not fit/);
    expect(spanValues([[0, [1]], [1, [2]]], 2)).toEqual([1, 2]); // touching is fine
  });

  // Why spans: a week of 10-minute windows whose last one has vLLM's latency figures. As dense
  // columns each of those 14 figures was 1,008 nulls and a value (~5 KB each, 70 KB in all).
  it("a figure only the last point has costs one span, not a null per point", () => {
    const rows = Array.from({ length: 1008 }, (_, i) => pt(i * 600_000, "busy", { running: 1, ...(i === 1007 ? { ttftP50: 0.25, e2eP95: 2 } : {}) }));
    const c = toColumns(rows);
    expect(c.ttftP50).toEqual([[1007, [0.25]]]);
    expect(JSON.stringify(c.e2eP95)).toBe("[[1007,[2]]]");
    expect(toRows(c)[1006].ttftP50).toBeNull();
    expect(toRows(c)[1007].ttftP50).toBe(0.25);
  });
});

describe("historyOf on a real database", () => {
  let h: DbHandle | null = null;
  let dir = "";
  afterEach(() => {
    h?.close();
    h = null;
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("answers historyPoints' rows as columns (rounded), and the CSV with every digit", async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-hist-"));
    h = await openTestDb(path.join(dir, "h.db"));
    const reading = (at: number, running: number): Reading => ({
      at,
      latencyMs: 3,
      outcome: "ok",
      metrics: { processStartTime: 1, running, waiting: 0, steps: at, promptTokens: 0, generationTokens: at, finishedRequests: 0, kvCacheUsage: 0.123456, models: ["m"] },
    });
    const verdict = (state: Verdict["state"], gen: number): Verdict =>
      ({ state, healthy: true, reasons: [], restartRecommended: false, rates: { stepsPerSecond: gen, generationTokensPerSecond: gen, promptTokensPerSecond: null }, basis: [] }) as unknown as Verdict;
    insertSamples(h.db, [
      sampleRow("b", reading(1000, 2), verdict("busy", 10.987654)),
      sampleRow("b", reading(6000, 0), verdict("idle", 0)),
    ]);
    const rows = pts(historyPoints(h.db, "b", 0, 10_000));
    const r = historyOf(h.db, "b", 0, 10_000);
    expect(r.count).toBe(2);
    expect(r.columns.at).toEqual(rows.map((p) => p.at));
    expect(toRows(r.columns)).toEqual(toRows(toColumns(rows)));
    expect(r.columns.generationTokensPerSecond).toEqual([[0, [11, 0]]]);
    expect(r.columns.kvCacheUsage).toEqual([[0, [0.123, 0.123]]]);
    const csv = historyCsv(historyOf(h.db, "b", 0, 10_000, { exact: true }));
    expect(csv).toContain("10.987654");
    expect(csv).toContain("0.123456");
  });
  // historyPoints reads its points as one JSON text from SQLite (db/queries/history.ts pointRows): every
  // double must come back as stored, NULL as null, and the points in time order.
  it("gives back every stored double exactly, in time order, raw and from the rollups", async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-hist-"));
    h = await openTestDb(path.join(dir, "h.db"));
    const hard = [0.1 + 0.2, 1 / 3, 1e300, 5e-324, 123456789.12345679, 2 ** 53, 1e-7, 0.123456789012345678];
    const at0 = Date.UTC(2026, 0, 1);
    const samples = hard.map((x, i) => ({
      backendId: "b",
      at: at0 + (hard.length - i) * 5000, // written newest first
      state: i % 2 ? ("idle" as const) : ("busy" as const),
      outcome: "ok",
      latencyMs: 3,
      running: i,
      waiting: null,
      stepsPerSecond: x,
      generationTokensPerSecond: -x,
      promptTokensPerSecond: i === 3 ? null : x * 7,
      kvCacheUsage: Infinity,
      reading: { at: at0, latencyMs: 3, outcome: "ok" },
    }));
    insertSamples(h.db, samples as never);
    const raw = pts(historyPoints(h.db, "b", at0, at0 + 3600_000));
    const want = [...samples].sort((a, b) => a.at - b.at);
    expect(raw.map((p) => p.at)).toEqual(want.map((s) => s.at));
    expect(raw.map((p) => p.state)).toEqual(want.map((s) => s.state));
    expect(raw.map((p) => p.stepsPerSecond)).toEqual(want.map((s) => s.stepsPerSecond));
    expect(raw.map((p) => p.generationTokensPerSecond)).toEqual(want.map((s) => s.generationTokensPerSecond));
    expect(raw.map((p) => p.promptTokensPerSecond)).toEqual(want.map((s) => s.promptTokensPerSecond));
    expect(raw.map((p) => p.running)).toEqual(want.map((s) => s.running));
    expect(raw.map((p) => p.waiting)).toEqual(want.map(() => null));
    expect(raw.map((p) => p.kvCacheUsage)).toEqual(want.map(() => Infinity));
    // Past RAW_HISTORY_MAX_MS the rollup path answers (nothing folded yet: the raw rows bucketed),
    // one 10-minute bucket holding all eight readings: the means as SQLite's AVG gives them
    // (PostgreSQL's AVG of 1e300 overflows: there, the plain mean).
    const long = pts(historyPoints(h.db, "b", at0 - 7 * 86400_000, at0 + 3600_000));
    expect(long).toHaveLength(1);
    const mean = TEST_ENGINE === "sqlite" ? "AVG(steps_per_second)" : "SUM(steps_per_second) / COUNT(steps_per_second)";
    const avg = (h.sqlite.prepare(`SELECT ${mean} AS a FROM samples`).get() as { a: number }).a;
    expect(long[0].stepsPerSecond).toBe(avg);
    expect(long[0].state).toBe("busy");
  });
});
