/** vLLM latency figures: computed between two reads of one process, stored, served and rolled up. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { applyRetention, historyPoints } from "@/db/queries/history";
import { insertSamples, recentReadings, sampleRow } from "@/db/queries/readings";
import type { Reading, Verdict } from "@/lib/core/types";
import type { Histogram, VllmLatency } from "@/lib/core/latency";
import { dropOlderLatency, latencyOf } from "@/lib/watcher/latency";
import { toRows } from "@/lib/core/history";
import type { HistoryColumns } from "@/lib/core/history";

/** historyPoints' columns as one object per point. */
const pts = (r: { columns: HistoryColumns }) => toRows(r.columns);

const hist = (counts: number[]): Histogram => ({ buckets: [0.1, 0.5, 1, Infinity].map((b, i) => [b, counts[i]] as [number, number]), count: counts[3], sum: 0 });
const lat = (ttft: number[], stop: number, preempt: number): VllmLatency => ({ ttft: hist(ttft), itl: null, e2e: hist(ttft), queue: null, successByReason: { stop, length: 0, repetition: 1 }, preemptions: preempt });
const read = (at: number, start: number, latency?: VllmLatency): Reading => ({
  at,
  latencyMs: 2,
  outcome: "ok",
  metrics: { processStartTime: start, running: 1, waiting: 0, steps: at, promptTokens: 0, generationTokens: at, finishedRequests: 0, kvCacheUsage: 0.1, models: ["m"] },
  ...(latency ? { latency } : {}),
});
const verdict: Verdict = { state: "busy", health: "yes", healthy: true, restartRecommended: false, reasons: [], rates: { stepsPerSecond: 1, generationTokensPerSecond: 1, promptTokensPerSecond: 0 }, basis: [] };

describe("latency of a reading", () => {
  it("history keeps only the newest reading's histograms, and the next figures are the same", () => {
    const h = [read(0, 1000, lat([1, 1, 1, 1], 1, 0)), read(5000, 1000, lat([2, 2, 2, 2], 2, 0)), read(10_000, 1000, lat([3, 3, 4, 4], 3, 1)), read(15_000, 1000)];
    const next = read(20_000, 1000, lat([5, 5, 8, 8], 6, 1));
    const before = latencyOf(h, next);
    dropOlderLatency(h);
    expect(h.map((r) => r.latency !== undefined)).toEqual([false, false, true, false]);
    expect(latencyOf(h, next)).toEqual(before);
    expect(before.ttftP50).not.toBeNull();
  });


  it("comes from the deltas since the previous read of the same process", () => {
    const a = read(0, 1000, lat([10, 10, 10, 10], 5, 1));
    const b = read(10_000, 1000, lat([10, 10, 20, 20], 25, 3));
    const l = latencyOf([a], b);
    expect(l.ttftP50).toBeCloseTo(0.75, 9);
    expect(l.itlP50).toBeNull();
    expect(l.successStopPerSecond).toBe(2);
    expect(l.successOtherPerSecond).toBe(0);
    expect(l.preemptionsPerSecond).toBeCloseTo(0.2, 9);
  });
  it("is empty across a restart, on a first read, or without histograms", () => {
    const a = read(0, 1000, lat([10, 10, 10, 10], 5, 1));
    expect(latencyOf([a], read(10_000, 2000, lat([1, 1, 1, 1], 1, 0))).ttftP50).toBeNull();
    expect(latencyOf([], a).successStopPerSecond).toBeNull();
    expect(latencyOf([a], read(10_000, 1000)).ttftP95).toBeNull();
  });
});

describe("latency with the histograms asked once per latencyEverySeconds", () => {
  /** A read that asked only the lean filter: the counters, no histograms (lib/check/read.ts). */
  const lean = (stop: number, preempt: number): VllmLatency => ({ ttft: null, itl: null, e2e: null, queue: null, successByReason: { stop, length: 0 }, preemptions: preempt, histogramsAsked: false });

  it("a percentile is of the requests between two reads that asked the histograms, stored with the later one only; the counters' rates every read", () => {
    // Watched as the monitor does: latencyOf before the reading joins the history, then dropOlderLatency.
    const h: Reading[] = [];
    const samples = [];
    const reads = [
      read(0, 1000, lat([10, 10, 10, 10], 5, 1)),
      read(5000, 1000, lean(10, 1)),
      read(10_000, 1000, lean(15, 2)),
      read(15_000, 1000, lean(20, 2)),
      read(30_000, 1000, lat([10, 10, 20, 20], 35, 3)),
      read(35_000, 1000, lean(40, 3)),
    ];
    for (const r of reads) {
      samples.push(latencyOf(h, r));
      h.push(r);
      dropOlderLatency(h);
      // The last read that asked the histograms is kept until the next one: the next percentile is measured from it.
      expect(h.filter((x) => x.latency && x.latency.histogramsAsked !== false).length).toBe(1);
      expect(h.filter((x) => x.latency).length).toBeLessThanOrEqual(2);
    }
    // Between the reads at 0 and 30 s (deltas 0,0,10,10 over the 0.5-1 bucket), not an older figure carried forward.
    expect(samples.map((s) => s.ttftP50)).toEqual([null, null, null, null, expect.closeTo(0.75, 9), null]);
    expect(samples[4].e2eP95).not.toBeNull();
    // Finish reasons and preemptions are read every time: per second since the previous read.
    expect(samples.map((s) => s.successStopPerSecond)).toEqual([null, 1, 1, 1, 1, 1]);
    expect(samples[2].preemptionsPerSecond).toBeCloseTo(0.2, 9);
    expect(samples[4].preemptionsPerSecond).toBeCloseTo(1 / 15, 9);
  });

  it("a new process: no percentile measured across it, and none from a lean read of it", () => {
    const a = read(0, 1000, lat([10, 10, 10, 10], 5, 1));
    const restarted = read(5000, 2000, lean(1, 0));
    expect(latencyOf([a], restarted)).toMatchObject({ ttftP50: null, successStopPerSecond: null });
    // Its first histograms (the read after the restart asks them) measure nothing yet; the next ones do.
    const first = read(10_000, 2000, lat([1, 1, 1, 1], 2, 0));
    expect(latencyOf([a, restarted], first).ttftP50).toBeNull();
    expect(latencyOf([a, restarted, first], read(40_000, 2000, lat([1, 1, 5, 5], 9, 0))).ttftP50).not.toBeNull();
  });
});

let h: DbHandle;
let dir: string;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-lat-"));
  h = await openTestDb(path.join(dir, "t.db"));
});
afterEach(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("latency in SQLite", () => {
  it("is stored in columns, not in the reading JSON, and served raw and per minute after retention", () => {
    const t0 = Date.UTC(2026, 0, 1);
    const rows = [0, 10_000, 20_000].map((dt, i) => ({
      ...sampleRow("a", read(t0 + dt, 1000, lat([1, 1, 1, 1], 1, 1)), verdict),
      ttftP50: 0.2 + i * 0.1,
      successStopPerSecond: i === 1 ? null : 4,
    }));
    insertSamples(h.db, rows);
    expect(recentReadings(h.db, "a", 0, 10)[0].latency).toBeUndefined();
    const raw = pts(historyPoints(h.db, "a", t0 - 1, t0 + 60_000));
    expect(raw.map((p) => p.ttftP50)).toEqual([0.2, 0.30000000000000004, 0.4]);
    applyRetention(h.db, { now: t0 + 49 * 3600_000, rawHours: 48, rollupDays: 90 });
    const minute = pts(historyPoints(h.db, "a", t0 - 7 * 3600_000, t0 + 3600_000));
    expect(minute).toHaveLength(1);
    expect(minute[0].ttftP50).toBeCloseTo(0.3, 9);
    // The read without a figure does not pull the mean towards zero.
    expect(minute[0].successStopPerSecond).toBe(4);
    // A figure no minute of the range has is null (left out of the query, not averaged).
    expect(minute[0].queueP95).toBeNull();
    expect(Object.keys(minute[0]).sort()).toEqual(Object.keys(raw[0]).sort());
  });
});
