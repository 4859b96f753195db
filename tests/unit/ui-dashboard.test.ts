/** The dashboard's pure helpers for fleet-size views, the folded timeline, chart text and hover. */
import { describe, expect, it } from "vitest";
import type { FleetBackend, TransitionDTO } from "@/lib/api/types";
import { chartText, markerNear, parseWindow, seriesText, sparklineText, type Marker } from "@/lib/ui/chart";
import { attentionTitle, filterFleet, fleetQueryString, groupByModel, parseFleetQuery, sortFleet, EMPTY_QUERY } from "@/lib/ui/fleet";
import { formatAxisNumber } from "@/lib/core/format";
import { collapseBlips, filterTransitions } from "@/lib/ui/timeline";

const be = (id: string, state: FleetBackend["state"], extra: Partial<FleetBackend> & { engine?: string } = {}): FleetBackend =>
  ({
    id,
    url: `http://10.0.0.1/${id}`,
    model: null,
    state,
    since: 1000,
    restartRecommended: state === "stuck" || state === "down",
    ...extra,
  }) as FleetBackend;

describe("fleet views", () => {
  const fleet = [
    be("a", "idle", { model: "llama" }),
    be("b", "stuck", { model: "qwen", since: 5000 }),
    be("c", "busy", { model: "llama", engine: "vllm" }),
    be("d", "down", { model: "qwen", since: 2000 }),
    // A "watch" state between the problems and the healthy (stalled, one read without progress, is no
    // verdict yet and stays among the healthy: tests/unit/ui-fleet-scale.test.ts).
    be("e", "restarting", { engine: "sglang" }),
  ];
  it("sorts what needs attention first, the oldest problem first, then by name", () => {
    expect(sortFleet(fleet, "attention").map((b) => b.id)).toEqual(["d", "b", "e", "a", "c"]);
    expect(sortFleet(fleet, "name").map((b) => b.id)).toEqual(["a", "b", "c", "d", "e"]);
  });
  it("searches id, model, URL and engine, and filters by state, engine and model", () => {
    expect(filterFleet(fleet, { ...EMPTY_QUERY, q: "QWEN" }).map((b) => b.id)).toEqual(["b", "d"]);
    expect(filterFleet(fleet, { ...EMPTY_QUERY, q: "sglang" }).map((b) => b.id)).toEqual(["e"]);
    expect(filterFleet(fleet, { ...EMPTY_QUERY, state: "attention" }).map((b) => b.id)).toEqual(["b", "d", "e"]);
    expect(filterFleet(fleet, { ...EMPTY_QUERY, state: "busy" }).map((b) => b.id)).toEqual(["c"]);
    expect(filterFleet(fleet, { ...EMPTY_QUERY, engine: "vllm" }).map((b) => b.id)).toEqual(["c"]);
    expect(filterFleet(fleet, { ...EMPTY_QUERY, model: "llama" }).map((b) => b.id)).toEqual(["a", "c"]);
  });
  it("groups by model in the order of each group's most urgent member", () => {
    const groups = groupByModel(sortFleet(fleet, "attention"));
    expect(groups.map((g) => [g.model, g.backends.map((b) => b.id)])).toEqual([
      ["qwen", ["d", "b"]],
      [null, ["e"]],
      ["llama", ["a", "c"]],
    ]);
  });
  it("round-trips the view through the URL, defaults left out, garbage ignored", () => {
    const q = { ...EMPTY_QUERY, q: "gb", state: "stuck" as const, group: true, sort: "name" as const };
    const s = fleetQueryString(q);
    expect(s).toBe("?q=gb&state=stuck&sort=name&group=model");
    expect(parseFleetQuery(new URLSearchParams(s))).toEqual(q);
    expect(fleetQueryString(EMPTY_QUERY)).toBe("");
    expect(parseFleetQuery(new URLSearchParams("state=nonsense&sort=x"))).toEqual(EMPTY_QUERY);
  });
  it("counts what needs attention in the tab title", () => {
    expect(attentionTitle([be("a", "stuck"), be("b", "stuck"), be("c", "idle")])).toBe("2 stuck · stepwatch");
    expect(attentionTitle([be("a", "stuck"), be("b", "down"), be("c", "down")])).toBe("2 down, 1 stuck · stepwatch");
    // A stall that resolves on the next read does not make the title flicker.
    expect(attentionTitle([be("a", "stalled"), be("b", "busy")])).toBe("stepwatch");
  });
});

describe("timeline", () => {
  const tr = (at: number, from: string | null, to: string): TransitionDTO => ({ at: at * 1000, from, to, reasons: [] });
  it("folds a run of short stalls during long prefills into one entry, keeps real changes", () => {
    const t = [tr(0, null, "idle"), tr(10, "idle", "busy"), tr(50, "busy", "stalled"), tr(52, "stalled", "busy"), tr(100, "busy", "stalled"), tr(105, "stalled", "busy"), tr(200, "busy", "stalled"), tr(400, "stalled", "stuck")];
    const e = collapseBlips(t, 60);
    expect(e.map((x) => (x.kind === "change" ? `${x.transition.from}>${x.transition.to}` : `blips ${x.base}/${x.visited} x${x.count} ${x.longestSeconds}s`))).toEqual([
      "null>idle",
      "idle>busy",
      "blips busy/stalled x2 5s",
      "busy>stalled",
      "stalled>stuck",
    ]);
  });
  it("never folds a short visit to down, stuck or a restart, nor a long stall", () => {
    expect(collapseBlips([tr(0, "busy", "down"), tr(5, "down", "busy")], 60).every((x) => x.kind === "change")).toBe(true);
    expect(collapseBlips([tr(0, "idle", "restarting"), tr(3, "restarting", "idle")], 60).every((x) => x.kind === "change")).toBe(true);
    expect(collapseBlips([tr(0, "busy", "starting"), tr(3, "starting", "busy")], 60).every((x) => x.kind === "change")).toBe(true);
    expect(collapseBlips([tr(0, "busy", "stalled"), tr(90, "stalled", "busy")], 60).every((x) => x.kind === "change")).toBe(true);
  });
  it("filters by a state entered or left", () => {
    const t = [tr(0, "idle", "busy"), tr(1, "busy", "stuck"), tr(2, "stuck", "restarting")];
    expect(filterTransitions(t, "stuck").map((x) => x.at)).toEqual([1000, 2000]);
    expect(filterTransitions(t, "")).toHaveLength(3);
  });
});

describe("charts", () => {
  it("writes y ticks short, so an axis never clips them", () => {
    expect([formatAxisNumber(10_000), formatAxisNumber(1500), formatAxisNumber(12.345), formatAxisNumber(0.25), formatAxisNumber(null)]).toEqual(["10K", "1.5K", "12.3", "0.25", ""]);
  });
  it("describes charts in words (their text alternative)", () => {
    expect(seriesText("running", [1, null, 4, 2], String)).toBe("running: now 2, peak 4, mean 2.3333333333333335");
    expect(seriesText("running", [null], String)).toBe("running: no data");
    expect(chartText("gb10-a: steps", [0, 600], [{ label: "steps/s", values: [1, 3], format: String }], 2)).toBe(
      "gb10-a: steps over 10 min. steps/s: now 3, peak 3, mean 2. 2 marked events (listed under State changes and Restarts).",
    );
    expect(sparklineText("a", [[0, 60], [1, 2], [10, 20]])).toContain("generation tokens/s: now 20");
  });
  it("finds the marker under the cursor, the nearest within reach", () => {
    const m = (x: number): Marker => ({ x, kind: "state", label: "stuck", detail: "" });
    const ms = [m(10), m(12), m(30)];
    expect(markerNear(ms, 11.6, (x) => x, 5)?.x).toBe(12);
    expect(markerNear(ms, 20, (x) => x, 5)).toBeNull();
  });
  it("reads a fixed window from the URL only when it is one", () => {
    expect(parseWindow("1000", "2000")).toEqual({ from: 1000, to: 2000 });
    expect(parseWindow("2000", "1000")).toBeNull();
    expect(parseWindow("1e3", "2000")).toBeNull();
    expect(parseWindow(null, "2000")).toBeNull();
  });
});
