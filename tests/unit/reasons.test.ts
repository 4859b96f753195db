/** Reasons are structured results ({ rule, text }); rows stored before that held plain strings. */
import { describe, expect, it } from "vitest";
import { normaliseReasons, reason, reasonText, RULES } from "@/lib/core/types";

describe("normaliseReasons: what a stored row's reasons become", () => {
  it("keeps reasons with a known rule id as they are", () => {
    const rs = [reason("no-progress-stuck", "no progress across 2 waits and at least 120 s"), reason("dp-total", "3 running, 0 waiting over 2 engines")];
    expect(normaliseReasons(JSON.parse(JSON.stringify(rs)))).toEqual(rs);
  });

  it("turns a legacy row's plain strings into unclassified reasons, keeping the words", () => {
    expect(normaliseReasons(["2 running, 0 waiting, 0 new steps in 134 s across 3 reads", "no reading yet"])).toEqual([
      { rule: "unclassified", text: "2 running, 0 waiting, 0 new steps in 134 s across 3 reads" },
      { rule: "unclassified", text: "no reading yet" },
    ]);
  });

  it("reads a row mixing both, and a rule id this version does not know as unclassified", () => {
    expect(normaliseReasons(["old words", { rule: "progress", text: "+5 steps in 5 s" }, { rule: "a-rule-from-the-future", text: "new words" }])).toEqual([
      { rule: "unclassified", text: "old words" },
      { rule: "progress", text: "+5 steps in 5 s" },
      { rule: "unclassified", text: "new words" },
    ]);
  });

  it("never throws on what is not a list of reasons: dropped, not guessed", () => {
    for (const x of [null, undefined, "a string", 42, {}, { reasons: [] }]) expect(normaliseReasons(x)).toEqual([]);
    expect(normaliseReasons([null, 3, { rule: "progress" }, { text: 7 }, "kept"])).toEqual([{ rule: "unclassified", text: "kept" }]);
  });

  it("reasonText gives the words a person reads, one reason after another", () => {
    expect(reasonText([reason("down-grace", "down for 2 min"), reason("down-refused", "connection refused")])).toBe("down for 2 min; connection refused");
    expect(reasonText([])).toBe("");
    expect(RULES).toContain("unclassified");
  });
});
