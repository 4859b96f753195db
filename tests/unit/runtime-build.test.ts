import { afterEach, describe, expect, it, vi } from "vitest";
import { getRuntime, isBuilding, peekRuntime, startFromInstrumentation } from "../../lib/runtime";

// `next build` (and its page-data and prerender workers) must never start the runtime (issue 27);
// scripts/build-guarded.ts proves it on the real build, this holds the wall itself.
describe("the runtime during next build", () => {
  const before = process.env.NEXT_PHASE;
  afterEach(() => {
    if (before === undefined) delete process.env.NEXT_PHASE;
    else process.env.NEXT_PHASE = before;
    vi.restoreAllMocks();
  });

  it("knows the build phase from NEXT_PHASE", () => {
    expect(isBuilding({ NEXT_PHASE: "phase-production-build" })).toBe(true);
    expect(isBuilding({ NEXT_PHASE: "phase-production-server" })).toBe(false);
    expect(isBuilding({})).toBe(false);
  });

  it("getRuntime refuses and keeps nothing; instrumentation's start returns without exiting", async () => {
    process.env.NEXT_PHASE = "phase-production-build";
    const exit = vi.spyOn(process, "exit").mockImplementation((() => undefined) as never);
    await expect(getRuntime()).rejects.toThrow(/does not start during `next build`/);
    expect(peekRuntime()).toBeNull();
    await startFromInstrumentation();
    expect(exit).not.toHaveBeenCalled();
    expect(peekRuntime()).toBeNull();
  });
});
