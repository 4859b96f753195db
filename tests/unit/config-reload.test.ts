/**
 * The reload's swap, in process: a real watcher (observe injected), a real SQLite file and a real
 * config file; the redacted Configuration view; the proxy's "N of M healthy".
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openDb } from "@/db/client";
import { type DbHandle } from "@/db/types";
import { configView, shownSecret } from "@/lib/api/config-view";
import { fleetSnapshot } from "@/lib/api/snapshot";
import { STATE_INFO, restartRecommended, type BackendState } from "@/lib/core/states";
import type { BackendTarget } from "@/lib/check/read";
import { type Reading, type Thresholds, reason } from "@/lib/core/types";
import { insertRestartUnlessBlocked } from "@/db/queries/restarts";
import { cachedEncoding } from "@/lib/api/fleet";
import { parseConfig, type Config } from "@/lib/config";
import { emptyStatus, startReloader, type Reloadable } from "@/lib/reload";
import { frontedLabel } from "@/lib/ui/proxy";
import { startWatcher, type Watcher } from "@/lib/watcher";

vi.mock("server-only", () => ({}));

const T0 = Date.UTC(2025, 0, 1);
let dir: string;
let h: DbHandle;
let watcher: Watcher | null = null;
const env = { KEY: "sk-env-secret-1", HOOK: "hook-env-secret-2", PW: "pw-env-secret-3" };

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-reload-unit-"));
  h = openDb(path.join(dir, "r.db"));
});
afterEach(async () => {
  await watcher?.stop();
  watcher = null;
  vi.useRealTimers();
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const json = (backends: Array<Record<string, unknown>>, proxies: Array<Record<string, unknown>> = []) => ({ pollIntervalSeconds: 1, backends, proxies });
const cfg = (j: unknown): Config => parseConfig(j, "test", { env });

/** A watcher whose reads are answered by `states` (by port), counting reads per backend. */
function watch(c: Config, states: Record<string, BackendState>, extra: Partial<Parameters<typeof startWatcher>[0]> = {}) {
  const reads: Record<string, number> = {};
  /** What the last poll of each port was given: the target (engine, probe) and the thresholds. */
  const seen: Record<string, { target: BackendTarget; thresholds: Thresholds; pending: unknown }> = {};
  watcher = startWatcher({
    config: c,
    db: h.db,
    log: () => {},
    observe: async (target, _history, o) => {
      const id = target.url.split(":").at(-1)!;
      reads[id] = (reads[id] ?? 0) + 1;
      seen[id] = { target, thresholds: o.thresholds, pending: o.pendingRestart ?? null };
      const state = states[id] ?? "idle";
      const reading: Reading = { at: Date.now(), latencyMs: 1, outcome: "ok", metrics: null };
      const info = STATE_INFO[state];
      return {
        reading,
        verdict: { state, health: info.health, healthy: info.health === "yes", restartRecommended: restartRecommended(state), reasons: [reason("unclassified", state)], rates: { stepsPerSecond: null, generationTokensPerSecond: null, promptTokensPerSecond: null }, basis: [] },
      };
    },
    readProxy: async () => ({ at: Date.now(), latencyMs: 1, outcome: "ok", models: ["m"] }),
    ...extra,
  });
  return { w: watcher, reads, seen };
}

describe("Watcher.apply", () => {
  it("starts added backends, stops removed ones (memory gone), keeps a changed one's monitor", async () => {
    const { w, reads } = watch(cfg(json([{ id: "a", url: "http://127.0.0.1:1" }, { id: "b", url: "http://127.0.0.1:2" }])), {});
    await vi.advanceTimersByTimeAsync(3100);
    const monitorA = w.backends.get("a")!;
    const historyA = monitorA.history.length;
    expect(historyA).toBeGreaterThan(0);

    const change = w.apply(cfg(json([{ id: "a", url: "http://127.0.0.1:1", model: "m2" }, { id: "c", url: "http://127.0.0.1:3" }])));
    expect(change).toEqual({ added: ["backend c"], removed: ["backend b"], changed: ["backend a"] });
    expect([...w.backends.keys()]).toEqual(["a", "c"]);
    expect(w.backends.get("a")).toBe(monitorA); // same monitor: history and state stay
    expect(monitorA.config.model).toBe("m2");
    const readsOfB = reads["2"];
    await vi.advanceTimersByTimeAsync(3000);
    expect(reads["2"]).toBe(readsOfB); // b is not read any more
    expect(reads["3"]).toBeGreaterThan(0); // c is
    expect(monitorA.history.length).toBeGreaterThan(historyA);

    // A new URL is another server: its readings start afresh (counters of two servers are never compared).
    w.apply(cfg(json([{ id: "a", url: "http://127.0.0.1:4", model: "m2" }, { id: "c", url: "http://127.0.0.1:3" }])));
    expect(w.backends.get("a")).toBe(monitorA);
    expect(monitorA.history).toEqual([]);
  });

  it("stop() also ends the loops a reload started", async () => {
    const { w } = watch(cfg(json([{ id: "a", url: "http://127.0.0.1:1" }])), {});
    w.apply(cfg(json([{ id: "a", url: "http://127.0.0.1:1" }, { id: "c", url: "http://127.0.0.1:3" }], [{ id: "lb", url: "http://127.0.0.1:9" }])));
    await vi.advanceTimersByTimeAsync(2500);
    await w.stop();
    expect(vi.getTimerCount()).toBe(0);
    expect(w.apply(cfg(json([])))).toEqual({ added: [], removed: [], changed: [] }); // a stopped watcher takes nothing new
  });

  it("on-call settings follow a reload: a channel added takes the next problem, a maintenance window holds one back", async () => {
    const sent: Array<{ channel: string; event: string; backendId: string }> = [];
    const states: Record<string, BackendState> = { "1": "idle", "2": "idle" };
    const backends = [{ id: "a", url: "http://127.0.0.1:1" }, { id: "b", url: "http://127.0.0.1:2" }];
    const { w } = watch(cfg(json(backends)), states, {
      outbox: {
        send: async (channel, payload) => {
          sent.push({ channel: channel.id, event: payload.event, backendId: payload.backendId });
          return { ok: true, statusCode: 200, error: null, retryAfterMs: null };
        },
      },
    });
    await vi.advanceTimersByTimeAsync(2100);
    expect(w.outbox.channelStatus()).toEqual([]);

    const revision = w.revision();
    w.apply(
      cfg({
        ...json(backends),
        notifications: { renotifyMinutes: 5, channels: [{ id: "ops", type: "webhook", url: "http://127.0.0.1:9/hook" }] },
        maintenance: [{ backends: ["b"], start: new Date(T0).toISOString(), end: new Date(T0 + 3600_000).toISOString(), note: "reflash" }],
      }),
    );
    expect(w.outbox.channelStatus().map((c) => c.id)).toEqual(["ops"]);
    expect(w.book.silenced("b", Date.now())).toMatchObject({ source: "config", note: "reflash" });
    expect(w.revision()).toBeGreaterThan(revision); // the fleet answer is built anew (a new ETag)

    states["1"] = "stuck";
    states["2"] = "stuck";
    const deadline = Date.now() + 30_000;
    while (!sent.some((s) => s.backendId === "a") && Date.now() < deadline) await vi.advanceTimersByTimeAsync(500);
    expect(sent.filter((s) => s.backendId === "a").map((s) => [s.channel, s.event])).toEqual([["ops", "stuck"]]);
    expect(sent.some((s) => s.backendId === "b")).toBe(false); // in the reloaded window: nothing sent
  });

  it("an unchanged config changes nothing", () => {
    const c = cfg(json([{ id: "a", url: "http://127.0.0.1:1" }]));
    const { w } = watch(c, {});
    expect(w.apply(cfg(json([{ id: "a", url: "http://127.0.0.1:1" }])))).toEqual({ added: [], removed: [], changed: [] });
  });

  it("a proxy counts the healthy backends it fronts", async () => {
    const c = cfg(json([{ id: "a", url: "http://127.0.0.1:1" }, { id: "b", url: "http://127.0.0.1:2" }], [{ id: "lb", url: "http://127.0.0.1:9", backends: ["a", "b"] }, { id: "bare", url: "http://127.0.0.1:8" }]));
    const { w } = watch(c, { "1": "idle", "2": "stuck" });
    await vi.advanceTimersByTimeAsync(1100);
    const snap = fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 1 });
    expect(snap.proxies.find((p) => p.id === "lb")).toMatchObject({ state: "up", healthyBackends: 1, totalBackends: 2, health: "degraded" });
    expect(snap.proxies.find((p) => p.id === "bare")).toMatchObject({ healthyBackends: null, totalBackends: null, health: null });
    expect(frontedLabel({ healthyBackends: 1, totalBackends: 2 })).toEqual({ text: "1 of 2 healthy", tone: "warn" });
    expect(frontedLabel({ healthyBackends: 0, totalBackends: 2 })).toEqual({ text: "0 of 2 healthy", tone: "bad" });
    expect(frontedLabel({ healthyBackends: 2, totalBackends: 2 })).toEqual({ text: "2 of 2 healthy", tone: "ok" });
    expect(frontedLabel({ healthyBackends: null, totalBackends: null })).toBeNull();
  });
});

describe("Watcher.apply and main's per-backend fields", () => {
  it("a changed engine, probe or startupGraceSeconds reaches the next poll; history and a pending restart stay", async () => {
    const { w, seen } = watch(cfg(json([{ id: "a", url: "http://127.0.0.1:1" }])), {});
    await vi.advanceTimersByTimeAsync(2100);
    expect(seen["1"].target).toMatchObject({ engine: "auto", probe: "auto" });
    expect(seen["1"].thresholds.startupGraceSeconds).toBe(600);
    const monitor = w.backends.get("a")!;
    const asked = insertRestartUnlessBlocked(
      h.db,
      {
        backendId: "a",
        requestedAt: Date.now(),
        requestedBy: "ana",
        note: null,
        state: "stuck",
        healthy: false,
        running: 2,
        waiting: 0,
        processStartTime: 5,
        evidence: { reasons: [reason("no-progress-stuck", "r")], readings: [] },
        overrideCooldown: false,
        confirmedHealthy: false,
        action: "command: /bin/true",
      },
      null,
    );
    if (!("inserted" in asked)) throw new Error("the restart was blocked");
    w.notifyRestartRequested("a");
    const historyBefore = monitor.history.length;

    const change = w.apply(cfg({ ...json([{ id: "a", url: "http://127.0.0.1:1", engine: "sglang", probe: "none" }]), startupGraceSeconds: 120 }));
    expect(change.changed).toEqual(["backend a"]);
    await vi.advanceTimersByTimeAsync(1100);
    expect(w.backends.get("a")).toBe(monitor);
    expect(seen["1"].target).toMatchObject({ engine: "sglang", probe: "none" });
    expect(seen["1"].thresholds.startupGraceSeconds).toBe(120);
    expect(seen["1"].pending).toMatchObject({ requestedAt: asked.inserted.requestedAt, processStartTime: 5 });
    expect(monitor.pending()).not.toBeNull();
    expect(monitor.lastRestart?.id).toBe(asked.inserted.id);
    expect(monitor.history.length).toBeGreaterThan(historyBefore);
  });

  it("a sleeping backend counts as healthy behind a proxy, and is counted apart", async () => {
    const c = cfg(json([{ id: "a", url: "http://127.0.0.1:1" }, { id: "b", url: "http://127.0.0.1:2" }, { id: "c", url: "http://127.0.0.1:3" }], [{ id: "lb", url: "http://127.0.0.1:9", backends: ["a", "b", "c"] }]));
    const { w } = watch(c, { "1": "sleeping", "2": "idle", "3": "down" });
    await vi.advanceTimersByTimeAsync(1100);
    const lb = fleetSnapshot(w, { demo: false, now: Date.now(), restartCooldownSeconds: 600, pollIntervalSeconds: 1 }).proxies[0];
    expect(lb).toMatchObject({ healthyBackends: 2, totalBackends: 3, sleepingBackends: 1 });
    expect(frontedLabel(lb)).toEqual({ text: "2 of 3 healthy · 1 sleeping", tone: "warn" });
    expect(frontedLabel({ healthyBackends: 2, totalBackends: 2, sleepingBackends: 2 })).toEqual({ text: "2 of 2 healthy · 2 sleeping", tone: "ok" });
  });
});

describe("the cached /api/fleet encoding across a reload", () => {
  it("serves the same bytes within its 250 ms, but builds anew (a new ETag) once the key changed", async () => {
    let key: object = {};
    let fleet = "old";
    const enc = cachedEncoding(async (now) => ({ generatedAt: now, fleet }), async () => key);
    const first = await enc(1000);
    fleet = "new";
    expect((await enc(1000)).etag).toBe(first.etag); // same instant, same key: cached
    key = {}; // a reload replaced configStatus
    const after = await enc(1000);
    expect(after.etag).not.toBe(first.etag);
    expect(JSON.parse(new TextDecoder().decode(after.body))).toMatchObject({ fleet: "new" });
  });
});

describe("startReloader", () => {
  it("a bad file keeps the running config and records its problems by field; a good one swaps", async () => {
    const file = path.join(dir, "stepwatch.config.json");
    const text = JSON.stringify(json([{ id: "a", url: "http://127.0.0.1:1" }]));
    fs.writeFileSync(file, text);
    const config = parseConfig(JSON.parse(text), file, { env });
    const { w } = watch(config, {});
    const rt: Reloadable = { config, watcher: w, configStatus: emptyStatus(file, T0) };
    const results: boolean[] = [];
    const r = startReloader(rt, { initialText: text, signals: false, onResult: (x) => results.push(x.ok) });
    try {
      fs.writeFileSync(file, JSON.stringify(json([{ id: "a", url: "nope" }])));
      const bad = r.reload("SIGHUP");
      expect(bad).toMatchObject({ ok: false, problems: ["backends[0].url: Invalid URL"] });
      expect(rt.config).toBe(config);
      expect(rt.configStatus.error).toMatchObject({ trigger: "SIGHUP", problems: ["backends[0].url: Invalid URL"] });
      // The same bad text again from a file event: nothing new to do.
      expect(r.reload("file change", { onlyIfChanged: true }).attempted).toBe(false);

      fs.writeFileSync(file, JSON.stringify(json([{ id: "a", url: "http://127.0.0.1:1" }, { id: "b", url: "http://127.0.0.1:2" }])));
      const good = r.reload("operator ana");
      expect(good).toMatchObject({ ok: true, change: { added: ["backend b"], removed: [], changed: [] } });
      expect(rt.config.backends.map((b) => b.id)).toEqual(["a", "b"]);
      expect(rt.configStatus).toMatchObject({ loadedBy: "operator ana", error: null });
      expect([...w.backends.keys()]).toEqual(["a", "b"]);
      expect(results).toEqual([false, true]);
    } finally {
      r.stop();
    }
  });
});

describe("the file watch", () => {
  it("reloads when the file is replaced; another file or the same text again is no reload", async () => {
    vi.useRealTimers();
    const file = path.join(dir, "stepwatch.config.json");
    const text = JSON.stringify(json([{ id: "a", url: "http://127.0.0.1:1" }]));
    fs.writeFileSync(file, text);
    const config = parseConfig(JSON.parse(text), file, { env });
    const { w } = watch(config, {});
    const rt: Reloadable = { config, watcher: w, configStatus: emptyStatus(file, Date.now()) };
    const triggers: string[] = [];
    // A long stat poll: this test is about the directory watch.
    const r = startReloader(rt, { initialText: text, signals: false, debounceMs: 50, statIntervalMs: 60_000, onResult: (x, t) => void (x.attempted && triggers.push(t)) });
    const until = async (what: string, f: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!f()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((res) => setTimeout(res, 20));
      }
    };
    try {
      fs.writeFileSync(path.join(dir, "other.txt"), "x");
      fs.writeFileSync(file, text); // same text: read again, nothing reloaded
      await new Promise((res) => setTimeout(res, 300));
      expect(triggers).toEqual([]);
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(json([{ id: "b", url: "http://127.0.0.1:2" }])));
      fs.renameSync(`${file}.tmp`, file);
      await until("the reload", () => triggers.length > 0);
      expect(triggers).toEqual(["file change"]);
      expect([...w.backends.keys()]).toEqual(["b"]);
    } finally {
      r.stop();
    }
  });
});

describe("the stat poll (where fs.watch is silent)", () => {
  it("finds a changed file by its mtime/size and reloads it", async () => {
    vi.useRealTimers();
    const file = path.join(dir, "stepwatch.config.json");
    const text = JSON.stringify(json([{ id: "a", url: "http://127.0.0.1:1" }]));
    fs.writeFileSync(file, text);
    const config = parseConfig(JSON.parse(text), file, { env });
    const { w } = watch(config, {});
    const rt: Reloadable = { config, watcher: w, configStatus: emptyStatus(file, Date.now()) };
    const r = startReloader(rt, { initialText: text, signals: false, watchDirectory: false, debounceMs: 20, statIntervalMs: 50 });
    try {
      fs.writeFileSync(file, JSON.stringify(json([{ id: "a", url: "http://127.0.0.1:1" }, { id: "b", url: "http://127.0.0.1:2" }])));
      const deadline = Date.now() + 10_000;
      while (rt.config === config) {
        if (Date.now() > deadline) throw new Error("timed out waiting for the stat poll to reload");
        await new Promise((res) => setTimeout(res, 20));
      }
      expect(rt.configStatus).toMatchObject({ loadedBy: "file change", error: null });
      expect([...w.backends.keys()]).toEqual(["a", "b"]);
    } finally {
      r.stop();
    }
  });
});

describe("configView", () => {
  it("shows env:NAME as written and *** for every other secret, never a value", () => {
    const raw = {
      backends: [
        { id: "a", url: "http://u:pw-in-url@127.0.0.1:1/?token=t0k", apiKey: "env:KEY", restart: { command: ["/bin/echo", "x"] } },
        { id: "b", url: "http://127.0.0.1:2", engine: "sglang", probe: "none", apiKey: "literal-key-4", restart: { webhook: { url: "env:HOOK", headers: { authorization: "env:HOOK", "x-lit": "literal-header-5" } } } },
      ],
      proxies: [{ id: "lb", url: "http://127.0.0.1:9", apiKey: "literal-proxy-6", backends: ["a"] }],
      operators: [{ name: "ana", password: "env:PW" }, { name: "bo", password: "scrypt:32768:8:1:salt:hash-7" }],
      metrics: { bearerToken: "env:SCRAPE" },
      startupGraceSeconds: 300,
    };
    const env2 = { ...env, HOOK: "http://127.0.0.1:7/hook?sig=hook-url-secret-8", SCRAPE: "scrape-token-from-env-9abcdef0123456" };
    const c = parseConfig(raw, "f.json", { env: env2 });
    const v = configView(c, emptyStatus("f.json", T0), false);
    expect(v.backends[0]).toMatchObject({ url: "http://***@127.0.0.1:1/?***", apiKey: "env:KEY", restart: { kind: "command", command: ["/bin/echo", "x"] } });
    expect(v.backends[0]).toMatchObject({ engine: "auto", probe: "auto" });
    expect(v.settings).toMatchObject({ startupGraceSeconds: 300, metricsBearerToken: "env:SCRAPE", readThreads: "auto", readThreadsRunning: 0 });
    expect(v.backends[1]).toMatchObject({ engine: "sglang", probe: "none", apiKey: "***", restart: { kind: "webhook", url: "env:HOOK", headers: { authorization: "env:HOOK", "x-lit": "***" } } });
    expect(v.proxies[0]).toEqual({ id: "lb", url: "http://127.0.0.1:9", apiKey: "***", backends: ["a"] });
    expect(v.operators).toEqual([{ name: "ana", password: "env:PW" }, { name: "bo", password: "***" }]);
    const text = JSON.stringify(v);
    for (const s of ["pw-in-url", "t0k", "literal-key-4", "literal-header-5", "literal-proxy-6", "hash-7", "hook-url-secret-8", "scrape-token-from-env-9abcdef0123456", ...Object.values(env)]) expect(text).not.toContain(s);
    expect(shownSecret("env:not valid")).toBe("***");
  });
});
