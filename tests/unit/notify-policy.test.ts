import { describe, expect, it } from "vitest";
import { restartRecommended, STATE_INFO, type BackendState } from "@/lib/core/states";
import { type Verdict, reason } from "@/lib/core/types";
import { configWindowAt } from "@/lib/oncall/book";
import { parseConfig } from "@/lib/config";
import { decide, NO_PROBLEM, notProvenProblem, seedProblemState, type DecideInput, type ProblemState } from "@/lib/notify/policy";

const T0 = Date.parse("2026-12-01T03:00:00Z");
const S = 1000;

function verdict(state: BackendState, extra: Partial<Verdict> = {}): Verdict {
  return {
    state,
    health: STATE_INFO[state].health,
    healthy: STATE_INFO[state].health === "yes",
    restartRecommended: restartRecommended(state),
    reasons: [reason("unclassified", `${state} because`)],
    rates: { stepsPerSecond: null, generationTokensPerSecond: null, promptTokensPerSecond: null },
    basis: [],
    ...extra,
  };
}

const base: Omit<DecideInput, "verdict" | "at"> = {
  backendId: "gb10-a",
  previousState: "stalled",
  acknowledged: false,
  inMaintenance: false,
  restartPending: false,
  renotifyMinutes: 60,
  recoveredAfterSeconds: 60,
  unattendedAllowed: false,
};

type Over = Partial<Omit<DecideInput, "verdict">> & { verdict?: Partial<Verdict> };

/** Feeds a sequence of [seconds after T0, state] and collects the events sent. */
function run(steps: Array<[number, BackendState, Over?]>, start: ProblemState = NO_PROBLEM) {
  let st = start;
  const sent: Array<[number, string]> = [];
  let restartAt: number | null = null;
  let cleared = 0;
  for (const [s, state, over] of steps) {
    const d = decide(st, { ...base, ...over, verdict: verdict(state, over?.verdict ?? {}), at: T0 + s * S });
    st = d.state;
    for (const n of d.drafts) sent.push([s, n.event + (n.details?.reminder ? "(reminder)" : "")]);
    if (d.restartNow && restartAt === null) restartAt = s;
    if (d.clearAcknowledgement) cleared++;
  }
  return { sent, state: st, restartAt, cleared };
}

describe("notification policy", () => {
  it("stuck: one notification when the restart becomes recommended, one recovered after the quiet time", () => {
    const { sent } = run([
      [0, "busy"],
      [5, "stalled"],
      [130, "stuck"],
      [135, "stuck"],
      [140, "busy"],
      [170, "busy"],
      [200, "busy"],
      [205, "idle"],
    ]);
    expect(sent).toEqual([
      [130, "stuck"],
      [200, "recovered"],
    ]);
  });

  it("flap debounce: stuck -> busy -> stuck inside recoveredAfterSeconds sends nothing more", () => {
    const { sent } = run([
      [0, "stuck"],
      [10, "busy"],
      [20, "stuck"],
      [30, "busy"],
      [40, "stuck"],
      [50, "busy"],
      [115, "busy"],
    ]);
    expect(sent).toEqual([
      [0, "stuck"],
      [115, "recovered"],
    ]);
  });

  it("down is keyed on restartRecommended, not on the raw state: a down inside the startup grace sends nothing", () => {
    const grace: Over = { verdict: { restartRecommended: false } };
    const { sent } = run([
      [0, "busy"],
      [10, "down", grace],
      [300, "down", grace],
      [610, "down"],
    ]);
    expect(sent).toEqual([[610, "down"]]);
  });

  it("re-sends an unacknowledged problem every renotifyMinutes, never once acknowledged or while a restart is pending", () => {
    const { sent } = run([
      [0, "stuck"],
      [3599, "stuck"],
      [3600, "stuck"],
      [5000, "down"],
      [7200, "down"],
      [10_800, "stuck", { acknowledged: true }],
      [20_000, "restarting", { restartPending: true }],
    ]);
    expect(sent).toEqual([
      [0, "stuck"],
      [3600, "stuck(reminder)"],
      [7200, "down(reminder)"],
    ]);
  });

  it("maintenance: nothing opens, nothing is sent; the problem closes silently and the acknowledgement clears", () => {
    const m = { inMaintenance: true };
    const r1 = run([
      [0, "stuck", m],
      [3600, "stuck", m],
    ]);
    expect(r1.sent).toEqual([]);
    expect(r1.state.open).toBeNull();
    const r2 = run([
      [0, "stuck"],
      [10, "busy", m],
      [100, "busy", m],
    ]);
    expect(r2.sent).toEqual([[0, "stuck"]]);
    expect(r2.state.open).toBeNull();
    expect(r2.cleared).toBe(1);
  });

  it("unattended: restart-scheduled at once, due afterSeconds after the recommendation; never acknowledged, in maintenance or over maxPerDay", () => {
    const u = { unattended: { afterSeconds: 300, maxPerDay: 2 }, unattendedAllowed: true };
    const r = run([
      [0, "stalled", u],
      [130, "stuck", u],
      [300, "stuck", u],
      [430, "stuck", u],
    ]);
    expect(r.sent).toEqual([
      [130, "stuck"],
      [130, "restart-scheduled"],
    ]);
    expect(r.restartAt).toBe(430);
    expect(r.state.scheduledFor).toBe(T0 + 430 * S);

    expect(run([[0, "stuck", { ...u, acknowledged: true }], [400, "stuck", { ...u, acknowledged: true }]]).restartAt).toBeNull();
    expect(run([[0, "stuck", { ...u, inMaintenance: true }], [400, "stuck", { ...u, inMaintenance: true }]]).restartAt).toBeNull();
    expect(run([[0, "stuck", { ...u, unattendedAllowed: false }], [400, "stuck", { ...u, unattendedAllowed: false }]]).restartAt).toBeNull();
    // Healthy or sleeping-like (no recommendation): never.
    expect(run([[0, "idle", u], [400, "idle", u]]).restartAt).toBeNull();
    expect(run([[0, "down", { ...u, verdict: { restartRecommended: false } }], [400, "down", { ...u, verdict: { restartRecommended: false } }]]).restartAt).toBeNull();
  });

  it("sleeping, down inside the startup grace and a configuration problem are never a problem: nothing sent, no unattended restart", () => {
    const u = { unattended: { afterSeconds: 10, maxPerDay: 5 }, unattendedAllowed: true };
    const auth = "the probe needs the API key: 401";
    const cases: Array<[BackendState, Over]> = [
      ["sleeping", u],
      // Even a verdict that claimed a recommendation is not acted on while sleeping or misconfigured.
      ["sleeping", { ...u, verdict: { restartRecommended: true } }],
      ["down", { ...u, verdict: { restartRecommended: false } }],
      ["unknown", { ...u, verdict: { configProblem: auth } }],
      ["stuck", { ...u, verdict: { configProblem: auth } }],
    ];
    for (const [state, over] of cases) {
      const r = run([
        [0, state, over],
        [60, state, over],
        [4000, state, over],
      ]);
      expect(r.sent, `${state} ${JSON.stringify(over.verdict ?? {})}`).toEqual([]);
      expect(r.restartAt).toBeNull();
      expect(r.state.recommendedSince).toBeNull();
    }
    expect(notProvenProblem(verdict("sleeping"))).toMatch(/sleeping/);
    expect(notProvenProblem(verdict("down", { restartRecommended: false }))).toMatch(/startupGraceSeconds/);
    expect(notProvenProblem(verdict("unknown", { configProblem: auth }))).toContain(auth);
    expect(notProvenProblem(verdict("stuck"))).toBeNull();
    expect(notProvenProblem(verdict("down"))).toBeNull();
    // A stuck server put to sleep: sleeping is healthy, so the problem is over after the quiet time.
    expect(run([[0, "stuck"], [10, "sleeping"], [80, "sleeping"]]).sent).toEqual([
      [0, "stuck"],
      [80, "recovered"],
    ]);
  });

  it("a new countdown after the restart announces a new time", () => {
    const u = { unattended: { afterSeconds: 60, maxPerDay: 3 }, unattendedAllowed: true };
    const r = run([
      [0, "stuck", u],
      [60, "stuck", u],
      [65, "restarting", { ...u, restartPending: true }],
      [100, "stuck", u],
    ]);
    expect(r.sent.filter(([, e]) => e === "restart-scheduled").map(([s]) => s)).toEqual([0, 100]);
  });

  it("a stepwatch restart keeps the open problem and the announced schedule (seeded from the stored notifications)", () => {
    const seeded = seedProblemState(
      {
        lastProblem: { event: "stuck", at: T0, previousState: "busy", details: { openSince: new Date(T0).toISOString() } },
        lastScheduled: { at: T0, details: { scheduledAt: T0 + 300 * S } },
      },
      "stuck",
      T0,
    );
    expect(seeded).toEqual({ open: { event: "stuck", openedAt: T0, lastSentAt: T0, previousState: "busy" }, healthySince: null, recommendedSince: T0, scheduledFor: T0 + 300 * S });
    const r = run([[20, "stuck", { unattended: { afterSeconds: 300, maxPerDay: 1 }, unattendedAllowed: true }]], seeded);
    expect(r.sent).toEqual([]); // no second "stuck", no second "restart-scheduled"
    expect(seedProblemState({ lastProblem: { event: "recovered", at: T0, previousState: "stuck", details: {} }, lastScheduled: null }, "idle", T0).open).toBeNull();
  });
});

describe("maintenance windows from the config", () => {
  const c = parseConfig(
    {
      backends: [{ id: "a", url: "http://127.0.0.1:1" }, { id: "b", url: "http://127.0.0.1:2" }],
      maintenance: [
        { backends: ["a"], start: "2026-12-01T14:00:00Z", end: "2026-12-01T15:00:00Z", note: "driver update" },
        { weekly: { days: ["sun"], at: "23:30", minutes: 120 }, note: "weekly reboot" },
      ],
    },
    "t",
    { env: {} },
  );
  it("one-off windows for their backends only; weekly windows in UTC, also across midnight", () => {
    expect(configWindowAt(c.maintenance, "a", Date.parse("2026-12-01T14:30:00Z"))).toMatchObject({ note: "driver update", end: Date.parse("2026-12-01T15:00:00Z") });
    expect(configWindowAt(c.maintenance, "b", Date.parse("2026-12-01T14:30:00Z"))).toBeNull();
    expect(configWindowAt(c.maintenance, "a", Date.parse("2026-12-01T15:00:00Z"))).toBeNull();
    // 2026-12-06 is a Sunday: 23:30 Sunday to 01:30 Monday.
    expect(configWindowAt(c.maintenance, "b", Date.parse("2026-12-07T01:00:00Z"))).toMatchObject({ note: "weekly reboot", end: Date.parse("2026-12-07T01:30:00Z") });
    expect(configWindowAt(c.maintenance, "b", Date.parse("2026-12-07T01:31:00Z"))).toBeNull();
    expect(configWindowAt(c.maintenance, "b", Date.parse("2026-12-06T23:00:00Z"))).toBeNull();
  });
});
