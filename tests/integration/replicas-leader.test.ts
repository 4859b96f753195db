/**
 * Replicas on one database: only the leader writes, notifies and restarts (docs/decisions.md
 * "Replicas"). Real parts: the simulator over HTTP, a real SQLite file with one connection per
 * replica, real watchers, the durable outbox delivering to a real webhook receiver on 127.0.0.1,
 * real restart commands. Who leads is a small test double of the lease (lib/core/cluster.ts
 * LeaderGate): a unit of who leads, toggled by the test, its epoch growing with every change of
 * hands as the lease's does. The failover of real processes over PostgreSQL is another file's.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDb } from "@/db/client";
import { type DbHandle } from "@/db/types";
import { insertRestartUnlessBlocked, markRestartStarted, restartEventById } from "@/db/queries/restarts";
import { parseConfig, type Config } from "@/lib/config";
import type { LeaderGate } from "@/lib/core/cluster";
import { startWatcher, type Watcher } from "@/lib/watcher";
import { carryOutWaiting, requestRestart, type RestartDeps } from "@/lib/restart/request";
import { PICKUP_LIMIT_MS } from "@/lib/restart/resolve";
import { restartCommandEnv } from "@/lib/restart/execute";
import { startMaintenance } from "@/lib/oncall/verbs";
import { startSimulator, type Simulator } from "@/sim/server";
import { startHttpReceiver, type HttpReceiver } from "../support/receivers";
import { waitFor } from "./sim-support";

/** Who leads, as the test says; epochs grow with every change of hands, as the lease's (db/pg/lease.ts). */
let lastEpoch = 0;
type Gate = LeaderGate & { lead(): void; resign(): void };
function gate(replicaId: string): Gate {
  let epoch: number | null = null;
  return {
    replicaId,
    isLeader: () => epoch !== null,
    epoch: () => epoch,
    lead: () => void (epoch = ++lastEpoch),
    resign: () => void (epoch = null),
  };
}

let dir: string;
let sim: Simulator;
let hook: HttpReceiver;
const handles: DbHandle[] = [];
const watchers: Watcher[] = [];

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-replicas-"));
  sim = await startSimulator({ weightsLoadSeconds: 0.2 });
  hook = await startHttpReceiver();
});

afterEach(async () => {
  for (const w of watchers.splice(0)) await w.stop();
  for (const h of handles.splice(0)) h.close();
  await sim.close();
  await hook.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const marker = () => path.join(dir, "restarted.txt");

function configOf(): Config {
  return parseConfig(
    {
      pollIntervalSeconds: 0.2,
      startupGraceSeconds: 0,
      backends: [{ id: "gb10", url: sim.url, restart: { command: ["/bin/sh", "-c", `echo ran >> '${marker()}'`] } }],
      notifications: { groupWaitSeconds: 0, channels: [{ id: "hook", type: "webhook", url: `${hook.url}/hook` }] },
    },
    "test",
    { env: {} },
  );
}

/** One replica: its own connection to the shared file, its own watcher, told who leads by `leader`. */
function replica(leader: Gate): { w: Watcher; h: DbHandle; deps: RestartDeps } {
  const h = openDb(path.join(dir, "shared.db"));
  handles.push(h);
  const config = configOf();
  let deps: RestartDeps | null = null;
  const w = startWatcher({
    config,
    db: h.db,
    leader,
    log: () => {},
    flushIntervalMs: 50,
    outbox: { tuning: { firstRetryMs: 30, tickMs: 50 } },
    // As lib/runtime.ts wires it.
    onWaitingRestart: (row) => void carryOutWaiting(row, deps!),
  });
  watchers.push(w);
  deps = {
    db: h,
    backends: config.backends,
    restartCooldownSeconds: config.restartCooldownSeconds,
    commandEnv: restartCommandEnv(process.env, []),
    current: (id) => w.current(id),
    onPending: (id, p) => w.notifyRestartRequested(id, p),
    onResolved: (id, o) => w.notifyRestartResolved(id, o),
    notify: (d) => w.notify(d),
    runs: w.restarts,
  };
  return { w, h, deps };
}

const count = (h: DbHandle, sql: string, ...args: unknown[]) => (h.db.$client.prepare(sql).get(...args) as { n: number }).n;
const transitionsTo = (h: DbHandle, state: string) => count(h, "SELECT count(*) AS n FROM transitions WHERE target_id = 'gb10' AND to_state = ?", state);
const notificationsOf = (h: DbHandle, event: string) => count(h, "SELECT count(*) AS n FROM notifications WHERE event = ?", event);
const delivered = (event: string) => hook.received.filter((r) => r.status === 200 && JSON.parse(r.body).event === event);
/** Polls of a replica from now: its monitor's reading changes every poll. */
async function polls(w: Watcher, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const before = w.backends.get("gb10")?.last?.reading;
    await waitFor(`poll ${i + 1} of ${n}`, () => w.backends.get("gb10")?.last?.reading !== before, 10_000);
  }
}
/** A pending restart of gb10 asked by ana at `requestedAt`, written straight to the database (as a replica gone since would have). */
function pendingRestart(h: DbHandle, requestedAt: number): number {
  const ins = insertRestartUnlessBlocked(
    h.db,
    {
      backendId: "gb10",
      requestedAt,
      requestedBy: "ana",
      note: null,
      state: "stuck",
      healthy: false,
      running: 1,
      waiting: 0,
      processStartTime: null,
      evidence: { reasons: [], readings: [] },
      overrideCooldown: false,
      confirmedHealthy: false,
      action: "command: /bin/sh",
    },
    null,
  );
  if (!("inserted" in ins)) throw new Error("not inserted");
  return ins.inserted.id;
}
const ran = () => (fs.existsSync(marker()) ? fs.readFileSync(marker(), "utf8").trim().split("\n").length : 0);

describe("replicas: only the leader writes, notifies and restarts", () => {
  it("a standby polls and judges, writes no sample, transition or notification, and delivers nothing", async () => {
    const b = replica(gate("b"));
    // A notification a gone leader wrote and never delivered: the standby must not send it.
    b.w.outbox.write({ event: "down", backendId: "gb10", state: "down", previousState: "idle", reasons: [], at: Date.now() });
    await polls(b.w, 3);
    await sim.crash();
    await waitFor("the standby judges down", () => b.w.backends.get("gb10")?.last?.verdict.state === "down", 10_000);
    await polls(b.w, 3);
    expect(await b.w.outbox.deliverDue()).toBe(0);
    expect(b.w.backends.get("gb10")!.storedState).toBe("down"); // judged in memory
    expect(count(b.h, "SELECT count(*) AS n FROM samples")).toBe(0);
    expect(count(b.h, "SELECT count(*) AS n FROM transitions")).toBe(0);
    expect(count(b.h, "SELECT count(*) AS n FROM notifications")).toBe(1); // the gone leader's only
    expect(hook.received).toHaveLength(0);
    expect(b.w.store.queued).toBeLessThan(20); // dropped each flush, never piling up
  }, 60_000);

  it("no double page: a takeover reads back what the dead leader stored and delivers its pending notification, same id", async () => {
    const ga = gate("a");
    const gb = gate("b");
    ga.lead();
    const a = replica(ga);
    const b = replica(gb);
    await waitFor("the leader stores idle", () => transitionsTo(a.h, "idle") === 1, 10_000);
    hook.failFirst = 1_000; // the receiver is down while the leader lives
    await sim.crash();
    await waitFor("the leader stores down and tries to send it", () => transitionsTo(a.h, "down") === 1 && hook.received.length > 0, 15_000);
    const claimed = a.h.db.$client.prepare("SELECT message_uid AS id FROM notification_deliveries").all() as Array<{ id: string }>;
    expect(claimed).toHaveLength(1);
    expect(hook.received[0].headers["x-stepwatch-notification-id"]).toBe(claimed[0].id);

    ga.resign(); // the leader dies: it writes nothing more
    await a.w.stop();
    hook.failFirst = 0;
    gb.lead();
    await waitFor("the new leader delivers the dead leader's page", () => delivered("down").length === 1, 15_000);
    await polls(b.w, 5);
    await b.w.outbox.deliverDue();
    expect(transitionsTo(b.h, "down")).toBe(1);
    expect(notificationsOf(b.h, "down")).toBe(1);
    expect(delivered("down")).toHaveLength(1);
    expect(delivered("down")[0].headers["x-stepwatch-notification-id"]).toBe(claimed[0].id);
  }, 60_000);

  it("no lost page: what happened while nobody led is written once by the new leader, with its notification", async () => {
    const ga = gate("a");
    const gb = gate("b");
    ga.lead();
    const a = replica(ga);
    const b = replica(gb);
    await waitFor("the leader stores idle", () => transitionsTo(a.h, "idle") === 1, 10_000);
    ga.resign();
    await a.w.stop();
    await sim.crash();
    await waitFor("the standby judges down", () => b.w.backends.get("gb10")?.last?.verdict.state === "down", 10_000);
    expect(transitionsTo(b.h, "down")).toBe(0);
    gb.lead();
    await waitFor("the new leader stores down and pages", () => transitionsTo(b.h, "down") === 1 && delivered("down").length === 1, 15_000);
    await polls(b.w, 5);
    await b.w.outbox.deliverDue();
    expect(transitionsTo(b.h, "down")).toBe(1);
    expect(transitionsTo(b.h, "idle")).toBe(1);
    expect(notificationsOf(b.h, "down")).toBe(1);
    expect(delivered("down")).toHaveLength(1);
  }, 60_000);

  it("maintenance asked on a standby reaches the leader: it stores the outage and pages nobody", async () => {
    const ga = gate("a");
    ga.lead();
    const a = replica(ga);
    const b = replica(gate("b"));
    await waitFor("the leader stores idle", () => transitionsTo(a.h, "idle") === 1, 10_000);
    const config = configOf();
    startMaintenance({ backendId: "gb10", by: "ana", minutes: 30, now: Date.now() }, { db: b.h.db, backends: config.backends, book: b.w.book, current: (id) => b.w.current(id) });
    await waitFor("the leader's book has it", () => a.w.book.silenced("gb10", Date.now()) !== null, 10_000);
    await sim.crash();
    await waitFor("the leader stores down", () => transitionsTo(a.h, "down") === 1, 15_000);
    await polls(a.w, 5);
    await a.w.outbox.deliverDue();
    expect(notificationsOf(a.h, "down")).toBe(0);
    expect(hook.received).toHaveLength(0);
  }, 60_000);

  it("a restart asked on a standby is written there and run once, by the replica that leads", async () => {
    const ga = gate("a");
    const gb = gate("b");
    const a = replica(ga);
    const b = replica(gb);
    await polls(b.w, 2);
    const asked = requestRestart({ backendId: "gb10", operator: "ana", confirm: "gb10", now: Date.now() }, b.deps);
    await asked.done;
    expect(asked.evidenceId).toBeNull();
    await polls(a.w, 5); // nobody leads: it waits
    expect(restartEventById(b.h.db, asked.event.id)).toMatchObject({ startedAt: null, outcome: null });
    expect(ran()).toBe(0);

    ga.lead();
    await waitFor("the leader runs it", () => typeof restartEventById(a.h.db, asked.event.id)?.commandFinishedAt === "number", 15_000);
    expect(restartEventById(a.h.db, asked.event.id)).toMatchObject({ startedBy: "a", startedEpoch: ga.epoch(), commandExitCode: 0 });
    ga.resign();
    gb.lead(); // the other one leads next: the row is started, so it runs nothing
    await polls(b.w, 5);
    expect(ran()).toBe(1);
    expect(count(b.h, "SELECT count(*) AS n FROM audit_log WHERE action = 'restart'")).toBe(1);
  }, 60_000);

  it("a restart that waited past the pick-up limit with nobody leading is closed as not run, and says so", async () => {
    const h = openDb(path.join(dir, "shared.db"));
    handles.push(h);
    const id = pendingRestart(h, Date.now() - PICKUP_LIMIT_MS - 60_000);
    const gb = gate("b");
    const b = replica(gb);
    gb.lead();
    await waitFor("closed", () => restartEventById(b.h.db, id)?.outcome === "failed", 10_000);
    expect(restartEventById(b.h.db, id)).toMatchObject({ startedAt: null, commandExitCode: null });
    expect(restartEventById(b.h.db, id)?.resolution).toMatch(/^not run: asked by ana 18\d s ago, and no leader took it up within 120 s/);
    await waitFor("its restart-finished notification", () => hook.received.some((r) => JSON.parse(r.body).event === "restart-finished"), 10_000);
    await polls(b.w, 3);
    expect(ran()).toBe(0);
    // Closed, it is no longer pending: an operator who still wants it asks again (its cooldown counts from
    // the stale request, as every restart's does from its asking: overridden), and that one runs.
    expect(() => requestRestart({ backendId: "gb10", operator: "ana", confirm: "gb10", now: Date.now() }, b.deps)).toThrow(/cooldown/);
    const again = requestRestart({ backendId: "gb10", operator: "ana", confirm: "gb10", overrideCooldown: true, now: Date.now() }, b.deps);
    await again.done;
    await waitFor("the new one runs", () => ran() === 1, 15_000);
  }, 60_000);

  it("a restart started by a leader that died mid-command is resolved outcome unknown at takeover, never run again", async () => {
    const h = openDb(path.join(dir, "shared.db"));
    handles.push(h);
    const id = pendingRestart(h, Date.now());
    expect(markRestartStarted(h.db, id, { at: Date.now(), replicaId: "gone", epoch: 41 })).toBe(true);

    const gb = gate("b");
    const b = replica(gb);
    await polls(b.w, 3);
    expect(restartEventById(b.h.db, id)?.outcome).toBeNull(); // a standby resolves nothing
    gb.lead();
    await waitFor("outcome unknown", () => restartEventById(b.h.db, id)?.outcome === "unknown", 10_000);
    expect(restartEventById(b.h.db, id)?.resolution).toContain("gone (epoch 41)");
    await waitFor("its restart-finished notification", () => hook.received.some((r) => JSON.parse(r.body).event === "restart-finished"), 10_000);
    const sent = JSON.parse(hook.received.find((r) => JSON.parse(r.body).event === "restart-finished")!.body);
    expect(sent.details).toMatchObject({ restartId: id, outcome: "unknown" });
    await polls(b.w, 5);
    expect(ran()).toBe(0);
    expect(restartEventById(b.h.db, id)?.commandFinishedAt).toBeNull();
  }, 60_000);
});
