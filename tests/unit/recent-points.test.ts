/** The sparkline's ring (lib/watcher/recent.ts): the newest RECENT_POINTS, oldest first, nulls kept. */
import { describe, expect, it } from "vitest";
import { RECENT_POINTS, RecentPoints } from "../../lib/watcher/recent";

describe("RecentPoints", () => {
  it("gives back what was pushed, oldest first, with nulls", () => {
    const r = new RecentPoints();
    r.push(1_764_000_000_000, 3, null);
    r.push(1_764_000_005_000, null, 12.5);
    expect(r.length).toBe(2);
    expect(r.map((p) => p)).toEqual([
      [1_764_000_000_000, 3, null],
      [1_764_000_005_000, null, 12.5],
    ]);
  });

  it("keeps only the newest RECENT_POINTS once it wraps", () => {
    const r = new RecentPoints();
    const n = RECENT_POINTS * 2 + 7;
    for (let i = 0; i < n; i++) r.push(i, i % 3 === 0 ? null : i, i / 2);
    const got = r.map(([at, running, gen]) => [at, running, gen]);
    const want = Array.from({ length: RECENT_POINTS }, (_, k) => n - RECENT_POINTS + k).map((i) => [i, i % 3 === 0 ? null : i, i / 2]);
    expect(got).toEqual(want);
  });

  it("is empty before the first point", () => {
    expect(new RecentPoints().map((p) => p)).toEqual([]);
  });
});
