import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { failInserts, openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { listRestartEvents } from "@/db/queries/restarts";
import { insertSamples, lastTransition, sampleRow } from "@/db/queries/readings";
import { restartEvents, transitions } from "@/db/schema";
import { restartRecommended, STATE_INFO, type BackendState } from "@/lib/core/states";
import { type PendingRestart, type ProxyReading, type Reading, type Verdict, reason } from "@/lib/core/types";
import { parseConfig, type Config } from "@/lib/config";
import { RETENTION_CHUNK, SLOT_TICK_MS, readLeadMs, slotOffset, startWatcher, type Watcher, type WatcherOptions } from "@/lib/watcher";
import { fleetSnapshot } from "@/lib/api/snapshot";
import { requestUnattendedRestart } from "@/lib/oncall/unattended";
import { unattendedDeps } from "@/lib/runtime";

const T0 = Date.UTC(2025, 0, 1);
let dir: string;
let h: DbHandle;
let watchers: Watcher[] = [];

beforeEach(async () => {
  vi.useFakeTimers({ now: T0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-watch-"));
  h = await openTestDb(path.join(dir, "w.db"));
});
afterEach(async () => {
  for (const w of watchers) await w.stop();
  watchers = [];
  vi.useRealTimers();
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function config(extra: Record<string, unknown> = {}): Config {
  return parseConfig(
    {
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      idleProbeSeconds: 2,
      startupGraceSeconds: 5,
      recoveryTimeoutSeconds: 10,
      backends: [
        { id: "fast", url: "http://127.0.0.1:1", apiKey: "sk-hidden", restart: { command: ["/bin/true"] } },
        { id: "slow", url: "http://127.0.0.1:2" },
      ],
      proxies: [{ id: "lb", url: "http://127.0.0.1:3" }],
      ...extra,
    },
    "test",
    { env: {} },
  );
}

function reading(at: number, start = 1000): Reading {
  return {
    at,
    latencyMs: 1,
    outcome: "ok",
    metrics: { processStartTime: start, running: 1, waiting: 0, steps: at, promptTokens: 0, generationTokens: at, finishedRequests: 0, kvCacheUsage: 0.1, models: ["m"] },
  };
}
function verdict(state: BackendState, extra: Partial<Verdict> = {}): Verdict {
  return {
    state,
    health: STATE_INFO[state].health,
    healthy: STATE_INFO[state].health === "yes",
    restartRecommended: restartRecommended(state),
    reasons: [reason("unclassified", `${state} because`)],
    rates: { stepsPerSecond: 5, generationTokensPerSecond: 7, promptTokensPerSecond: 0 },
    basis: [],
    ...extra,
  };
}

type Call = { id: string; at: number; history: Reading[]; pending: PendingRestart | null | undefined };

function start(
  opts: Partial<WatcherOptions> & { states?: Record<string, () => BackendState>; slowMs?: number; verdictExtra?: () => Partial<Verdict> } = {},
) {
  const calls: Call[] = [];
  const states = opts.states ?? {};
  const w = startWatcher({
    config: opts.config ?? config(),
    db: h.db,
    log: () => {},
    // Round slots (0, 5000, 10000 ...): the lead of the shipped schedule has a test of its own.
    readLeadMs: () => 0,
    observe: async (target, history, ctx) => {
      const id = target.url.endsWith(":1") ? "fast" : "slow";
      const at = Date.now();
      calls.push({ id, at, history, pending: ctx.pendingRestart });
      if (id === "slow") {
        // Hangs far past the interval, until its deadline or an abort (as the real reader does).
        await new Promise<void>((r) => {
          const t = setTimeout(r, opts.slowMs ?? 60_000);
          ctx.read?.signal?.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
        });
      }
      const state = states[id]?.() ?? "busy";
      const extra = id === "fast" ? (opts.verdictExtra?.() ?? {}) : {};
      return { reading: reading(at), verdict: verdict(state, { ...(state === "idle" && ctx.pendingRestart ? { recovered: true } : {}), ...extra }) };
    },
    readProxy: async (_t, _o): Promise<ProxyReading> => ({ at: Date.now(), latencyMs: 1, outcome: "ok", models: ["m"] }),
    ...opts,
  });
  watchers.push(w);
  return { w, calls };
}

describe("watcher", () => {
  it("shows backend and proxy URLs without their userinfo or query (marked ***)", () => {
    const c = config({ backends: [{ id: "fast", url: "http://ops:pw-hidden@127.0.0.1:1" }], proxies: [{ id: "lb", url: "http://127.0.0.1:3/?token=tok-hidden" }] });
    const { w } = start({ config: c });
    const snap = fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 5 });
    expect(snap.backends[0].url).toBe("http://***@127.0.0.1:1");
    expect(snap.proxies[0].url).toBe("http://127.0.0.1:3/?***");
  });

  it("a slow backend never delays another; reads of one backend never overlap", async () => {
    const { w, calls } = start();
    await vi.advanceTimersByTimeAsync(5500);
    const fast = calls.filter((c) => c.id === "fast").map((c) => c.at - T0);
    const slow = calls.filter((c) => c.id === "slow");
    expect(fast).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
    expect(slow).toHaveLength(1); // still in its first read: no second read piled on
    // Each read of "fast" saw the earlier ones as history.
    expect(calls.filter((c) => c.id === "fast").at(-1)!.history).toHaveLength(5);
    const snap = fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 5 });
    expect(snap.backends.map((b) => [b.id, b.state])).toEqual([
      ["fast", "busy"],
      ["slow", "unknown"],
    ]);
    expect(snap.proxies[0]).toMatchObject({ id: "lb", state: "up", models: ["m"] });
    expect(JSON.stringify(snap)).not.toContain("sk-hidden");
    expect(JSON.stringify(snap)).not.toContain("/bin/true");
  });

  it("slots: an even share of the interval rounded down to a tick; 1000 backends read 20 at a time", () => {
    expect(slotOffset(0, 1, 5000)).toBe(0);
    expect(Array.from({ length: 10 }, (_, i) => slotOffset(i, 10, 5000))).toEqual([0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500]);
    const thousand = Array.from({ length: 1000 }, (_, i) => slotOffset(i, 1000, 5000));
    const perSlot = new Map<number, number>();
    for (const o of thousand) perSlot.set(o, (perSlot.get(o) ?? 0) + 1);
    expect([...perSlot.keys()]).toEqual(Array.from({ length: 5000 / SLOT_TICK_MS }, (_, k) => k * SLOT_TICK_MS));
    expect(new Set(perSlot.values())).toEqual(new Set([20]));
  });

  it("every backend reads at its own slot, round after round, from the watcher's start", async () => {
    const backends = Array.from({ length: 12 }, (_, i) => ({ id: `b${i}`, url: `http://127.0.0.1:${100 + i}` }));
    const times = new Map<string, number[]>();
    start({
      config: config({ pollIntervalSeconds: 5, backends, proxies: [] }),
      observe: async (target) => {
        const at = Date.now();
        times.set(target.url, [...(times.get(target.url) ?? []), at - T0]);
        return { reading: reading(at), verdict: verdict("busy") };
      },
    });
    await vi.advanceTimersByTimeAsync(14_999);
    const slots = backends.map((_, i) => slotOffset(i, 12, 5000));
    expect(slots).toEqual([0, 400, 800, 1200, 1600, 2000, 2500, 2900, 3300, 3700, 4100, 4500]);
    expect(backends.map((b) => times.get(b.url))).toEqual(slots.map((s) => [s, s + 5000, s + 10_000]));
  });

  it("as shipped, reads a target again 1% of the interval (at most 50 ms) sooner than a whole interval after its last read", async () => {
    // readLeadMs: a server's idle keep-alive timer (uvicorn's 5 s) starts at its answer; a read an
    // exact interval later raced it.
    expect([readLeadMs(5000), readLeadMs(1000), readLeadMs(60_000)]).toEqual([50, 10, 50]);
    const backends = [{ id: "b0", url: "http://127.0.0.1:100" }, { id: "b1", url: "http://127.0.0.1:101" }];
    const times = new Map<string, number[]>();
    start({
      config: config({ pollIntervalSeconds: 5, backends, proxies: [] }),
      readLeadMs: undefined,
      observe: async (target) => {
        const at = Date.now();
        times.set(target.url, [...(times.get(target.url) ?? []), at - T0]);
        return { reading: reading(at), verdict: verdict("busy") };
      },
    });
    await vi.advanceTimersByTimeAsync(15_000);
    expect(backends.map((b) => times.get(b.url))).toEqual([
      [0, 4950, 9900, 14_850],
      [2500, 7450, 12_400],
    ]);
  });

  it("abort (stop) ends every loop, also a read in flight, and writes what is queued", async () => {
    const { w } = start();
    await vi.advanceTimersByTimeAsync(2500);
    await w.stop();
    expect(w.signal.aborted).toBe(true);
    const n = (h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples").get() as { c: number }).c;
    expect(n).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("stores a transition only on a change, and not again after a restart of stepwatch", async () => {
    let s: BackendState = "busy";
    const first = start({ states: { fast: () => s }, config: config({ backends: [{ id: "fast", url: "http://127.0.0.1:1" }], proxies: [] }) });
    await vi.advanceTimersByTimeAsync(2500);
    s = "stalled";
    await vi.advanceTimersByTimeAsync(2000);
    await first.w.stop();
    const rows = h.db.select().from(transitions).all();
    expect(rows.map((r) => [r.fromState, r.toState])).toEqual([
      [null, "busy"],
      ["busy", "stalled"],
    ]);
    expect(rows[1].reasons).toEqual([{ rule: "unclassified", text: "stalled because" }]);

    // A new process of stepwatch: seeded from the DB, same state => no duplicate transition.
    const second = start({ states: { fast: () => s }, config: config({ backends: [{ id: "fast", url: "http://127.0.0.1:1" }], proxies: [] }) });
    await vi.advanceTimersByTimeAsync(10);
    expect(second.calls[0].history.map((r) => r.at - T0)).toEqual([0, 1000, 2000, 3000, 4000]); // stored readings reloaded
    await vi.advanceTimersByTimeAsync(2000);
    await second.w.stop();
    expect(h.db.select().from(transitions).all()).toHaveLength(2);
    expect(second.w.backends.get("fast")!.since).toBe(rows[1].at);
  });

  it("seeds only readings inside the history window", async () => {
    const cfg = config({ backends: [{ id: "fast", url: "http://127.0.0.1:1" }], proxies: [] });
    // window = max(3 * 3 s, 2 * 2 s, 5 s + 3 s) = 9 s
    insertSamples(h.db, [T0 - 20_000, T0 - 8_000, T0 - 1_000].map((at) => sampleRow("fast", reading(at), verdict("busy"))));
    const { calls } = start({ config: cfg });
    await vi.advanceTimersByTimeAsync(10);
    expect(calls[0].history.map((r) => r.at - T0)).toEqual([-8000, -1000]);
  });

  it("passes the pending restart to observe and resolves it as recovered, with the downtime", async () => {
    const row = h.db
      .insert(restartEvents)
      .values({ backendId: "fast", requestedAt: T0 - 4000, requestedBy: "ana", stateAtRequest: "stuck", healthyAtRequest: false, evidence: { reasons: [], readings: [] }, action: "command: /bin/true", processStartTimeAtRequest: 1000 })
      .returning()
      .get();
    let s: BackendState = "restarting";
    const { w, calls } = start({ states: { fast: () => s } });
    await vi.advanceTimersByTimeAsync(10);
    expect(calls[0].pending).toEqual({ requestedAt: T0 - 4000, processStartTime: 1000 });
    expect(fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 5 }).backends[0]).toMatchObject({
      pendingRestartId: row.id,
      cooldownUntil: T0 - 4000 + 600_000,
      restartConfigured: true,
    });
    s = "idle";
    await vi.advanceTimersByTimeAsync(1000);
    const ev = listRestartEvents(h.db)[0];
    expect(ev).toMatchObject({ outcome: "recovered", recoveredAt: T0 + 1000, downtimeSeconds: 5 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls.filter((c) => c.id === "fast").at(-1)!.pending).toBeNull();
    expect(fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 5 }).backends[0].pendingRestartId).toBeNull();
  });

  it("sees a restart another process recorded within a second, before its next poll (one query a second for every backend)", async () => {
    const { w, calls } = start({ config: config({ pollIntervalSeconds: 5, backends: [{ id: "fast", url: "http://127.0.0.1:1", restart: { command: ["/bin/true"] } }], proxies: [] }) });
    await vi.advanceTimersByTimeAsync(10);
    expect(calls.at(-1)!.pending).toBeNull();
    // Written straight into the database, as a second stepwatch sharing it would: no notification.
    const row = h.db
      .insert(restartEvents)
      .values({ backendId: "fast", requestedAt: Date.now(), requestedBy: "ana", stateAtRequest: "stuck", healthyAtRequest: false, evidence: { reasons: [], readings: [] }, action: "x", processStartTimeAtRequest: 1000 })
      .returning()
      .get();
    const snap = () => fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 5 }).backends[0];
    expect(snap().pendingRestartId).toBeNull();
    await vi.advanceTimersByTimeAsync(1000);
    expect(snap().pendingRestartId).toBe(row.id);
    const polls = calls.length;
    await vi.advanceTimersByTimeAsync(4000);
    expect(calls.length).toBe(polls + 1);
    expect(calls.at(-1)!.pending).toEqual({ requestedAt: row.requestedAt, processStartTime: 1000 });
  });

  it("tells its telemetry each restart it resolved, once, and each read", async () => {
    h.db
      .insert(restartEvents)
      .values({ backendId: "fast", requestedAt: T0, requestedBy: "ana", stateAtRequest: "stuck", healthyAtRequest: false, evidence: { reasons: [], readings: [] }, action: "x" })
      .run();
    const resolved: string[] = [];
    const reads: string[] = [];
    const telemetry = {
      pollLag() {},
      read: (kind: string, _ms: number, outcome: string) => void reads.push(`${kind} ${outcome}`),
      storageError() {},
      restartResolved: (id: string, outcome: string) => void resolved.push(`${id} ${outcome}`),
      notificationChannel() {},
      notificationFailed() {},
    };
    start({ states: { fast: () => "restarting" }, telemetry, config: config({ backends: [{ id: "fast", url: "http://127.0.0.1:1" }] }) });
    await vi.advanceTimersByTimeAsync(13_500);
    expect(resolved).toEqual(["fast timed-out"]);
    expect(reads).toContain("backend ok");
    expect(reads).toContain("proxy ok");
  });

  it("times a restart out after recoveryTimeoutSeconds", async () => {
    h.db
      .insert(restartEvents)
      .values({ backendId: "fast", requestedAt: T0, requestedBy: "ana", stateAtRequest: "stuck", healthyAtRequest: false, evidence: { reasons: [], readings: [] }, action: "x" })
      .run();
    start({ states: { fast: () => "restarting" } });
    await vi.advanceTimersByTimeAsync(9500);
    expect(listRestartEvents(h.db)[0].outcome).toBeNull();
    await vi.advanceTimersByTimeAsync(2000);
    expect(listRestartEvents(h.db)[0]).toMatchObject({ outcome: "timed-out", recoveredAt: null });
  });

  it("when writes fail, polling and the live view go on, the error is shown, and the queue is written later", async () => {
    const { w, calls } = start({ config: config({ backends: [{ id: "fast", url: "http://127.0.0.1:1" }], proxies: [] }) });
    const diskBack = failInserts(h, "samples", "database or disk is full");
    await vi.advanceTimersByTimeAsync(3500);
    const snap = fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 5 });
    expect(snap.storageError).toMatch(/disk is full/);
    expect(snap.backends[0]).toMatchObject({ state: "busy", lastReadAt: T0 + 3000 });
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples").get()).toEqual({ c: 0 });
    expect(lastTransition(h.db, "backend", "fast")).toBeUndefined();
    diskBack();
    await vi.advanceTimersByTimeAsync(1000);
    expect(w.store.storageError).toBeNull();
    await w.stop();
    // Every reading taken while the disk was "full" is stored now, none twice.
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples").get()).toEqual({ c: calls.length });
    expect(calls.length).toBeGreaterThanOrEqual(5);
    expect(lastTransition(h.db, "backend", "fast")?.toState).toBe("busy");
  });

  it("the write queue is bounded", async () => {
    const { w } = start({ storeLimits: { maxQueuedSamples: 3, maxQueuedTransitions: 10 }, config: config({ backends: [{ id: "fast", url: "http://127.0.0.1:1" }], proxies: [] }) });
    const diskBack = failInserts(h, "samples", "disk full");
    await vi.advanceTimersByTimeAsync(6500);
    expect(w.store.dropped).toBe(4);
    diskBack();
    await vi.advanceTimersByTimeAsync(1000);
    expect((h.sqlite.prepare("SELECT MIN(at) AS first FROM samples").get() as { first: number }).first - T0).toBe(4000);
  });

  it("proxies: unknown after one failure, down after two, with kind proxy transitions", async () => {
    let ok = true;
    const { w } = start({
      config: config({ backends: [], proxies: [{ id: "lb", url: "http://127.0.0.1:3" }] }),
      readProxy: async () => (ok ? { at: Date.now(), latencyMs: 1, outcome: "ok", models: ["a", "b"] } : { at: Date.now(), latencyMs: 1, outcome: "refused", error: "ECONNREFUSED", models: [] }),
    });
    await vi.advanceTimersByTimeAsync(1500);
    ok = false;
    await vi.advanceTimersByTimeAsync(2000);
    expect(w.proxies.get("lb")!.state).toBe("down");
    await w.stop();
    const rows = h.db.select().from(transitions).all();
    expect(rows.map((r) => [r.kind, r.fromState, r.toState])).toEqual([
      ["proxy", null, "up"],
      ["proxy", "up", "unknown"],
      ["proxy", "unknown", "down"],
    ]);
  });

  it("runs retention periodically with the injected clock", async () => {
    const cfg = config({ backends: [], proxies: [], retention: { rawHours: 1, rollupDays: 1 } });
    // 23.5 h old: past rawHours now, past rollupDays after the next hourly run. Simulating a whole
    // day fired every other timer of the watcher (once a second) 86,400 times: 30 s on a loaded machine.
    insertSamples(h.db, [sampleRow("gone", reading(T0 - 23.5 * 3600_000), verdict("busy"))]);
    start({ config: cfg, retentionIntervalMs: 3600_000 });
    await vi.advanceTimersByTimeAsync(10);
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples").get()).toEqual({ c: 0 });
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM sample_minutes").get()).toEqual({ c: 1 });
    await vi.advanceTimersByTimeAsync(3600_000); // the next run, an hour later
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM sample_minutes").get()).toEqual({ c: 0 });
  });

  it("runs retention a chunk of backends at a time, the event loop free between chunks, then the rows of backends no longer watched", async () => {
    const ids = Array.from({ length: RETENTION_CHUNK * 2 + 7 }, (_, i) => `b${i}`);
    const cfg = config({ backends: ids.map((id, i) => ({ id, url: `http://127.0.0.1:${10_000 + i}` })), proxies: [], retention: { rawHours: 1, rollupDays: 1 } });
    const old = T0 - 2 * 3600_000;
    insertSamples(h.db, [...ids, "gone"].map((id) => sampleRow(id, reading(old), verdict("busy"))));
    const { w } = start({ config: cfg, retentionIntervalMs: 24 * 3600_000 });
    const folded = () => (h.sqlite.prepare("SELECT COUNT(*) AS c FROM sample_minutes WHERE minute < ?").get(T0 - 3600_000) as { c: number }).c;
    // The periodic run starts with the watcher: its first chunk runs at once, the rest after a yield.
    expect(folded()).toBe(RETENTION_CHUNK);
    expect(await w.runRetention()).toBeNull(); // one run at a time
    await vi.advanceTimersByTimeAsync(10);
    expect(folded()).toBe(ids.length + 1);
    expect(h.sqlite.prepare("SELECT COUNT(*) AS c FROM samples WHERE at < ?").get(T0 - 3600_000)).toEqual({ c: 0 });
    // A run asked for now covers every chunk and the rest, and sums what it did.
    insertSamples(h.db, [sampleRow("b0", reading(old + 1), verdict("busy")), sampleRow("gone", reading(old + 1), verdict("idle"))]);
    const run = w.runRetention();
    await vi.advanceTimersByTimeAsync(10);
    expect(await run).toEqual({ rolledMinutes: 2, deletedSamples: 2, deletedRollups: 0 });
  });
});

describe("watcher: the on-call loop", () => {
  const oneBackend = (extra: Record<string, unknown> = {}) =>
    config({
      backends: [{ id: "fast", url: "http://127.0.0.1:1", restart: { command: ["/bin/true"], unattended: { afterSeconds: 3, maxPerDay: 1 } } }],
      proxies: [],
      notifications: { renotifyMinutes: 0.05, recoveredAfterSeconds: 2 },
      ...extra,
    });
  const events = () =>
    (h.sqlite.prepare("SELECT event, details FROM notifications ORDER BY id").all() as Array<{ event: string; details: string }>).map(
      (r) => r.event + (JSON.parse(r.details).reminder ? "(reminder)" : ""),
    );

  it("notifies stuck with the transition, reminds, announces and asks the unattended restart once, and a restart of stepwatch repeats nothing", async () => {
    let s: BackendState = "busy";
    const due: string[] = [];
    const first = start({ states: { fast: () => s }, config: oneBackend(), onUnattendedDue: (id) => due.push(id) });
    await vi.advanceTimersByTimeAsync(1500);
    s = "stuck";
    await vi.advanceTimersByTimeAsync(2000); // flushed with its transition
    expect(events()).toEqual(["stuck", "restart-scheduled"]);
    const stuckRow = h.sqlite.prepare("SELECT at FROM notifications WHERE event = 'stuck'").get() as { at: number };
    expect(lastTransition(h.db, "backend", "fast")).toMatchObject({ toState: "stuck", at: stuckRow.at });
    await vi.advanceTimersByTimeAsync(2000);
    expect(due).toEqual(["fast"]); // afterSeconds 3 after the recommendation, once
    await vi.advanceTimersByTimeAsync(1000);
    expect(events()).toContain("stuck(reminder)"); // renotifyMinutes 0.05 = 3 s
    await first.w.stop();
    const before = events().length;

    // A new process of stepwatch: the open problem and the announced schedule are seeded.
    const second = start({ states: { fast: () => s }, config: oneBackend(), onUnattendedDue: (id) => due.push(id) });
    await vi.advanceTimersByTimeAsync(1500);
    expect(events().slice(before)).toEqual([]);
    expect(second.w.backends.get("fast")!.problem.open?.event).toBe("stuck");
  });

  it("an acknowledgement stops reminders and the unattended restart; recovery clears it and sends recovered", async () => {
    let s: BackendState = "stuck";
    const due: string[] = [];
    const { w } = start({ states: { fast: () => s }, config: oneBackend(), onUnattendedDue: (id) => due.push(id) });
    await vi.advanceTimersByTimeAsync(1500);
    h.sqlite.prepare("INSERT INTO acknowledgements (backend_id, at, by, note, state_at_ack) VALUES ('fast', ?, 'ana', 'on it', 'stuck')").run(Date.now());
    const revision = w.revision();
    w.book.refresh("fast");
    expect(w.revision()).toBeGreaterThan(revision); // the fleet's cached answer is re-made (lib/api/fleet.ts)
    await vi.advanceTimersByTimeAsync(8000);
    expect(events()).toEqual(["stuck", "restart-scheduled"]);
    expect(due).toEqual([]);
    expect(fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 1 }).backends[0]).toMatchObject({
      acknowledged: { by: "ana", note: "on it" },
      unattendedRestartAt: null,
      problem: { event: "stuck" },
    });
    s = "busy";
    await vi.advanceTimersByTimeAsync(4000);
    expect(events()).toEqual(["stuck", "restart-scheduled", "recovered"]);
    expect(w.book.acknowledgement("fast")).toBeNull();
    const row = h.sqlite.prepare("SELECT cleared_at, cleared_reason FROM acknowledgements").get() as { cleared_at: number | null; cleared_reason: string };
    expect(row.cleared_at).not.toBeNull();
    expect(row.cleared_reason).toMatch(/healthy again/);
  });

  it("maintenance from the config: stuck is not notified, not recommended, not restarted", async () => {
    const due: string[] = [];
    const cfg = oneBackend({ maintenance: [{ start: new Date(T0 - 60_000).toISOString(), end: new Date(T0 + 3600_000).toISOString(), note: "driver update" }] });
    const { w } = start({ states: { fast: () => "stuck" }, config: cfg, onUnattendedDue: (id) => due.push(id) });
    await vi.advanceTimersByTimeAsync(8000);
    expect(events()).toEqual([]);
    expect(due).toEqual([]);
    expect(fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 1 }).backends[0]).toMatchObject({
      state: "stuck",
      restartRecommended: false,
      maintenance: { until: T0 + 3600_000, by: null, note: "driver update", source: "config" },
    });
  });

  it("sleeping, down inside startupGraceSeconds, a configuration problem: no notification, no unattended restart; stuck then is", async () => {
    let s: BackendState = "sleeping";
    let extra: Partial<Verdict> = {};
    const due: string[] = [];
    start({ states: { fast: () => s }, verdictExtra: () => extra, config: oneBackend(), onUnattendedDue: (id) => due.push(id) });
    await vi.advanceTimersByTimeAsync(6000);
    s = "down";
    extra = { restartRecommended: false, reasons: [reason("down-grace", "down for 6 s; may be loading weights; restart recommended after 10 min")] };
    await vi.advanceTimersByTimeAsync(6000);
    s = "unknown";
    extra = { configProblem: "the probe needs the API key: 401" };
    await vi.advanceTimersByTimeAsync(6000);
    expect(events()).toEqual([]);
    expect(due).toEqual([]);
    // The same watcher does notify and ask once the backend is really stuck (the test can fail).
    s = "stuck";
    extra = {};
    await vi.advanceTimersByTimeAsync(5000);
    expect(events().filter((e) => !e.endsWith("(reminder)"))).toEqual(["stuck", "restart-scheduled"]);
    expect(due).toEqual(["fast"]);
  });

  it("a standby asks no unattended restart and sends nothing; the same watcher does once it leads", async () => {
    let epoch: number | null = null;
    const leader = { replicaId: "b", isLeader: () => epoch !== null, epoch: () => epoch, sole: true };
    const due: string[] = [];
    const { w } = start({ states: { fast: () => "stuck" }, config: oneBackend(), onUnattendedDue: (id) => due.push(id), leader });
    await vi.advanceTimersByTimeAsync(8000);
    expect(events()).toEqual([]);
    expect(due).toEqual([]);
    const rt = { config: oneBackend(), db: h, watcher: w, secretEnvNames: new Set<string>() };
    expect(requestUnattendedRestart(unattendedDeps(rt), "fast", Date.now(), () => {})).toBe(false);
    expect(listRestartEvents(h.db)).toEqual([]);
    epoch = 2;
    await vi.advanceTimersByTimeAsync(5000);
    expect(events().filter((e) => !e.endsWith("(reminder)"))).toEqual(["stuck", "restart-scheduled"]);
    expect(due).toEqual(["fast"]);
  });

  it("the unattended restart checks the verdict again at the last moment and goes through the restart verb", async () => {
    let s: BackendState = "down";
    let extra: Partial<Verdict> = { restartRecommended: false };
    const cfg = oneBackend();
    const { w } = start({ states: { fast: () => s }, verdictExtra: () => extra, config: cfg });
    const logs: string[] = [];
    const rt = { config: cfg, db: h, watcher: w, secretEnvNames: new Set<string>() };
    await vi.advanceTimersByTimeAsync(1500);
    expect(requestUnattendedRestart(unattendedDeps(rt), "fast", Date.now(), (m) => logs.push(m))).toBe(false);
    expect(logs.at(-1)).toMatch(/not asked for: down, but inside startupGraceSeconds/);
    s = "sleeping";
    extra = {};
    await vi.advanceTimersByTimeAsync(1000);
    expect(requestUnattendedRestart(unattendedDeps(rt), "fast", Date.now(), (m) => logs.push(m))).toBe(false);
    expect(logs.at(-1)).toMatch(/sleeping/);
    s = "unknown";
    extra = { configProblem: "the probe needs the API key: 401" };
    await vi.advanceTimersByTimeAsync(1000);
    expect(requestUnattendedRestart(unattendedDeps(rt), "fast", Date.now(), (m) => logs.push(m))).toBe(false);
    expect(logs.at(-1)).toMatch(/configuration problem/);
    expect(listRestartEvents(h.db)).toEqual([]);

    s = "stuck";
    extra = {};
    await vi.advanceTimersByTimeAsync(1000);
    expect(requestUnattendedRestart(unattendedDeps(rt), "fast", Date.now(), (m) => logs.push(m))).toBe(true);
    const [ev] = listRestartEvents(h.db);
    expect(ev).toMatchObject({ backendId: "fast", requestedBy: "stepwatch:unattended", stateAtRequest: "stuck", outcome: null });
    // The one pending restart: a second ask is refused by the verb itself.
    expect(requestUnattendedRestart(unattendedDeps(rt), "fast", Date.now(), (m) => logs.push(m))).toBe(false);
    expect(logs.at(-1)).toMatch(/not started/);
    await vi.waitFor(() => expect(listRestartEvents(h.db)[0].commandExitCode).toBe(0), { timeout: 10_000 });
  });
});
