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
  it("starts at the first failed read: the unknown a refused read records before down, not the end of the grace", () => {
    // One refused read is unknown (one-failed-read), the second down (down-grace: no restart
    // recommended yet); past startupGraceSeconds the state stays down, so nothing new is recorded.
    const t = [tr(0, null, "idle"), tr(100, "idle", "unknown", "connection refused; one failed read is not \"down\""), tr(105, "unknown", "down", "down for 5 s; may be loading weights"), tr(800, "down", "idle")];
    const o = deriveOutages("a", t, 0, 10_000 * s, opts);
    expect(summary(o)).toEqual([["down", 100, 800, 700]]);
    expect(o[0].states).toEqual(["down", "unknown"]);
    expect(o[0].cause).toBe("down: down for 5 s; may be loading weights");
  });
  it.each([
    // vLLM's engine core died and the API server exited 0: Restart=on-failure never restarts it;
    // an operator restarts it from stepwatch 15 minutes later.
    { name: "down past the grace, then restarted from stepwatch", t: [tr(0, null, "idle"), tr(100, "idle", "unknown"), tr(105, "unknown", "down"), tr(1000, "down", "restarting"), tr(1200, "restarting", "idle")], exited: true },
    // Measured from the first refused read: 600 s after it, not after the read that made it down.
    { name: "back by its supervisor just inside the grace", t: [tr(0, null, "idle"), tr(100, "idle", "unknown"), tr(105, "unknown", "down"), tr(699, "down", "starting"), tr(720, "starting", "idle")], exited: false },
    { name: "back by its supervisor only after the grace", t: [tr(0, null, "idle"), tr(100, "idle", "unknown"), tr(105, "unknown", "down"), tr(700, "down", "starting"), tr(720, "starting", "idle")], exited: true },
    { name: "still down past the grace, the outage open", t: [tr(0, null, "idle"), tr(9000, "idle", "down")], exited: true },
    { name: "still down inside the grace", t: [tr(0, null, "idle"), tr(9500, "idle", "down")], exited: false },
    { name: "a stuck server restarted is never an exit", t: [tr(0, null, "busy"), tr(100, "busy", "stuck"), tr(2000, "stuck", "restarting"), tr(2100, "restarting", "idle")], exited: false },
  ])("names a silent exit: $name", ({ t, exited }) => {
    const [o] = deriveOutages("a", t, 0, 10_000 * s, { ...opts, graceSeconds: 600 });
    expect(o.exitedNotRestarted).toBe(exited);
    if (exited) expect(o.cause).toContain("exited and was not restarted within startupGraceSeconds (600 s)");
    else expect(o.cause).not.toContain("exited");
    // Without a grace given, nothing is named so.
    expect(deriveOutages("a", t, 0, 10_000 * s, opts)[0].exitedNotRestarted).toBe(false);
  });
  it("starts a stuck at the stall before it: no progress since that read", () => {
    const t = [tr(0, null, "busy"), tr(100, "busy", "stalled"), tr(160, "stalled", "stuck", "2 running, 0 new steps in 130 s"), tr(400, "stuck", "busy")];
    expect(summary(deriveOutages("a", t, 0, 10_000 * s, opts))).toEqual([["stuck", 100, 400, 300]]);
  });
  it("names a mixed outage by its worst state and lists the others; a 12-minute stuck restarted is stuck, not down", () => {
    const t = [
      tr(0, null, "busy"),
      tr(100, "busy", "stuck", "2 running, 0 new steps in 130 s"),
      tr(820, "stuck", "restarting"),
      tr(830, "restarting", "down", "refused while it loads"),
      tr(860, "down", "starting"),
      tr(900, "starting", "idle"),
    ];
    const o = deriveOutages("a", t, 0, 10_000 * s, opts);
    expect(summary(o)).toEqual([["stuck", 100, 900, 800]]);
    expect(o[0].states).toEqual(["stuck", "down", "restarting", "starting"]);
    const plain = deriveOutages("a", [tr(0, "busy", "stuck"), tr(50, "stuck", "restarting"), tr(60, "restarting", "starting"), tr(90, "starting", "idle")], 0, 10_000 * s, opts);
    expect(plain[0].states).toEqual(["stuck", "restarting", "starting"]);
  });
  it("keeps maintenance apart: an outage inside it is labelled so and is not downtime", () => {
    const now = 1000 * s;
    const maintenance = [{ start: 200 * s, end: 500 * s }];
    // Down 300..400 inside maintenance; down 600..700 outside; down 450..550 half in.
    const t = [tr(0, null, "idle"), tr(300, "idle", "down"), tr(400, "down", "idle"), tr(450, "idle", "down"), tr(550, "down", "idle"), tr(600, "idle", "down"), tr(700, "down", "idle")];
    const o = deriveOutages("a", t, 0, now, { ...opts, now, maintenance });
    expect(o.map((x) => [x.start / s, x.inMaintenance, x.maintenanceSeconds, x.durationSeconds])).toEqual([
      [300, true, 100, 100],
      [450, true, 50, 100],
      [600, false, 0, 100],
    ]);
    // Watched 1000 s less 300 s of maintenance; down outside it 50 + 100 s.
    expect(uptimePercent(o, 0, 0, now, now, maintenance)).toBeCloseTo((100 * (700 - 150)) / 700, 9);
    // Without the maintenance the same outages are 300 s of 1000.
    expect(uptimePercent(o, 0, 0, now, now)).toBe(70);
    // Overlapping periods are counted once.
    expect(uptimePercent(o, 0, 0, now, now, [...maintenance, { start: 250 * s, end: 500 * s }])).toBeCloseTo((100 * (700 - 150)) / 700, 9);
  });
  it("computes uptime over the watched part of a window", () => {
    const o = deriveOutages("a", [tr(100, "idle", "down"), tr(200, "down", "idle")], 0, 1000 * s, { ...opts, now: 1000 * s });
    expect(uptimePercent(o, 0, 0, 1000 * s, 1000 * s)).toBe(90);
    // Watched only since 500 s: the outage before does not count, nor the unwatched time.
    expect(uptimePercent(o, 500 * s, 0, 1000 * s, 1000 * s)).toBe(100);
    expect(uptimePercent(o, null, 0, 1000 * s, 1000 * s)).toBeNull();
  });
});
