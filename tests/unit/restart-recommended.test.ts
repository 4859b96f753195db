/**
 * The one rule of a restart recommendation (lib/core/states.ts): the classifier, the notification
 * policy, the fleet view and the stored state all ask it. Table-driven.
 */
import { describe, expect, it } from "vitest";
import { BACKEND_STATES, recommendedNow, restartRecommended, type BackendState, type RestartFacts } from "@/lib/core/states";

const rows: Array<[string, BackendState, RestartFacts, boolean]> = [
  ["stuck always", "stuck", {}, true],
  ["stuck, however short the refusal figures", "stuck", { refusedSeconds: 1, startupGraceSeconds: 600 }, true],
  ["down from timeouts (no refusal span): at once", "down", {}, true],
  ["down refusing inside startupGraceSeconds: may be loading its weights", "down", { refusedSeconds: 599, startupGraceSeconds: 600 }, false],
  ["down refusing exactly startupGraceSeconds", "down", { refusedSeconds: 600, startupGraceSeconds: 600 }, true],
  ["down refusing past startupGraceSeconds", "down", { refusedSeconds: 601, startupGraceSeconds: 600 }, true],
  ["stuck in maintenance", "stuck", { silenced: true }, false],
  ["down past grace in maintenance", "down", { refusedSeconds: 900, startupGraceSeconds: 600, silenced: true }, false],
  ["sleeping: put to sleep on purpose", "sleeping", {}, false],
  ["stalled: not yet stuck", "stalled", {}, false],
  ["restarting", "restarting", {}, false],
];

describe("restartRecommended", () => {
  it.each(rows)("%s", (_, state, facts, want) => {
    expect(restartRecommended(state, facts)).toBe(want);
  });

  it("no state but stuck and down ever calls for one", () => {
    const calling = BACKEND_STATES.filter((s) => restartRecommended(s));
    expect(calling).toEqual(["stuck", "down"]);
  });
});

describe("recommendedNow", () => {
  const rowsNow: Array<[string, { restartRecommended: boolean } | null, boolean, boolean]> = [
    ["no verdict yet", null, false, false],
    ["the verdict recommends one", { restartRecommended: true }, false, true],
    ["the verdict recommends one, in maintenance", { restartRecommended: true }, true, false],
    ["the verdict recommends none", { restartRecommended: false }, false, false],
  ];
  it.each(rowsNow)("%s", (_, verdict, silenced, want) => {
    expect(recommendedNow(verdict, silenced)).toBe(want);
  });
});
