/** The fleet page's labels: the `?label=` filter and "group by" a label key (lib/ui/fleet.ts). */
import { describe, expect, it } from "vitest";
import type { FleetBackend } from "@/lib/api/types";
import { EMPTY_QUERY, filterFleet, firstScreenOf, fleetSections, fleetQueryString, groupByLabel, labelKeys, labelTexts, parseFleetQuery, parseLabelFilter, sortFleet } from "@/lib/ui/fleet";

const be = (id: string, state: FleetBackend["state"], labels: Record<string, string>, since = 1000): FleetBackend =>
  ({ id, url: `http://10.0.0.1/${id}`, model: null, state, since, restartRecommended: state === "stuck" || state === "down", labels }) as FleetBackend;

const fleet = [
  be("a", "idle", { site: "ams", gpu: "h100" }),
  be("b", "stuck", { site: "fra", gpu: "h100" }, 5000),
  be("c", "busy", { site: "ams", gpu: "a100", team: "search" }),
  be("d", "down", {}, 2000),
  be("e", "idle", { site: "fra", note: "rack:7" }),
];
const ids = (bs: FleetBackend[]) => bs.map((b) => b.id);

describe("label filter", () => {
  it("reads key:value at the first colon, and drops a key no config allows", () => {
    expect(parseLabelFilter("site:ams")).toEqual({ key: "site", value: "ams" });
    expect(parseLabelFilter("note:rack:7")).toEqual({ key: "note", value: "rack:7" });
    expect(parseLabelFilter("site")).toBeNull();
    expect(parseLabelFilter("Site:ams")).toBeNull();
  });

  it("keeps the backends carrying every label asked, and a search finds a label", () => {
    expect(ids(filterFleet(fleet, { ...EMPTY_QUERY, labels: [{ key: "site", value: "ams" }] }))).toEqual(["a", "c"]);
    expect(ids(filterFleet(fleet, { ...EMPTY_QUERY, labels: [{ key: "site", value: "ams" }, { key: "gpu", value: "h100" }] }))).toEqual(["a"]);
    expect(ids(filterFleet(fleet, { ...EMPTY_QUERY, labels: [{ key: "note", value: "rack:7" }] }))).toEqual(["e"]);
    expect(ids(filterFleet(fleet, { ...EMPTY_QUERY, labels: [{ key: "site", value: "nyc" }] }))).toEqual([]);
    expect(ids(filterFleet(fleet, { ...EMPTY_QUERY, q: "team:search" }))).toEqual(["c"]);
  });

  it("round-trips through the URL: ?label= repeated, ?group=label:<key>", () => {
    const q = { ...EMPTY_QUERY, labels: [{ key: "site", value: "ams" }, { key: "note", value: "rack:7" }], groupLabel: "gpu" };
    const s = fleetQueryString(q);
    expect(s).toBe("?label=site%3Aams&label=note%3Arack%3A7&group=label%3Agpu");
    const back = parseFleetQuery(new URLSearchParams(s));
    expect(back).toEqual(q);
    expect(parseFleetQuery(new URLSearchParams("?group=label:GPU")).groupLabel).toBe("");
    expect(parseFleetQuery(new URLSearchParams("?group=model")).groupLabel).toBe("");
    // A reader with only get() (the server page's searchParams) still takes one label.
    expect(parseFleetQuery({ get: (k) => (k === "label" ? "site:fra" : null) }).labels).toEqual([{ key: "site", value: "fra" }]);
  });
});

describe("group by a label key", () => {
  it("groups in the order of each group's most urgent member, the backends without the key last", () => {
    const groups = groupByLabel(sortFleet(fleet, "attention"), "site");
    expect(groups.map((g) => [g.value, ids(g.backends)])).toEqual([
      ["fra", ["b", "e"]],
      ["ams", ["a", "c"]],
      [null, ["d"]],
    ]);
  });

  it("names every key in the fleet, and a card's labels in key order", () => {
    expect(labelKeys(fleet)).toEqual(["gpu", "note", "site", "team"]);
    expect(labelTexts(fleet[2])).toEqual(["gpu:a100", "site:ams", "team:search"]);
  });
});

describe("the cards view's sections", () => {
  it("one unnamed section ungrouped; a heading per value grouped by a label key, which wins over model", () => {
    const sorted = sortFleet(fleet, "attention");
    expect(fleetSections(sorted, { group: false, groupLabel: "" }).map((s) => [s.heading, s.backends.length])).toEqual([[null, 5]]);
    expect(fleetSections(sorted, { group: true, groupLabel: "gpu" }).map((s) => [s.heading, ids(s.backends)])).toEqual([
      ["h100", ["b", "a"]],
      ["a100", ["c"]],
      ["No gpu label", ["d", "e"]],
    ]);
  });

  it("the server's first screen: the first backends in page order, a section cut where the budget ends, its count still whole", () => {
    const sections = fleetSections(sortFleet(fleet, "attention"), { group: true, groupLabel: "gpu" });
    expect(firstScreenOf(sections, 3).map((s) => [s.heading, ids(s.backends), s.count])).toEqual([
      ["h100", ["b", "a"], 2],
      ["a100", ["c"], 1],
    ]);
    expect(firstScreenOf(sections, 4).map((s) => [s.heading, ids(s.backends), s.count])).toEqual([
      ["h100", ["b", "a"], 2],
      ["a100", ["c"], 1],
      ["No gpu label", ["d"], 2],
    ]);
    expect(firstScreenOf(sections, 99)).toEqual(sections);
  });
});
