/**
 * The evidence bodies a monitor keeps (lib/watcher/kept-bodies.ts): the newest read's and those
 * since the last healthy one, RAW_BODIES_KEPT at most, given back as the text that was read.
 */
import { describe, expect, it } from "vitest";
import { KeptBodies } from "../../lib/watcher/kept-bodies";
import { MAX_RAW_BODY_CHARS, RAW_BODIES_KEPT } from "../../lib/core/evidence";

const states = (k: KeptBodies) => k.list().map((b) => `${b.at}:${b.state}`);

describe("KeptBodies", () => {
  it("keeps only the newest body of a healthy backend", () => {
    const k = new KeptBodies();
    k.keep(1, "idle", "a 1\n");
    k.keep(2, "busy", "a 2\n");
    expect(k.list()).toEqual([{ at: 2, state: "busy", cut: false, body: "a 2\n" }]);
  });

  it("keeps the last healthy body and the unhealthy ones after it, at most RAW_BODIES_KEPT", () => {
    const k = new KeptBodies();
    k.keep(1, "busy", "x 1\n");
    k.keep(2, "stalled", "x 2\n");
    expect(states(k)).toEqual(["1:busy", "2:stalled"]);
    k.keep(3, "stalled", "x 3\n");
    k.keep(4, "stuck", "x 4\n");
    expect(RAW_BODIES_KEPT).toBe(3);
    expect(states(k)).toEqual(["2:stalled", "3:stalled", "4:stuck"]);
    expect(k.list().map((b) => b.body)).toEqual(["x 2\n", "x 3\n", "x 4\n"]);
    k.keep(5, "idle", "x 5\n");
    expect(states(k)).toEqual(["5:idle"]);
  });

  it("gives back the text as read when a shorter or longer body reuses or outgrows the buffer", () => {
    const k = new KeptBodies();
    const long = `vllm:num_requests_running{model_name="é模型"} 1\n`.repeat(400);
    k.keep(1, "idle", long);
    expect(k.list()[0].body).toBe(long);
    k.keep(2, "idle", "short\n");
    expect(k.list()[0].body).toBe("short\n");
    k.keep(3, "idle", long + long);
    expect(k.list()[0].body).toBe(long + long);
  });

  it("marks a body at the cap as cut", () => {
    const k = new KeptBodies();
    k.keep(1, "idle", "#".repeat(MAX_RAW_BODY_CHARS));
    expect(k.list()[0].cut).toBe(true);
  });
});
