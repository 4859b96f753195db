import { describe, expect, it } from "vitest";
import type { Reading } from "@/lib/check/types";
import { historyWindowMs, MAX_HISTORY_READINGS, trimHistory } from "@/lib/watcher/history";

const r = (at: number): Reading => ({ at, latencyMs: 1, outcome: "ok", metrics: null });
const t = { stuckAfterSeconds: 10, idleProbeSeconds: 20 };

describe("the in-memory history window", () => {
  it("covers 3 x stuckAfterSeconds or 2 x idleProbeSeconds, whichever is longer", () => {
    expect(historyWindowMs(t)).toBe(40_000);
    expect(historyWindowMs({ stuckAfterSeconds: 120, idleProbeSeconds: 60 })).toBe(360_000);
  });

  it("drops readings older than the window and keeps at most MAX_HISTORY_READINGS", () => {
    expect(trimHistory([r(0), r(10_000), r(50_000)], 50_000, t).map((x) => x.at)).toEqual([10_000, 50_000]);
    const many = Array.from({ length: 500 }, (_, i) => r(i));
    const kept = trimHistory(many, 500, t);
    expect(kept).toHaveLength(MAX_HISTORY_READINGS);
    expect(kept.at(-1)!.at).toBe(499);
    expect(trimHistory([r(0)], 1_000_000, t)).toEqual([]);
  });
});
