import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { getEventListeners } from "node:events";
import { runEvery, sleep } from "@/lib/watcher/loop";

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

const wait = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe("runEvery", () => {
  it("listens to the shared signal once per loop, not per sleep or per step; its steps' signal aborts with it", async () => {
    const ac = new AbortController();
    const seen: AbortSignal[] = [];
    const step = async (signal: AbortSignal) => {
      seen.push(signal);
      // What a read does: a listener of its own for the length of the request.
      const onAbort = () => {};
      signal.addEventListener("abort", onAbort);
      await wait(100);
      signal.removeEventListener("abort", onAbort);
    };
    const loops = [0, 1, 2].map(() => runEvery(step, { intervalMs: 1000, signal: ac.signal }));
    await vi.advanceTimersByTimeAsync(3500);
    expect(seen.length).toBe(12);
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(3);
    ac.abort();
    await Promise.all(loops);
    expect(seen.every((s) => s.aborted)).toBe(true);
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
  });

  it("starts each step on a slot measured from the first start (no drift)", async () => {
    const ac = new AbortController();
    const starts: number[] = [];
    const loop = runEvery(
      async () => {
        starts.push(Date.now() - 1_000_000);
        await wait(300); // the read takes 300 ms
      },
      { intervalMs: 1000, signal: ac.signal },
    );
    await vi.advanceTimersByTimeAsync(4500);
    ac.abort();
    await loop;
    expect(starts).toEqual([0, 1000, 2000, 3000, 4000]);
  });

  it("reports each step's lag behind its slot (not the first step's)", async () => {
    const ac = new AbortController();
    const lags: number[] = [];
    // A clock whose sleeps overrun by 40 ms, as under a busy event loop.
    const clock = { now: () => Date.now(), sleep: (ms: number, signal: AbortSignal) => sleep(ms + 40, signal) };
    const loop = runEvery(() => {}, { intervalMs: 1000, signal: ac.signal, clock, onLag: (ms) => lags.push(ms) });
    await vi.advanceTimersByTimeAsync(3100);
    ac.abort();
    await loop;
    expect(lags).toEqual([40, 40, 40]);
  });

  it("startAt delays the first step and the slots follow from there", async () => {
    const ac = new AbortController();
    const starts: number[] = [];
    const loop = runEvery(() => void starts.push(Date.now() - 1_000_000), { intervalMs: 1000, signal: ac.signal, startAt: Date.now() + 250 });
    await vi.advanceTimersByTimeAsync(2500);
    ac.abort();
    await loop;
    expect(starts).toEqual([250, 1250, 2250]);
  });

  it("a first step that ran late keeps the slots of startAt: loops woken in one tick do not stay in step", async () => {
    // The watcher's start holds the event loop while it seeds every monitor; each loop's first
    // sleep then ends in the same tick, long after its slot.
    const ac = new AbortController();
    let first = true;
    const clock = {
      now: () => Date.now(),
      sleep: (ms: number, signal: AbortSignal) => {
        const extra = first ? 900 : 0;
        first = false;
        return sleep(ms + extra, signal);
      },
    };
    const lags: number[] = [];
    const starts: Record<string, number[]> = { a: [], b: [] };
    const t0 = Date.now();
    const loops = (["a", "b"] as const).map((k, i) => {
      first = true;
      return runEvery(() => void starts[k].push(Date.now() - t0), { intervalMs: 1000, signal: ac.signal, clock, startAt: t0 + 100 + i * 500, onLag: (ms) => lags.push(ms) });
    });
    await vi.advanceTimersByTimeAsync(3200);
    ac.abort();
    await Promise.all(loops);
    // Both first steps are late (1000 and 1500 ms), then each goes back to its own slot.
    expect(starts.a).toEqual([1000, 1100, 2100, 3100]);
    expect(starts.b).toEqual([1500, 1600, 2600]);
    expect(lags).toEqual([0, 0, 0, 0, 0]);
  });

  it("never overlaps: a step longer than the interval delays the next one and skips missed slots", async () => {
    const ac = new AbortController();
    let inFlight = 0;
    let maxInFlight = 0;
    const starts: number[] = [];
    const loop = runEvery(
      async () => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        starts.push(Date.now() - 1_000_000);
        await wait(starts.length === 1 ? 2500 : 100);
        inFlight--;
      },
      { intervalMs: 1000, signal: ac.signal },
    );
    await vi.advanceTimersByTimeAsync(5500);
    ac.abort();
    await loop;
    expect(maxInFlight).toBe(1);
    expect(starts).toEqual([0, 3000, 4000, 5000]);
  });

  it("a step that throws is reported and the loop goes on", async () => {
    const ac = new AbortController();
    const errors: unknown[] = [];
    let n = 0;
    const loop = runEvery(
      () => {
        n++;
        if (n === 1) throw new Error("boom");
      },
      { intervalMs: 1000, signal: ac.signal, onError: (e) => errors.push(e) },
    );
    await vi.advanceTimersByTimeAsync(2500);
    ac.abort();
    await loop;
    expect(n).toBe(3);
    expect(errors).toHaveLength(1);
  });

  it("abort stops the loop during its sleep, at once", async () => {
    const ac = new AbortController();
    let n = 0;
    const loop = runEvery(() => void n++, { intervalMs: 60_000, signal: ac.signal });
    await vi.advanceTimersByTimeAsync(10);
    ac.abort();
    let done = false;
    void loop.then(() => (done = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(n).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});
