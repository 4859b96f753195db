/**
 * lib/watcher/heap.ts: the V8 settings the watcher's process makes at start (what they buy is
 * measured in bench/, not here).
 */
import { spawnSync } from "node:child_process";
import v8 from "node:v8";
import { afterEach, describe, expect, it, vi } from "vitest";
import { tuneHeapForWatcher, WATCHER_V8_FLAGS } from "@/lib/watcher/heap";

afterEach(() => vi.restoreAllMocks());

describe("the watcher's V8 settings", () => {
  it("sets each flag, and none with STEPWATCH_V8_TUNING=off", () => {
    const set = vi.spyOn(v8, "setFlagsFromString").mockImplementation(() => {});
    expect(tuneHeapForWatcher({ STEPWATCH_V8_TUNING: "off" })).toEqual([]);
    expect(set).not.toHaveBeenCalled();
    expect(tuneHeapForWatcher({})).toEqual(WATCHER_V8_FLAGS);
    expect(set.mock.calls.map((c) => c[0])).toEqual([...WATCHER_V8_FLAGS]);
  });

  // setFlagsFromString ignores a flag V8 does not know: a Node upgrade that drops one must fail here.
  it("names flags this Node's V8 has, with values it takes", () => {
    const options = spawnSync(process.execPath, ["--v8-options"], { encoding: "utf8" }).stdout;
    for (const flag of WATCHER_V8_FLAGS) {
      const name = flag.replace(/^--(no-)?/, "").replace(/=.*$/, "");
      expect(options, name).toContain(`--${name} `);
    }
    const run = spawnSync(process.execPath, [...WATCHER_V8_FLAGS, "-e", "0"], { encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });
});
