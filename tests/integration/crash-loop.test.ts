/**
 * Crash loops against real parts: the simulator over HTTP restarted from outside (as systemd's
 * Restart= would), the real watcher reading it, a real SQLite file, the durable outbox delivering
 * to a real webhook receiver on 127.0.0.1. Three new processes in five minutes that stepwatch did
 * not ask for raise exactly one `crash-loop`; a fourth in the same loop raises none; a restart
 * stepwatch asked for is recorded as its own and never counted.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { processStartsBetween } from "@/db/queries/processes";
import { insertRestartUnlessBlocked } from "@/db/queries/restarts";
import { parseConfig } from "@/lib/config";
import { startWatcher, type Watcher } from "@/lib/watcher";
import { fleetSnapshot } from "@/lib/api/snapshot";
import { startSimulator, type Simulator } from "@/sim/server";
import { startHttpReceiver, type HttpReceiver } from "../support/receivers";
import { call, waitFor } from "./sim-support";

let dir: string;
let h: DbHandle;
let sim: Simulator;
let hook: HttpReceiver;
let watcher: Watcher | null = null;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-crashloop-"));
  h = await openTestDb(path.join(dir, "c.db"));
  sim = await startSimulator({ weightsLoadSeconds: 0.2 });
  hook = await startHttpReceiver();
});

afterEach(async () => {
  await watcher?.stop();
  watcher = null;
  await sim.close();
  await hook.close();
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function start(extra: Record<string, unknown> = {}): Watcher {
  const config = parseConfig(
    {
      pollIntervalSeconds: 0.2,
      backends: [{ id: "gb10", url: sim.url, ...extra }],
      notifications: { channels: [{ id: "hook", type: "webhook", url: `${hook.url}/hook` }] },
    },
    "test",
    { env: {} },
  );
  watcher = startWatcher({ config, db: h.db, log: () => {}, flushIntervalMs: 50, outbox: { tuning: { firstRetryMs: 30, tickMs: 50 } } });
  return watcher;
}

const starts = () => processStartsBetween(h.db, "gb10", 0, Number.MAX_SAFE_INTEGER);
const crashLoops = () => hook.received.filter((r) => JSON.parse(r.body).event === "crash-loop").map((r) => JSON.parse(r.body));

/** Restart the simulator from outside stepwatch and wait until the watcher has stored the new process. */
async function restartFromOutside(): Promise<void> {
  const before = starts().length;
  const r = await call(`${sim.url}/_sim/restart`, { body: { weightsLoadSeconds: 0.2 } });
  expect(r.status).toBe(202);
  await waitFor(`new process ${before + 1} stored`, () => starts().length === before + 1, 15_000);
}

describe("crash loops", () => {
  it("three restarts by something else within five minutes: one crash-loop notification, the flag on the fleet; a fourth adds none", async () => {
    const w = start();
    await waitFor("the first reading", () => w.backends.get("gb10")?.last?.reading.metrics, 10_000);
    await restartFromOutside();
    await restartFromOutside();
    expect(w.backends.get("gb10")!.crashLoop(Date.now())).toBeNull();
    await restartFromOutside();
    await waitFor("the crash-loop delivery", () => crashLoops().length > 0, 15_000);
    await restartFromOutside(); // the same loop goes on
    // The fourth's notification, were there one, is written in the same flush as its process_starts row.
    await w.outbox.deliverDue();
    expect(crashLoops()).toHaveLength(1);
    const [n] = crashLoops();
    expect(n).toMatchObject({ backendId: "gb10", details: { restarts: 3, threshold: 3, windowMinutes: 5 } });
    expect(n.reasons[0].rule).toBe("crash-loop");
    expect(starts().map((s) => s.byStepwatch)).toEqual([false, false, false, false]);

    const row = fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 0.2 }).backends.find((b) => b.id === "gb10")!;
    expect(row.crashLoop).toMatchObject({ restarts: 4, windowMinutes: 5 });
  }, 60_000);

  it("a restart stepwatch asked for is recorded as stepwatch's and is not counted; two by others stay under the rule", async () => {
    const w = start({ restart: { command: ["/bin/true"] } });
    await waitFor("the first reading", () => w.backends.get("gb10")?.last?.reading.metrics, 10_000);
    const m = w.backends.get("gb10")!.last!.reading.metrics!;
    const ins = insertRestartUnlessBlocked(
      h.db,
      {
        backendId: "gb10",
        requestedAt: Date.now(),
        requestedBy: "alice",
        note: null,
        state: "idle",
        healthy: true,
        running: 0,
        waiting: 0,
        processStartTime: m.processStartTime,
        evidence: { reasons: [], readings: [] },
        overrideCooldown: false,
        confirmedHealthy: true,
        action: "command: /bin/true",
      },
      null,
    );
    expect("inserted" in ins).toBe(true);
    w.notifyRestartRequested("gb10");
    await restartFromOutside(); // the restart stepwatch's command would have made
    await restartFromOutside();
    await restartFromOutside();
    expect(starts().map((s) => s.byStepwatch)).toEqual([true, false, false]);
    expect(starts()[0].restartId).toBe("inserted" in ins ? ins.inserted.id : -1);
    await w.outbox.deliverDue();
    expect(crashLoops()).toHaveLength(0);
    expect(w.backends.get("gb10")!.crashLoop(Date.now())).toBeNull();
  }, 60_000);
});
