import { describe, expect, it } from "vitest";
import { scheduleLags } from "@/bench/load";

describe("scheduleLags (bench/load.ts): how late reads started against their grid", () => {
  it("reads exactly on the grid have no lag, whatever the grid's origin", () => {
    const starts = [1_000_123, 1_005_123, 1_010_123, 1_015_123];
    expect(scheduleLags(starts, 5000).map((r) => r.lagMs)).toEqual([0, 0, 0, 0]);
  });

  it("a late read is measured against the most punctual one, even when the first seen was late", () => {
    // Grid at ...000; the first read seen was 40 ms late, one 7 ms late, one on time.
    const starts = [10_040, 15_007, 20_000, 25_250];
    expect(scheduleLags(starts, 5000)).toEqual([
      { at: 10_040, lagMs: 40 },
      { at: 15_007, lagMs: 7 },
      { at: 20_000, lagMs: 0 },
      { at: 25_250, lagMs: 250 },
    ]);
  });

  it("skipped slots stay on the grid; duplicates and order do not matter", () => {
    const starts = [30_010, 10_000, 10_000, 45_000];
    expect(scheduleLags(starts, 5000)).toEqual([
      { at: 10_000, lagMs: 0 },
      { at: 30_010, lagMs: 10 },
      { at: 45_000, lagMs: 0 },
    ]);
  });

  it("no reads, no lags", () => {
    expect(scheduleLags([], 5000)).toEqual([]);
  });
});
