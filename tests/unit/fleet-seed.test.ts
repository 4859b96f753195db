/**
 * The fleet page's first answer as columns (FleetSeed): the same backends come back, each key is
 * sent once, and a key a row lacks stays absent (lib/core/columns.ts).
 */
import { describe, expect, it } from "vitest";
import type { FleetBackend, FleetResponse } from "@/lib/api/types";
import { fleetSeed } from "@/lib/api/fleet";
import { fromColumnRows, toColumnRows } from "@/lib/core/columns";
import { fleetFromSeed } from "@/lib/ui/fleet";

const backend = (i: number): FleetBackend => ({
  id: `b${String(i).padStart(3, "0")}`,
  url: `http://127.0.0.1:${40000 + i}`,
  model: "gb10/llama-3.1-70b-fp8",
  engine: "vllm",
  models: ["gb10/llama-3.1-70b-fp8"],
  labels: i % 2 ? { site: "ams" } : {},
  configProblem: null,
  state: i === 3 ? "stuck" : "idle",
  healthy: i !== 3,
  since: 1_796_253_909_156 + i,
  running: i === 3 ? 2 : 0,
  waiting: 0,
  stepsPerSecond: i === 3 ? 0 : null,
  generationTokensPerSecond: 0,
  promptTokensPerSecond: 0,
  kvCacheUsage: 0.25,
  processStartTime: 1_796_253_879.49,
  lastReadAt: 1_796_253_927_149,
  reasons: [{ rule: "probe-answered", text: "0 running, 0 waiting; the probe answered 17 s ago in 318 ms" }],
  restartConfigured: i === 3,
  pendingRestartId: null,
  cooldownUntil: null,
  problem: i === 3 ? { event: "stuck", since: 1_796_253_900_000 } : null,
  acknowledged: null,
  maintenance: null,
  unattendedRestartAt: null,
  unattendedConfigured: false,
  restartRecommended: i === 3,
  crashLoop: i === 4 ? { since: 1, restarts: 3, lastAt: 2, clearsAt: 3, threshold: 3, windowMinutes: 10 } : null,
});

const fleet = (n: number): FleetResponse => ({
  generatedAt: 1_796_253_930_000,
  demo: false,
  pollIntervalSeconds: 2,
  storageError: null,
  notificationChannels: [],
  configError: null,
  backends: Array.from({ length: n }, (_, i) => backend(i)),
  proxies: [],
});

describe("the fleet page's first answer as columns", () => {
  it("gives back the fleet GET /api/fleet answers, backend for backend", () => {
    const f = fleet(500);
    expect(fleetFromSeed(fleetSeed(f))).toEqual(f);
  });

  it("sends each key once, not once per backend, and is well under half the objects' JSON at 500 backends", () => {
    const f = fleet(500);
    const seed = JSON.stringify(fleetSeed(f));
    expect(seed.split('"restartRecommended"').length - 1).toBe(1);
    expect(seed.length).toBeLessThan(JSON.stringify(f).length / 2);
  });

  it("keeps a key that only some rows carry, and leaves it absent where a row lacks it", () => {
    const rows = [{ a: 1, b: "x" }, { a: 2 }, { a: 3, b: undefined, c: null }];
    const t = toColumnRows<{ a: number; b?: string; c?: null }>(rows);
    expect(t.keys).toEqual(["a", "b", "c"]);
    const back = fromColumnRows(t);
    expect(back).toEqual([{ a: 1, b: "x" }, { a: 2 }, { a: 3, c: null }]);
    expect("b" in back[1]).toBe(false);
  });

  it("an empty fleet is an empty list of keys and rows", () => {
    expect(toColumnRows([])).toEqual({ keys: [], rows: [] });
    expect(fleetFromSeed(fleetSeed(fleet(0))).backends).toEqual([]);
  });
});
