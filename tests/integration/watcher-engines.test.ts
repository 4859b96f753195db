/**
 * The real watcher (poll loops, observe, the store) against the simulator over real HTTP, with a
 * real SQLite file: going to sleep and waking up are transitions recorded like any other, the fleet
 * view carries the engine and a configuration problem, and nothing is probed while asleep.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDb } from "@/db/client";
import { type DbHandle } from "@/db/types";
import { transitionsInRange } from "@/db/queries/readings";
import { fleetSnapshot } from "@/lib/api/snapshot";
import { parseConfig } from "@/lib/config";
import { startSimulator, type Simulator } from "@/sim/server";
import { startWatcher, type Watcher } from "@/lib/watcher";
import { call, waitFor } from "./sim-support";

let dir = "";
let h: DbHandle | null = null;
const sims: Simulator[] = [];
let watcher: Watcher | null = null;
afterEach(async () => {
  await watcher?.stop();
  watcher = null;
  await Promise.all(sims.splice(0).map((s) => s.close()));
  h?.close();
  h = null;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function setup(backends: Array<{ id: string; sim: Simulator; extra?: Record<string, unknown> }>) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-engines-"));
  h = openDb(path.join(dir, "w.db"));
  const config = parseConfig(
    {
      pollIntervalSeconds: 0.2,
      idleProbeSeconds: 60,
      backends: backends.map((b) => ({ id: b.id, url: b.sim.url, ...b.extra })),
    },
    "test",
    { env: {} },
  );
  watcher = startWatcher({ config, db: h.db, log: () => {}, flushIntervalMs: 100 });
  const snap = () => fleetSnapshot(watcher!, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 0.2 });
  const backend = (id: string) => snap().backends.find((b) => b.id === id)!;
  return { backend };
}

describe("the watcher over real HTTP", () => {
  it("idle -> sleeping -> idle: each a recorded transition; no probe while asleep", async () => {
    const s = await startSimulator({ weightsLoadSeconds: 0.2 });
    sims.push(s);
    const { backend } = await setup([{ id: "a", sim: s }]);
    await waitFor("idle", () => backend("a").state === "idle", 15_000);
    expect(backend("a").engine).toBe("vllm");
    await call(`${s.url}/sleep?level=1`, { method: "POST" });
    s.resetLog();
    await waitFor("sleeping", () => backend("a").state === "sleeping", 15_000);
    await new Promise((r) => setTimeout(r, 800)); // a few more polls while asleep
    expect(s.received().filter((r) => r.completion)).toHaveLength(0);
    expect(backend("a")).toMatchObject({ healthy: true, restartRecommended: false });
    await call(`${s.url}/wake_up`, { method: "POST" });
    // Awake again: the same process, whose probe answered before the sleep, so zeros keep it idle.
    await waitFor("idle again", () => backend("a").state === "idle", 15_000);
    await waitFor("transitions stored", () => transitionsInRange(h!.db, "backend", "a", 0, Date.now() + 1000).length >= 3, 5000);
    const seen = transitionsInRange(h!.db, "backend", "a", 0, Date.now() + 1000).map((t) => t.toState);
    expect(seen).toEqual(expect.arrayContaining(["idle", "sleeping"]));
    expect(seen.indexOf("sleeping")).toBeGreaterThan(seen.indexOf("idle"));
    expect(seen.lastIndexOf("idle")).toBeGreaterThan(seen.indexOf("sleeping"));
  });

  it("a backend whose probe needs the API key shows the configuration problem in /api/fleet's view", async () => {
    const s = await startSimulator({ weightsLoadSeconds: 0.2, apiKey: "sk-right" });
    sims.push(s);
    const { backend } = await setup([{ id: "k", sim: s }]);
    await waitFor("the probe's answer", () => backend("k").configProblem !== null, 15_000);
    expect(backend("k")).toMatchObject({ state: "unknown", configProblem: "the probe needs the API key: 401", restartRecommended: false });
  });
});
