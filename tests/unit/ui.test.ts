import { describe, expect, it } from "vitest";
import type { RestartEventDTO } from "@/lib/api/types";
import type { HistoryPoint } from "@/lib/core/history";
import { toColumns } from "@/lib/core/history";
import { parseRange, rangeMs, seriesMax, toHistorySeries, toMarkers, toSparkline, typicalStepMs } from "@/lib/ui/chart";
import { formatAgo, formatCount, formatDateTime, formatDuration, formatPercent, formatRate, formatTick, truncate, zoneName } from "@/lib/core/format";
import { STATE_TONE, inFlightWarning, needsTypedConfirmation } from "@/lib/ui/state";
import { BACKEND_STATES, STATE_INFO, isHealthy, restartRecommended, type BackendState } from "@/lib/core/states";

const pt = (at: number, running: number | null, kv: number | null = 0.5): HistoryPoint => ({
  at,
  running,
  waiting: 0,
  stepsPerSecond: 10,
  generationTokensPerSecond: 100,
  promptTokensPerSecond: 5,
  kvCacheUsage: kv,
  state: "busy",
});

describe("format", () => {
  it("formats rates, percents, counts and durations", () => {
    expect([formatRate(null), formatRate(0), formatRate(0.456), formatRate(8), formatRate(12.34), formatRate(126.4), formatRate(1234), formatRate(12345)]).toEqual([
      "—", "0", "0.46", "8.0", "12.3", "126", "1.2k", "12k",
    ]);
    expect([formatPercent(0.374), formatPercent(0.004), formatPercent(null)]).toEqual(["37%", "0.4%", "—"]);
    expect([formatCount(12), formatCount(2.25), formatCount(undefined)]).toEqual(["12", "2.3", "—"]);
    expect([formatDuration(45), formatDuration(200), formatDuration(7500), formatDuration(3 * 86400 + 4 * 3600)]).toEqual([
      "45 s", "3 min 20 s", "2 h 5 min", "3 d 4 h",
    ]);
    expect([formatAgo(1000, 1500), formatAgo(0, 12_000), formatAgo(0, 330_000), formatAgo(null, 0)]).toEqual([
      "just now", "12 s ago", "5 min ago", "—",
    ]);
  });
  it("writes every moment one way, naming its zone, and truncates long text visibly", () => {
    const at = Date.UTC(2025, 2, 4, 14, 5, 9);
    expect(formatDateTime(at)).toBe("2025-03-04 14:05:09 UTC");
    expect(formatDateTime(at, "UTC")).toBe("2025-03-04 14:05:09 UTC");
    expect(formatDateTime(at, "Asia/Tokyo")).toBe("2025-03-04 23:05:09 GMT+9");
    // New York is on standard time in March before the 9th, on daylight time in July.
    expect(formatDateTime(at, "America/New_York")).toBe("2025-03-04 09:05:09 EST");
    expect(formatDateTime(Date.UTC(2025, 6, 1, 0, 0, 0), "America/New_York")).toBe("2025-06-30 20:00:00 EDT");
    expect(formatDateTime(null)).toBe("—");
    expect(zoneName(at, "UTC")).toBe("UTC");
    // "local" is the runtime's own zone, in the same one format.
    expect(formatDateTime(at, "local")).toMatch(/^2025-03-0[45] \d\d:\d\d:09 \S+$/);
    expect([formatTick(at, 3600, "UTC"), formatTick(at, 30, "UTC"), formatTick(at, 86_400, "Asia/Tokyo")]).toEqual(["14:05", "14:05:09", "03-04"]);
    expect(truncate("abcdef", 3)).toBe("abc… (3 more characters)");
    expect(truncate("abc", 3)).toBe("abc");
    expect(truncate(null, 3)).toBe("");
  });
});

describe("state presentation", () => {
  it("a badge's tone says the state's health, and typed confirmation is asked only when healthy", () => {
    // (That every state has a tone is the compiler's job: STATE_TONE is a Record<BackendState, Tone>.)
    // Green exactly for the healthy states, red exactly where a restart is recommended, grey
    // exactly where the state cannot be judged; everything else (watch) is amber or blue.
    const tones = (pick: (s: BackendState) => boolean) => BACKEND_STATES.filter(pick);
    expect(tones((s) => STATE_TONE[s] === "ok")).toEqual(tones(isHealthy));
    expect(tones((s) => STATE_TONE[s] === "bad")).toEqual(tones(restartRecommended));
    expect(tones((s) => STATE_TONE[s] === "muted")).toEqual(tones((s) => STATE_INFO[s].health === "unknown"));
    expect(tones((s) => STATE_TONE[s] === "warn" || STATE_TONE[s] === "info")).toEqual(tones((s) => STATE_INFO[s].health === "watch"));
    expect(BACKEND_STATES.filter(needsTypedConfirmation)).toEqual(["idle", "busy", "sleeping"]);
  });
  it("says how many in-flight requests a restart will fail", () => {
    expect(inFlightWarning(2, 1)).toBe("2 running and 1 waiting requests will fail.");
    expect(inFlightWarning(1, 0)).toBe("1 running request will fail.");
    expect(inFlightWarning(0, 0)).toBe("No requests are in flight right now.");
    expect(inFlightWarning(null, null)).toMatch(/not known/);
  });
});

describe("chart shaping", () => {
  it("parses ranges with a default", () => {
    expect(parseRange("24h")).toBe("24h");
    expect(parseRange("bogus")).toBe("1h");
    expect(rangeMs("15m")).toBe(900_000);
  });
  it("aligns series in seconds and converts KV-cache to percent", () => {
    const s = toHistorySeries(toColumns([pt(10_000, 2, 0.25), pt(5_000, 1, null)]));
    expect(s.x).toEqual([5, 10]);
    expect(s.running).toEqual([1, 2]);
    expect(s.kvCachePercent).toEqual([null, 25]);
    expect(s.generationTokensPerSecond).toEqual([100, 100]);
  });
  it("breaks the line where readings are missing instead of bridging the gap", () => {
    const pts = [0, 5, 10, 15, 60, 65].map((t) => pt(t * 1000, 1));
    expect(typicalStepMs(pts.map((p) => p.at))).toBe(5000);
    const s = toHistorySeries(toColumns(pts));
    expect(s.x).toEqual([0, 5, 10, 15, 20, 60, 65]);
    expect(s.running).toEqual([1, 1, 1, 1, null, 1, 1]);
    expect(s.x.length).toBe(s.kvCachePercent.length);
  });
  it("handles empty and single-point history", () => {
    expect(toHistorySeries(toColumns([])).x).toEqual([]);
    expect(toHistorySeries(toColumns([pt(1000, 3)])).running).toEqual([3]);
  });
  it("marks restarts and state changes inside the range, in time order", () => {
    const restart = {
      requestedAt: 30_000,
      requestedBy: "ana",
      note: "hung",
      action: "command: systemctl",
      stateAtRequest: "stuck",
      evidence: { reasons: [{ rule: "no-progress", text: "2 running, 0 new steps in 134 s" }], readings: [] },
      outcome: "recovered",
    } as unknown as RestartEventDTO;
    const ms = toMarkers(
      [
        { at: 20_000, from: "busy", to: "stuck", reasons: [{ rule: "no-progress", text: "0 new steps in 130 s" }] },
        { at: 40_000, from: "stuck", to: "restarting", reasons: [] },
        { at: 99_000, from: "a", to: "idle", reasons: [] },
        { at: 25_000, from: "up", to: "down", reasons: [] }, // a proxy-only state word is still a backend state here
      ],
      [restart],
      10_000,
      50_000,
    );
    expect(ms.map((m) => [m.x, m.kind, m.label])).toEqual([
      [20, "state", "stuck"],
      [25, "state", "down"],
      [30, "restart", "restart by ana"],
      [40, "state", "restarting"],
    ]);
    // The hover text: what the state change was and why; who restarted, why, and how it ended.
    expect(ms[0].detail).toBe("busy → stuck: 0 new steps in 130 s");
    expect(ms[2].detail).toBe("asked by ana (command: systemctl); note: hung; stuck at the request; 2 running, 0 new steps in 134 s; outcome: recovered");
  });
  it("shapes the sparkline and finds a shared maximum", () => {
    const [x, running, gen] = toSparkline([
      [2000, 1, 10],
      [1000, null, 5],
    ]);
    expect(x).toEqual([1, 2]);
    expect(running).toEqual([null, 1]);
    expect(gen).toEqual([5, 10]);
    expect(seriesMax([running, gen])).toBe(10);
    expect(seriesMax([[null]], 1)).toBe(1);
  });
});
