/**
 * The crash-loop rule (lib/core/crash-loop.ts) and its config: N new processes stepwatch did not
 * cause within M minutes open a loop, identified by the start that opened it; a window without a
 * new process closes it.
 */
import { describe, expect, it } from "vitest";
import { crashLoopAt } from "@/lib/core/crash-loop";
import { ConfigError, crashLoopRuleOf, parseConfig } from "@/lib/config";

const MIN = 60_000;
const rule = { restarts: 3, windowMinutes: 5 };

describe("crashLoopAt", () => {
  it.each([
    { name: "two starts are no loop", starts: [0, 1 * MIN], at: 2 * MIN, want: null },
    { name: "three within five minutes open one at the third", starts: [0, 2 * MIN, 4 * MIN], at: 4 * MIN, want: { since: 4 * MIN, restarts: 3 } },
    { name: "three spread over more than five minutes are none", starts: [0, 3 * MIN, 6 * MIN], at: 6 * MIN, want: null },
    { name: "a fourth in the loop keeps its identity", starts: [0, 1 * MIN, 2 * MIN, 6 * MIN], at: 6 * MIN, want: { since: 2 * MIN, restarts: 4 } },
    { name: "a whole window without a new process ends it", starts: [0, 1 * MIN, 2 * MIN], at: 7 * MIN + 1, want: null },
    { name: "still going just inside the window", starts: [0, 1 * MIN, 2 * MIN], at: 7 * MIN, want: { since: 2 * MIN, restarts: 3 } },
    { name: "a later burst is a new loop", starts: [0, 1, 2, 20 * MIN, 21 * MIN, 22 * MIN], at: 22 * MIN, want: { since: 22 * MIN, restarts: 3 } },
    { name: "starts after `at` are not seen yet", starts: [0, 1 * MIN, 2 * MIN], at: 1 * MIN, want: null },
  ])("$name", ({ starts, at, want }) => {
    const loop = crashLoopAt(starts, at, rule);
    if (want === null) expect(loop).toBeNull();
    else expect(loop).toMatchObject(want);
  });
});

describe("crashLoop config", () => {
  const parse = (extra: Record<string, unknown>) => parseConfig({ backends: [{ id: "a", url: "http://127.0.0.1:1" }], ...extra }, "test", { env: {} });

  it("defaults to 3 in 5 minutes; a backend overrides field by field", () => {
    const c = parse({});
    expect(c.crashLoop).toEqual({ restarts: 3, windowMinutes: 5 });
    const d = parseConfig(
      { crashLoop: { windowMinutes: 10 }, backends: [{ id: "a", url: "http://127.0.0.1:1", crashLoop: { restarts: 5 } }, { id: "b", url: "http://127.0.0.1:2" }] },
      "test",
      { env: {} },
    );
    expect(crashLoopRuleOf(d, d.backends[0])).toEqual({ restarts: 5, windowMinutes: 10 });
    expect(crashLoopRuleOf(d, d.backends[1])).toEqual({ restarts: 3, windowMinutes: 10 });
  });

  it.each([
    [{ crashLoop: { restarts: 1 } }, "crashLoop.restarts:"],
    [{ crashLoop: { windowMinutes: 0 } }, "crashLoop.windowMinutes:"],
    [{ crashLoop: { every: 3 } }, "crashLoop.every: unknown field"],
    [{ backends: [{ id: "a", url: "http://127.0.0.1:1", crashLoop: { restarts: 2.5 } }] }, "backends[0].crashLoop.restarts:"],
  ])("%j is refused naming the field", (extra, field) => {
    try {
      parse(extra);
      expect.unreachable("accepted");
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).problems.join("\n")).toContain(field);
    }
  });
});
