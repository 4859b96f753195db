/**
 * The watcher with read threads (lib/watcher/read-pool.ts), against simulators over real HTTP and a
 * real SQLite file: the threads ask the backends (the watcher's own thread opens no connection to
 * them), and what they read is judged as it is without threads, probe and stuck included. A thread
 * that dies loses the reads it had, and nothing is judged from them; the next read starts a new one.
 * A reload that moves a backend to another URL is read there.
 */
import diagnostics from "node:diagnostics_channel";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDb } from "@/db/client";
import { type DbHandle } from "@/db/types";
import { statusRoutesOf } from "@/lib/restart/evidence";
import { transitionsInRange } from "@/db/queries/readings";
import { parseConfig, type Config } from "@/lib/config";
import { startSimulator, type Simulator } from "@/sim/server";
import { startWatcher, type Watcher } from "@/lib/watcher";
import { MAX_START_FAILURES, startReadPool } from "@/lib/watcher/read-pool";
import { Worker } from "node:worker_threads";
import { waitFor } from "./sim-support";

let dir = "";
let h: DbHandle | null = null;
const sims: Simulator[] = [];
let watcher: Watcher | null = null;
const logs: string[] = [];
afterEach(async () => {
  await watcher?.stop();
  watcher = null;
  await Promise.all(sims.splice(0).map((s) => s.close()));
  h?.close();
  h = null;
  logs.length = 0;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function sim(opts: Parameters<typeof startSimulator>[0] = {}): Promise<Simulator> {
  const s = await startSimulator({ weightsLoadSeconds: 0, ...opts });
  sims.push(s);
  return s;
}

function configOf(backends: Array<{ id: string; url: string }>, extra: Record<string, unknown> = {}): Config {
  return parseConfig({ pollIntervalSeconds: 0.2, stuckAfterSeconds: 1, idleProbeSeconds: 1, readThreads: 1, backends, ...extra }, "test", { env: {} });
}

function start(config: Config): Watcher {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-read-threads-"));
  h = openDb(path.join(dir, "w.db"));
  watcher = startWatcher({ config, db: h.db, log: (m) => logs.push(m), flushIntervalMs: 100 });
  return watcher;
}

const stateOf = (id: string) => watcher!.backends.get(id)?.last?.verdict.state;

describe("read threads", () => {
  it("read every backend off the watcher's thread, and what they read is judged as without them: idle with a probe, stuck", async () => {
    const idle = await sim();
    const hung = await sim();
    // Connections this thread opens (undici's channel is per thread): none should go to the simulators.
    const opened: string[] = [];
    const onConnect = (m: unknown) => {
      const p = (m as { connectParams: { protocol: string; host: string } }).connectParams;
      opened.push(`${p.protocol}//${p.host}`);
    };
    diagnostics.subscribe("undici:client:connected", onConnect);
    try {
      const w = start(configOf([
        { id: "idle", url: idle.url },
        { id: "hung", url: hung.url },
      ]));
      expect(w.readPool?.threads).toBe(1);
      expect(logs.some((l) => l.includes("1 read thread"))).toBe(true);
      await waitFor("both judged", () => stateOf("idle") === "idle" && stateOf("hung") === "idle", 20_000);
      // The idle probe went out through the thread too (a completion the simulator received).
      await waitFor("a probe", () => idle.received().some((r) => r.completion), 20_000);
      expect(w.backends.get("idle")!.last!.reading.engine).toBe("vllm");
      // An engine that stops stepping with work queued: stuck, from the history the watcher keeps.
      await hung.setMode("waiting-hang", { waiting: 2 });
      await waitFor("stuck", () => stateOf("hung") === "stuck", 20_000);
      expect(stateOf("idle")).toBe("idle");
      await w.stop();
      const toStates = transitionsInRange(h!.db, "backend", "hung", 0, Date.now() + 1000).map((t) => t.toState);
      expect(toStates).toContain("stuck");
      expect(idle.received().filter((r) => r.kind === "metrics").length).toBeGreaterThan(2);
      expect(opened.filter((o) => o === new URL(idle.url).origin)).toEqual([]);
      // The stuck one's incident was captured once (lib/watcher/evidence.ts): its status GETs are
      // made on this thread, like a restart's webhook; its reads never are.
      expect(opened.filter((o) => o === new URL(hung.url).origin).length).toBeLessThanOrEqual(statusRoutesOf("vllm").length);
    } finally {
      diagnostics.unsubscribe("undici:client:connected", onConnect);
    }
  });

  it("a thread that dies loses its reads and nothing is judged from them; the next read starts a new thread", async () => {
    const slow = await sim({ slowMetricsSeconds: 30 });
    const w = start(configOf([{ id: "a", url: slow.url }], { pollIntervalSeconds: 0.3 }));
    await waitFor("idle", () => stateOf("a") === "idle", 20_000);
    // /metrics now answers after 30 s: the next read waits on the thread, and the thread dies.
    await slow.setMode("slow-metrics");
    slow.resetLog();
    await waitFor("a /metrics waiting on the thread", () => slow.received().some((r) => r.kind === "metrics"), 5_000);
    const before = w.backends.get("a")!.history.length;
    const dead = w.readPool!.workers()[0]!;
    await dead.terminate();
    await waitFor("the loss logged", () => logs.some((l) => /read thread 0 stopped/.test(l) && /lost, and nothing is judged/.test(l)), 5_000);
    expect(logs.some((l) => l.includes("poll of backend a failed"))).toBe(true);
    // Nothing was recorded from the lost read: no reading, no change of state.
    expect(w.backends.get("a")!.history.length).toBe(before);
    expect(stateOf("a")).toBe("idle");
    // The simulator answers again: a new thread reads it.
    await slow.setMode("normal");
    await waitFor("read again", () => w.backends.get("a")!.history.length > before, 20_000);
    const fresh = w.readPool!.workers()[0];
    expect(fresh).not.toBeNull();
    expect(fresh).not.toBe(dead);
    expect(w.backends.get("a")!.last!.reading.outcome).toBe("ok");
  });

  it("a reload that moves a backend to another URL is read there by its thread", async () => {
    const first = await sim();
    const second = await sim();
    const w = start(configOf([{ id: "a", url: first.url }]));
    await waitFor("idle", () => stateOf("a") === "idle", 20_000);
    w.apply(configOf([{ id: "a", url: second.url }]));
    second.resetLog();
    await waitFor("read at the new URL", () => second.received().filter((r) => r.kind === "metrics").length >= 2, 20_000);
    first.resetLog();
    await new Promise((r) => setTimeout(r, 700));
    expect(first.received().filter((r) => r.kind === "metrics")).toEqual([]);
    expect(w.backends.get("a")!.last!.reading.outcome).toBe("ok");
  });

  const cannotStart: Array<[string, (name: string) => Worker]> = [
    ["a thread script that throws at once", (name) => new Worker("throw new Error('no read-worker chunk in this build')", { eval: true, name })],
    [
      "a thread that cannot even be created",
      () => {
        throw new Error("no read-worker chunk in this build");
      },
    ],
  ];
  it.each(cannotStart)("threads that cannot start here (%s): after a few tries the reads are made on the watcher's thread, said once in the log", async (_, make) => {
    const s = await sim();
    let spawned = 0;
    const pool = startReadPool(1, (m) => logs.push(m), (name) => {
      spawned++;
      return make(name);
    });
    try {
      const reader = pool.readerOf("a");
      const outcomes: string[] = [];
      for (let i = 0; i < MAX_START_FAILURES + 2; i++) {
        outcomes.push(await reader.read({ url: s.url }, { timeoutMs: 2000 }).then((r) => r.outcome, (e: Error) => `lost: ${e.message}`));
        await new Promise((r) => setTimeout(r, 50));
      }
      // Lost while the pool still tried threads, then read here: an ok reading, never a failed one made up.
      expect(outcomes.at(-1)).toBe("ok");
      expect(outcomes.filter((o) => o.startsWith("lost")).length).toBeLessThanOrEqual(MAX_START_FAILURES);
      expect(outcomes.every((o) => o === "ok" || /no read-worker chunk|could not start/.test(o))).toBe(true);
      expect(spawned).toBe(MAX_START_FAILURES);
      expect(logs.filter((l) => l.includes("read threads cannot start here"))).toHaveLength(1);
      expect(s.received().filter((r) => r.kind === "metrics").length).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  });
});
