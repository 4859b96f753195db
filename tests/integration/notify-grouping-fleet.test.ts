/**
 * Issue 33's "done when" for grouping, end to end: 200 simulated backends (the simulator's
 * `--count`, one child process), the real watcher polling them, a real SQLite file, real webhook,
 * Slack- and ntfy-shaped receivers on 127.0.0.1. 20 of them crash at once: each channel gets ONE
 * message naming the 20 (with the count and their labels) within the group window, and one more
 * when they come back; the 180 healthy ones are never named, nor a 21st that crashes with them
 * while in maintenance (muting stays per backend). Waits are bounded; no timing is
 * asserted beyond "within the window plus slack" (the bounded waits).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatorFleet, type Child } from "@/bench/child";
import { openTestDb } from "../support/test-db";
import type { DbHandle } from "@/db/types";
import { DEFAULTS, parseConfig } from "@/lib/config";
import { messageIdOf } from "@/lib/notify/grouping";
import type { MessagePayload } from "@/lib/notify/message";
import { startWatcher, type Watcher } from "@/lib/watcher";
import { startHttpReceiver, type HttpReceiver } from "../support/receivers";
import { call, waitFor } from "./sim-support";

const COUNT = 200;
const FAILING = 20;
/** Crashes with them, in maintenance from the config: muted, so in no message. */
const IN_MAINTENANCE = 7;
/** The default group window (10 s); the polls of 20 crashed servers find them within about one interval. */
const WAIT_S = DEFAULTS.notifications.groupWaitSeconds;
/** How long the 20 stay down (the simulator brings them back by itself). */
const DOWN_S = 12;

let dir: string;
let sims: Child;
let urls: string[];
let hook: HttpReceiver;
let handle: DbHandle;
let watcher: Watcher;
const ids = () => urls.map((_, i) => `sim-${String(i).padStart(3, "0")}`);
const labelsOf = (i: number) => ({ site: i % 2 ? "ams" : "fra", rack: `r${i % 5}` });

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-group-fleet-"));
  ({ child: sims, urls } = await startSimulatorFleet(COUNT, 120_000));
  hook = await startHttpReceiver();
  handle = await openTestDb(path.join(dir, "stepwatch.db"));
  const config = parseConfig(
    {
      pollIntervalSeconds: 2,
      // Two refused reads make a proven down at once: the storm is what this test is about.
      startupGraceSeconds: 0,
      backends: urls.map((url, i) => ({ id: ids()[i], url, labels: labelsOf(i) })),
      maintenance: [
        { backends: [ids()[IN_MAINTENANCE]], start: new Date(Date.now() - 3600_000).toISOString(), end: new Date(Date.now() + 3600_000).toISOString(), note: "driver update" },
      ],
      notifications: {
        publicUrl: "http://stepwatch.test",
        recoveredAfterSeconds: 1,
        channels: [
          { id: "ops", type: "webhook", url: `${hook.url}/hook` },
          { id: "chat", type: "slack", url: `${hook.url}/slack` },
          { id: "phone", type: "ntfy", url: `${hook.url}/ntfy` },
        ],
      },
    },
    "test",
    { env: {} },
  );
  watcher = startWatcher({ config, db: handle.db, log: () => {}, flushIntervalMs: 200 });
  await waitFor("all 200 backends read idle", () => ids().every((id) => watcher.current(id)?.verdict?.state === "idle"), 60_000, 200);
}, 240_000);

afterAll(async () => {
  await watcher?.stop();
  handle?.close();
  await hook?.close();
  await sims?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const received = (p: string) => hook.received.filter((r) => r.path === p);
const webhooks = () => received("/hook").map((r) => JSON.parse(r.body) as MessagePayload);

describe("20 of 200 simulated backends failing at once", () => {
  it("make one message per channel within the window, naming all 20; their recoveries one more", async () => {
    // Spread over the fleet, not a block: the monitors poll in slots across the interval.
    const failing = Array.from({ length: FAILING }, (_, k) => k * 10 + 3);
    const failingIds = failing.map((i) => ids()[i]).sort();
    const crashed = [...failing, IN_MAINTENANCE];
    const answers = await Promise.all(crashed.map((i) => call(`${urls[i]}/_sim/mode`, { body: { mode: "crash", forSeconds: DOWN_S } })));
    expect(answers.map((a) => a.status)).toEqual(crashed.map(() => 202));

    // Down takes two refused reads (two intervals), then the window: within 30 s.
    await waitFor("a problem message on every channel", () => ["/hook", "/slack", "/ntfy"].every((p) => received(p).length >= 1), 30_000, 100);
    const problem = webhooks()[0];
    expect(problem).toMatchObject({ group: "problem", count: FAILING, fleetLink: "http://stepwatch.test/" });
    expect(problem.notifications.map((n) => n.backendId).sort()).toEqual(failingIds);
    expect(problem.notifications.every((n) => n.event === "down")).toBe(true);
    for (const n of problem.notifications) {
      const i = ids().indexOf(n.backendId);
      expect(n.labels).toEqual(labelsOf(i));
      expect(n.acknowledgeLink).toBe(`http://stepwatch.test/backends/${n.backendId}#acknowledge`);
    }
    expect(problem.id).toBe(messageIdOf(problem.notifications.map((n) => n.id)));
    for (const p of ["/slack", "/ntfy"]) expect(received(p)[0].headers["x-stepwatch-notification-id"]).toBe(problem.id);
    expect(received("/ntfy")[0].headers.title).toMatch(/^20 backends down: /);
    for (const id of failingIds) expect(received("/ntfy")[0].body).toContain(`- ${id}: `);

    // They come back by themselves after DOWN_S; healthy for recoveredAfterSeconds, then the window.
    await waitFor("a recovered message on every channel", () => ["/hook", "/slack", "/ntfy"].every((p) => received(p).length >= 2), 60_000, 100);
    const back = webhooks()[1];
    expect(back).toMatchObject({ group: "recovered", count: FAILING });
    expect(back.notifications.map((n) => n.backendId).sort()).toEqual(failingIds);
    expect(JSON.parse(received("/slack")[1].body).text).toMatch(/^20 backends recovered: /);

    // Nothing else: one problem and one recovery message per channel, every delivery delivered.
    await new Promise((r) => setTimeout(r, (WAIT_S + 2) * 1000));
    expect(["/hook", "/slack", "/ntfy"].map((p) => received(p).length)).toEqual([2, 2, 2]);
    expect(hook.received.every((r) => r.status === 200)).toBe(true);
  }, 120_000);
});
