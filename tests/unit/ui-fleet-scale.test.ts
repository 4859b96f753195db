/**
 * The fleet page at 500 backends: counts, the table's sort, quiet states after healthy ones, the
 * view in the URL; what a viewer is offered; isolated chart points; the refresh the page claims.
 */
import { describe, expect, it } from "vitest";
import type { FleetBackend } from "@/lib/api/types";
import { canAct, whoCanAct } from "@/lib/ui/access";
import { isolatedPoints } from "@/lib/ui/chart";
import { polling, refreshText } from "@/lib/ui/fetcher";
import { attentionTitle, EMPTY_QUERY, fleetQueryString, nextSort, parseFleetQuery, sortFleet, sortTable, stateCounts } from "@/lib/ui/fleet";

const be = (id: string, state: FleetBackend["state"], extra: Partial<FleetBackend> = {}): FleetBackend =>
  ({
    id,
    url: `http://10.0.0.1/${id}`,
    model: null,
    engine: null,
    state,
    since: 1000,
    running: null,
    waiting: null,
    stepsPerSecond: null,
    generationTokensPerSecond: null,
    restartRecommended: state === "stuck" || state === "down",
    ...extra,
  }) as FleetBackend;

describe("fleet order", () => {
  it("never sorts sleeping or no-metrics above a healthy backend, even when they are older", () => {
    const fleet = [be("ollama", "no-metrics", { since: 1 }), be("parked", "sleeping", { since: 2 }), be("idle", "idle", { since: 500 }), be("busy", "busy", { since: 900 }), be("down", "down")];
    expect(sortFleet(fleet, "attention").map((b) => b.id)).toEqual(["down", "busy", "idle", "ollama", "parked"]);
    // One failed read (unknown) is no verdict: it stays in its place among the healthy ones, by name.
    expect(sortFleet([be("ok", "idle"), be("new", "unknown"), be("a", "busy")], "attention").map((b) => b.id)).toEqual(["a", "new", "ok"]);
    expect(sortFleet([be("ok", "idle"), be("new", "unknown"), be("gone", "down")], "attention").map((b) => b.id)).toEqual(["gone", "new", "ok"]);
    // Nor is one read without progress (stalled): it rises once it is stuck.
    expect(sortFleet([be("ok", "idle"), be("slowpoke", "stalled", { since: 1 }), be("a", "busy")], "attention").map((b) => b.id)).toEqual(["a", "ok", "slowpoke"]);
    expect(sortFleet([be("ok", "idle"), be("slowpoke", "stuck"), be("a", "busy")], "attention").map((b) => b.id)).toEqual(["slowpoke", "a", "ok"]);
  });
  it("moves no healthy backend when one goes from idle to busy (or back): they are in name order", () => {
    const before = [be("a", "idle", { since: 100 }), be("b", "busy", { since: 50 }), be("c", "idle", { since: 10 }), be("z", "stuck", { since: 5 }), be("y", "stuck", { since: 1 })];
    const after = before.map((b) => (b.id === "c" ? { ...b, state: "busy" as const, since: 900 } : b.id === "b" ? { ...b, state: "idle" as const, since: 901 } : b));
    expect(sortFleet(before, "attention").map((b) => b.id)).toEqual(["y", "z", "a", "b", "c"]);
    expect(sortFleet(after, "attention").map((b) => b.id)).toEqual(["y", "z", "a", "b", "c"]);
  });
});

describe("counts and table", () => {
  const fleet = [
    be("a", "idle", { engine: "vllm", running: 0, waiting: 0, stepsPerSecond: 0, since: 300 }),
    be("b", "stuck", { engine: "llamacpp", running: 4, waiting: 9, stepsPerSecond: 0, since: 100 }),
    be("c", "busy", { engine: "sglang", running: 2, waiting: 1, stepsPerSecond: 12.5, generationTokensPerSecond: 400, since: 200 }),
    be("d", "down", { since: 50 }),
    be("e", "idle", { engine: "vllm", running: 0, waiting: 0, stepsPerSecond: 0, since: 10 }),
  ];
  it("counts each state present, in the one list's order", () => {
    expect(stateCounts(fleet)).toEqual([
      { state: "idle", count: 2 },
      { state: "busy", count: 1 },
      { state: "stuck", count: 1 },
      { state: "down", count: 1 },
    ]);
    expect(stateCounts([])).toEqual([]);
  });
  it("sorts by a column both ways, missing values last either way, ties in attention order", () => {
    expect(sortTable(fleet, "waiting", "desc").map((b) => b.id)).toEqual(["b", "c", "a", "e", "d"]);
    expect(sortTable(fleet, "waiting", "asc").map((b) => b.id)).toEqual(["a", "e", "c", "b", "d"]);
    expect(sortTable(fleet, "tokens", "desc").map((b) => b.id)).toEqual(["c", "d", "b", "a", "e"]);
    expect(sortTable(fleet, "engine", "asc").map((b) => b.id)).toEqual(["b", "c", "a", "e", "d"]);
    expect(sortTable(fleet, "state", "asc").map((b) => b.id)).toEqual(["d", "b", "a", "c", "e"]);
    expect(sortTable(fleet, "since", "asc").map((b) => b.id)).toEqual(["e", "d", "b", "c", "a"]);
    expect(sortTable(fleet, null, "asc")).toEqual(sortFleet(fleet, "attention"));
  });
  it("flips the direction on the same column, starts ascending on a new one", () => {
    expect(nextSort({ col: "running", dir: "asc" }, "running")).toEqual({ col: "running", dir: "desc" });
    expect(nextSort({ col: "running", dir: "desc" }, "waiting")).toEqual({ col: "waiting", dir: "asc" });
  });
  it("keeps the view, column and direction in the URL, garbage ignored", () => {
    const q = { ...EMPTY_QUERY, state: "down" as const, view: "table" as const, col: "waiting" as const, dir: "desc" as const };
    expect(fleetQueryString(q)).toBe("?state=down&view=table&col=waiting&dir=desc");
    expect(parseFleetQuery(new URLSearchParams(fleetQueryString(q)))).toEqual(q);
    expect(parseFleetQuery(new URLSearchParams("view=grid&col=ram&dir=up"))).toEqual(EMPTY_QUERY);
  });
  it("titles the tab with what is stuck and down", () => {
    expect(attentionTitle([be("a", "stuck"), be("b", "stuck"), be("c", "down"), be("d", "sleeping")])).toBe("2 stuck, 1 down · stepwatch");
  });
});

describe("what a viewer is offered", () => {
  it("gives the buttons to operators only and tells the others who can act", () => {
    expect(canAct({ name: "ann", role: "operator" })).toBe(true);
    expect(canAct({ name: "vic", role: "viewer" })).toBe(false);
    expect(canAct(null)).toBe(false);
    expect(whoCanAct({ name: "vic", role: "viewer" }, "restart")).toBe("operators can restart");
    expect(whoCanAct(null, "restart")).toBe("sign in as an operator to restart");
    expect(whoCanAct({ name: "ann", role: "operator" }, "restart")).toBe("");
  });
});

describe("sparse chart data", () => {
  it("finds the values with no neighbour, which a line cannot draw", () => {
    expect(isolatedPoints([0.15, null, null, 0.2, 0.3, null, 0.1])).toEqual([0, 6]);
    expect(isolatedPoints([null, 0.15, null])).toEqual([1]);
    expect(isolatedPoints([null, null])).toEqual([]);
    expect(isolatedPoints([1, 2, 3])).toEqual([]);
    expect(isolatedPoints([null, Number.NaN, 4, null])).toEqual([2]);
  });
});

describe("the refresh a page claims", () => {
  it("polls at the interval it names: SWR's 2 s dedupe made a 1.5 s interval every 3 s", () => {
    // What the fleet page did before: SWR's defaults under a 1.5 s interval.
    expect(refreshText({ refreshInterval: 1500 })).toBe("refreshes every 3 s");
    const o = polling(1500);
    expect(o.dedupingInterval).toBeLessThan(o.refreshInterval);
    expect(refreshText(o)).toBe("refreshes every 1.5 s");
    expect(refreshText(polling(5000))).toBe("refreshes every 5 s");
  });
});
