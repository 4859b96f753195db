import { describe, expect, it } from "vitest";
import type { Reading, Reason } from "@/lib/core/types";
import { classify } from "@/lib/check/classify";
import { historyWindowMs, MAX_HISTORY_READINGS, trimHistory } from "@/lib/watcher/history";

const METRICS = { processStartTime: 1, running: 0, waiting: 0, steps: 1, promptTokens: 1, generationTokens: 1, finishedRequests: 1, kvCacheUsage: 0, models: [] };
const r = (at: number): Reading => ({ at, latencyMs: 1, outcome: "ok", metrics: METRICS });
const refused = (at: number): Reading => ({ at, latencyMs: 1, outcome: "refused", metrics: null, health: { outcome: "refused" } });
const t = { stuckAfterSeconds: 10, idleProbeSeconds: 20 };

describe("the in-memory history window", () => {
  it("covers 3 x stuckAfterSeconds or 2 x idleProbeSeconds, whichever is longer", () => {
    expect(historyWindowMs(t)).toBe(40_000);
    expect(historyWindowMs({ stuckAfterSeconds: 120, idleProbeSeconds: 60 })).toBe(360_000);
  });

  it("covers startupGraceSeconds (plus stuckAfterSeconds), so 'refused for 10 min' can be seen", () => {
    expect(historyWindowMs({ stuckAfterSeconds: 120, idleProbeSeconds: 60, startupGraceSeconds: 600 })).toBe(720_000);
  });

  it("keeps the first reading of a run of refused reads past the count cap", () => {
    const reads = [r(0), ...Array.from({ length: 400 }, (_, i) => refused(1 + i))];
    const kept = trimHistory(reads, 401, { ...t, startupGraceSeconds: 600 });
    expect(kept).toHaveLength(MAX_HISTORY_READINGS + 1);
    expect(kept[0].at).toBe(1); // where the refusals began
    expect(kept.at(-1)!.at).toBe(400);
  });

  it("drops readings older than the window and keeps at most MAX_HISTORY_READINGS", () => {
    expect(trimHistory([r(0), r(10_000), r(50_000)], 50_000, t).map((x) => x.at)).toEqual([10_000, 50_000]);
    const many = Array.from({ length: 500 }, (_, i) => r(i));
    const kept = trimHistory(many, 500, t);
    expect(kept).toHaveLength(MAX_HISTORY_READINGS);
    expect(kept.at(-1)!.at).toBe(499);
    expect(trimHistory([r(0)], 1_000_000, t)).toEqual([]);
  });

  it("keeps the read a hang is measured from, so the evidence keeps growing past the window", () => {
    const m = (steps: number): Reading["metrics"] => ({
      processStartTime: 1000, running: 2, waiting: 0, steps, promptTokens: 50, generationTokens: 70, finishedRequests: 3, kvCacheUsage: 0.4, models: ["m"],
    });
    const thresholds = { ...t, recoveryTimeoutSeconds: 900 };
    let history: Reading[] = [];
    let reasons: Reason[] = [];
    // Progress until 20 s, then a hang read every 5 s for 15 minutes (the window is 40 s).
    for (let at = 0; at <= 920_000; at += 5000) {
      const reading: Reading = { at, latencyMs: 1, outcome: "ok", metrics: m(at <= 20_000 ? at / 1000 : 20) };
      const v = classify({ history, reading, thresholds, now: at });
      reasons = v.reasons;
      history = trimHistory([...history, reading], at, t);
    }
    expect(reasons[0]).toMatchObject({ rule: "no-progress", text: expect.stringMatching(/0 new steps in 900 s \(15 min\)/) });
    expect(history.length).toBeLessThan(20);
    // Progress again: the anchor is let go.
    const after = trimHistory([...history, { at: 925_000, latencyMs: 1, outcome: "ok", metrics: m(30) }], 925_000, t);
    expect(after[0].at).toBeGreaterThanOrEqual(925_000 - historyWindowMs(t));
  });
});
