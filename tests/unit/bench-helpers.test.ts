/**
 * The benchmarks' pure helpers: percentiles, the seeded batch schedule of the replay, and the
 * virtual clock that runs the real watcher loop at compressed time. No timings are asserted.
 */
import { describe, expect, it } from "vitest";
import { batchSchedule, concurrencyAt, INCIDENT } from "@/bench/incident";
import { percentile, rng, summarize } from "@/bench/stats";
import { VirtualClock } from "@/bench/virtual-clock";
import { runEvery } from "@/lib/watcher/loop";

describe("percentile (nearest rank)", () => {
  it.each([
    [[5], 50, 5],
    [[1, 2, 3, 4], 50, 2],
    [[1, 2, 3, 4], 75, 3],
    [[1, 2, 3, 4], 100, 4],
    [[4, 1, 3, 2], 0, 1],
    [Array.from({ length: 100 }, (_, i) => i + 1), 99, 99],
    [Array.from({ length: 1000 }, (_, i) => 1000 - i), 99, 990],
  ])("%j p%d = %d", (xs, p, want) => {
    expect(percentile(xs, p)).toBe(want);
  });

  it("is NaN for no data, refuses a percentile outside 0..100, and leaves its input alone", () => {
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow(/0\.\.100/);
    const xs = [3, 1, 2];
    percentile(xs, 50);
    expect(xs).toEqual([3, 1, 2]);
  });

  it("summarize handles long lists (no spread into Math.min)", () => {
    const xs = Array.from({ length: 300_000 }, (_, i) => i);
    const s = summarize(xs);
    expect([s.min, s.max, s.n]).toEqual([0, 299_999, 300_000]);
  });
});

describe("the replay's batch schedule", () => {
  const day = 24 * 3600_000;

  it("is the same for the same seed and covers the whole span without gaps", () => {
    const a = batchSchedule(INCIDENT.seed, day);
    expect(batchSchedule(INCIDENT.seed, day)).toEqual(a);
    expect(a[0].fromMs).toBe(0);
    expect(a.at(-1)!.toMs).toBe(day);
    for (let i = 1; i < a.length; i++) expect(a[i].fromMs).toBe(a[i - 1].toMs);
  });

  it("alternates idle gaps with 2 to 4 long requests", () => {
    const a = batchSchedule(INCIDENT.seed, day);
    const busy = a.filter((p) => p.concurrency > 0);
    expect(busy.length).toBeGreaterThan(0);
    expect(a.some((p) => p.concurrency === 0)).toBe(true);
    for (const p of busy) expect(p.concurrency).toBeGreaterThanOrEqual(2);
    for (const p of busy) expect(p.concurrency).toBeLessThanOrEqual(4);
    expect(concurrencyAt(a, a[1].fromMs)).toBe(a[1].concurrency);
    expect(concurrencyAt(a, day + 1)).toBe(0);
  });

  it("the seeded generator is deterministic", () => {
    const a = rng(7);
    const b = rng(7);
    expect(Array.from({ length: 5 }, a)).toEqual(Array.from({ length: 5 }, b));
  });
});

describe("VirtualClock", () => {
  it("runs the watcher's runEvery loops on virtual time, each step at its slot, without waiting", async () => {
    const clock = new VirtualClock(1_000_000, 2);
    const controller = new AbortController();
    const fast: number[] = [];
    const slow: number[] = [];
    const loops = [
      runEvery(() => void fast.push(clock.now()), { intervalMs: 1000, signal: controller.signal, clock }),
      runEvery(
        async () => {
          slow.push(clock.now());
          await new Promise((r) => setImmediate(r)); // a step that awaits I/O
        },
        { intervalMs: 5000, signal: controller.signal, clock },
      ),
    ];
    await clock.advanceTo(1_010_000);
    controller.abort();
    await Promise.all(loops);
    expect(fast).toEqual(Array.from({ length: 11 }, (_, i) => 1_000_000 + i * 1000));
    expect(slow).toEqual([1_000_000, 1_005_000, 1_010_000]);
    expect(clock.now()).toBe(1_010_000);
  });

  it("names the stall when a loop never goes back to sleep", async () => {
    const clock = new VirtualClock(0, 1, 50);
    await expect(clock.settle()).rejects.toThrow(/0 of 1 loops asleep/);
  });
});
