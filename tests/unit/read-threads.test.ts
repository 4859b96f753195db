/** How many read threads a config gets (lib/watcher/read-threads.ts). */
import { describe, expect, it } from "vitest";
import { parseConfig } from "@/lib/config";
import { AUTO_MAX_THREADS, AUTO_MIN_READS_PER_SECOND, readThreadsFor } from "@/lib/watcher/read-threads";

const fleet = (n: number, extra: Record<string, unknown> = {}) =>
  parseConfig({ backends: Array.from({ length: n }, (_, i) => ({ id: `b${i}`, url: `http://10.0.0.1:${8000 + i}` })), ...extra }, "t", { env: {} });

describe("readThreadsFor", () => {
  it("defaults to auto: none while one thread reads the fleet on time", () => {
    expect(fleet(3).readThreads).toBe("auto");
    expect(readThreadsFor(fleet(0), 16)).toBe(0);
    expect(readThreadsFor(fleet(1000), 16)).toBe(0); // 200 reads a second at 5 s
    expect(readThreadsFor(fleet(5 * AUTO_MIN_READS_PER_SECOND - 1), 16)).toBe(0);
  });

  it("auto: one per 500 reads a second, leaving a core to the watcher's thread, at most AUTO_MAX_THREADS", () => {
    expect(readThreadsFor(fleet(5 * AUTO_MIN_READS_PER_SECOND), 16)).toBe(1);
    expect(readThreadsFor(fleet(5000), 2)).toBe(1); // this machine: two cores
    expect(readThreadsFor(fleet(5000), 8)).toBe(2);
    expect(readThreadsFor(fleet(1000, { pollIntervalSeconds: 0.5 }), 8)).toBe(4);
    expect(readThreadsFor(fleet(20_000, { pollIntervalSeconds: 1 }), 64)).toBe(AUTO_MAX_THREADS);
    // One core: still one thread (the reads wait on the network as much as on the core).
    expect(readThreadsFor(fleet(5000), 1)).toBe(1);
  });

  it("a number is taken as given, 0 included", () => {
    expect(readThreadsFor(fleet(5000, { readThreads: 0 }), 16)).toBe(0);
    expect(readThreadsFor(fleet(2, { readThreads: 3 }), 2)).toBe(3);
  });
});
