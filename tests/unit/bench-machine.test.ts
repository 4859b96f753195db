import { describe, expect, it } from "vitest";
import { cpuReferenceMs, cpuTicks, stealPercent } from "@/bench/machine";

describe("bench/machine.ts: how fast the machine was during a run", () => {
  it("steal is its share of all CPU ticks between two readings", () => {
    expect(stealPercent({ steal: 10, total: 1000 }, { steal: 60, total: 2000 })).toBe(5);
    expect(stealPercent({ steal: 10, total: 1000 }, { steal: 10, total: 3000 })).toBe(0);
  });

  it("no steal figure without two readings that moved forward", () => {
    expect(stealPercent(null, { steal: 1, total: 2 })).toBeNull();
    expect(stealPercent({ steal: 1, total: 2 }, null)).toBeNull();
    expect(stealPercent({ steal: 1, total: 2 }, { steal: 1, total: 2 })).toBeNull();
  });

  it("reads the counters of this machine (Linux, as CI and the bench run), and they only grow", () => {
    const a = cpuTicks();
    expect(a).not.toBeNull();
    expect(a!.total).toBeGreaterThan(0);
    expect(a!.steal).toBeGreaterThanOrEqual(0);
    let spin = 0;
    for (let i = 0; i < 2e7; i++) spin += i;
    expect(spin).toBeGreaterThan(0);
    const b = cpuTicks()!;
    expect(b.total).toBeGreaterThanOrEqual(a!.total);
    expect(b.steal).toBeGreaterThanOrEqual(a!.steal);
  });

  it("the reference workload gives a positive time in ms", () => {
    const ms = cpuReferenceMs();
    expect(Number.isFinite(ms)).toBe(true);
    expect(ms).toBeGreaterThan(0);
  });
});
