/** Outages from recorded transitions: every episode, whoever caused it, and uptime over a window. */
import { describe, expect, it } from "vitest";
import type { TransitionDTO } from "@/lib/api/types";
import { deriveOutages, uptimePercent, withRestartCauses } from "@/lib/outages";

const s = 1000;
const tr = (atS: number, from: string | null, to: string, reason = ""): TransitionDTO => ({ at: atS * s, from, to, reasons: reason ? [{ rule: "unclassified", text: reason }] : [] });
const opts = { unknownAfterSeconds: 60, now: 10_000 * s };
const summary = (o: ReturnType<typeof deriveOutages>) => o.map((x) => [x.state, x.start / s, x.end === null ? null : x.end / s, x.durationSeconds]);

describe("outages", () => {
  it("keeps a crash that came back on its own (down, then a new process) as one outage with its cause", () => {
    const t = [tr(0, null, "unknown"), tr(5, "unknown", "idle"), tr(100, "idle", "down", "/metrics: connection refused on 2 reads"), tr(160, "down", "starting"), tr(200, "starting", "idle")];
    const o = deriveOutages("a", t, 0, 10_000 * s, opts);
    expect(summary(o)).toEqual([["down", 100, 200, 100]]);
    expect(o[0].cause).toBe("down: /metrics: connection refused on 2 reads");
  });
  it("sees a restart outside stepwatch (a new process while serving) as an outage", () => {
    const t = [tr(0, "busy", "starting", "new process: start time moved"), tr(30, "starting", "idle")];
    const o = deriveOutages("a", t, 0, 10_000 * s, opts);
    expect(summary(o)).toEqual([["starting", 0, 30, 30]]);
    expect(o[0].cause).toMatch(/^restarted outside stepwatch \(a new process while it was busy\)/);
  });
  it("keeps a stuck episode and a restart from stepwatch, naming who restarted", () => {
    const t = [tr(0, "busy", "stuck", "2 running, 0 new steps in 130 s"), tr(50, "stuck", "restarting"), tr(90, "restarting", "starting"), tr(120, "starting", "idle"), tr(500, "idle", "restarting"), tr(560, "restarting", "idle")];
    const o = withRestartCauses(deriveOutages("a", t, 0, 10_000 * s, opts), [
      { backendId: "a", requestedAt: 49 * s, requestedBy: "bo", note: null },
      { backendId: "a", requestedAt: 499 * s, requestedBy: "ana", note: "new weights" },
    ]);
    expect(summary(o)).toEqual([
      ["stuck", 0, 120, 120],
      ["restarting", 500, 560, 60],
    ]);
    expect(o[0].cause).toBe("stuck: 2 running, 0 new steps in 130 s; restart asked for from stepwatch by bo");
    expect(o[1].cause).toBe("restart asked for from stepwatch by ana (“new weights”)");
  });
  it("blames a restart on one outage only, not on a crash that follows it", () => {
    const t = [tr(100, "idle", "restarting"), tr(103, "restarting", "idle"), tr(108, "idle", "down", "refused"), tr(110, "down", "idle")];
    const o = withRestartCauses(deriveOutages("a", t, 0, 10_000 * s, opts), [{ backendId: "a", requestedAt: 99 * s, requestedBy: "ana", note: null }]);
    expect(o.map((x) => x.cause)).toEqual(["restart asked for from stepwatch by ana", "down: refused"]);
  });
  it("ignores a short unknown, keeps a long one, and leaves an outage going on open", () => {
    const t = [tr(0, "idle", "unknown"), tr(20, "unknown", "idle"), tr(100, "idle", "unknown"), tr(400, "unknown", "idle"), tr(9000, "idle", "down")];
    const o = deriveOutages("a", t, 0, 10_000 * s, opts);
    expect(summary(o)).toEqual([
      ["unknown", 100, 400, 300],
      ["down", 9000, null, 1000],
    ]);
  });
  it("never counts a first read, a stall or a server without metrics", () => {
    const t = [tr(0, null, "starting"), tr(3, "starting", "busy"), tr(10, "busy", "stalled"), tr(12, "stalled", "busy"), tr(20, "busy", "no-metrics")];
    expect(deriveOutages("a", t, 0, 10_000 * s, opts)).toEqual([]);
  });
  it("returns the outages that overlap the window, whole", () => {
    const t = [tr(100, "idle", "down"), tr(200, "down", "idle"), tr(300, "idle", "stuck"), tr(400, "stuck", "busy")];
    expect(summary(deriveOutages("a", t, 150 * s, 250 * s, opts))).toEqual([["down", 100, 200, 100]]);
    expect(deriveOutages("a", t, 210 * s, 290 * s, opts)).toEqual([]);
  });
  it("computes uptime over the watched part of a window", () => {
    const o = deriveOutages("a", [tr(100, "idle", "down"), tr(200, "down", "idle")], 0, 1000 * s, { ...opts, now: 1000 * s });
    expect(uptimePercent(o, 0, 0, 1000 * s, 1000 * s)).toBe(90);
    // Watched only since 500 s: the outage before does not count, nor the unwatched time.
    expect(uptimePercent(o, 500 * s, 0, 1000 * s, 1000 * s)).toBe(100);
    expect(uptimePercent(o, null, 0, 1000 * s, 1000 * s)).toBeNull();
  });
});
