/** How a pending restart ends (lib/restart/resolve.ts): pure, table-driven. */
import { describe, expect, it } from "vitest";
import { actionFailed, resolve, type Resolution } from "@/lib/restart/resolve";

const T0 = Date.parse("2026-12-01T03:00:00Z");
const S = 1000;
const timeouts = { recoveryTimeoutSeconds: 300 };
const pending = { requestedAt: T0 };

const rows: Array<[string, { state: string; recovered?: boolean }, number, number, Partial<Resolution> | null]> = [
  ["still restarting inside the timeout: stays pending", { state: "restarting" }, T0 + 30 * S, T0 + 30 * S, null],
  ["down inside the timeout: stays pending", { state: "down" }, T0 + 299 * S, T0 + 300 * S, null],
  [
    "a new process serving: recovered, downtime from the request to that reading",
    { state: "idle", recovered: true },
    T0 + 42.5 * S,
    T0 + 43 * S,
    { outcome: "recovered", recoveredAt: T0 + 42.5 * S, resolvedAt: T0 + 43 * S, downtimeSeconds: 42.5, resolution: "a new process was seen serving 42.5 s after the restart was asked for (idle)" },
  ],
  [
    "recovered late still counts as recovered",
    { state: "busy", recovered: true },
    T0 + 400 * S,
    T0 + 400 * S,
    { outcome: "recovered", downtimeSeconds: 400 },
  ],
  [
    "past recoveryTimeoutSeconds without a new process: timed out",
    { state: "stuck" },
    T0 + 301 * S,
    T0 + 301 * S,
    { outcome: "timed-out", resolvedAt: T0 + 301 * S, downtimeSeconds: null, resolution: "no new process seen serving within recoveryTimeoutSeconds (300 s); last state stuck" },
  ],
  ["exactly at the timeout: not yet", { state: "stuck" }, T0 + 300 * S, T0 + 300 * S, null],
];

describe("resolve", () => {
  it.each(rows)("%s", (_, verdict, readingAt, now, want) => {
    const got = resolve(pending, verdict, readingAt, now, timeouts);
    if (want === null) expect(got).toBeNull();
    else expect(got).toMatchObject(want);
  });
});

describe("actionFailed", () => {
  it.each([
    ["exited with status 1", "the restart action failed: exited with status 1; not retried"],
    [null, "the restart action failed: unknown error; not retried"],
  ] as const)("%s", (error, resolution) => {
    expect(actionFailed(error)).toEqual({ outcome: "failed", resolution });
  });
});
