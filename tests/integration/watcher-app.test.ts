/**
 * The watcher end to end: simulators on 127.0.0.1, the real built app (`next start`) with a temp
 * config and DB, everything observed over HTTP.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toRows } from "@/lib/core/history";
import type { ConfigView, FleetBackend, FleetResponse, HistoryResponse, RestartEventDTO } from "@/lib/api/types";
import { startLeastConnProxy, type LeastConnProxy } from "@/sim/proxy";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, getJson, spawnApp, waitFor, type RunningApp } from "./app-support";

const IDLE_KEY = "sk-idle-secret-7f3a";
const SECRET_ARG = "restart-secret-arg-91c2";

let dir: string;
let configPath: string;
let dbPath: string;
let app: RunningApp | null = null;
const sims: Record<"busy" | "idle" | "hung" | "dead", Simulator> = {} as never;
let proxy: LeastConnProxy;
let env: Record<string, string>;

const fleet = async () => (await getJson<FleetResponse>(`${app!.url}/api/fleet`))?.body ?? null;
const backend = async (id: string): Promise<FleetBackend | null> => (await fleet())?.backends.find((b) => b.id === id) ?? null;
const history = async (id: string) => (await getJson<HistoryResponse>(`${app!.url}/api/backends/${id}/history?from=0&to=${Date.now() + 60_000}`))!.body;

/** Polls until `f` gives a value (returned, non-null), bounded by `ms`. */
async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<NonNullable<T>> {
  return (await waitFor(what, f, ms)) as NonNullable<T>;
}

async function startApp(): Promise<RunningApp> {
  const a = await spawnApp(env);
  app = a;
  await waitFor("the app answering /api/fleet", async () => {
    if (a.proc.exitCode !== null) throw new Error(`the app exited:\n${a.output()}`);
    return (await getJson(`${a.url}/api/fleet`))?.status === 200;
  }, 60_000);
  return a;
}

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-app-"));
  sims.busy = await startSimulator({ engines: 2, maxNumSeqs: 2 });
  sims.idle = await startSimulator({ apiKey: IDLE_KEY });
  sims.hung = await startSimulator();
  sims.dead = await startSimulator();
  proxy = await startLeastConnProxy({ backends: [sims.busy.url] });
  // Long requests that outlast the test: the busy server is busy from the first read to the last.
  sims.busy.load({ requests: 5, promptTokens: 300, maxTokens: 1_000_000 });
  sims.hung.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
  await sims.hung.setMode("hang");
  await sims.dead.crash();

  configPath = path.join(dir, "stepwatch.config.json");
  dbPath = path.join(dir, "db", "stepwatch.db");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      probeTimeoutSeconds: 3,
      idleProbeSeconds: 60,
      // Every read of this suite goes through a read thread: the worker chunk next build made.
      readThreads: 1,
      backends: [
        { id: "busy", url: sims.busy.url, restart: { command: ["/bin/echo", SECRET_ARG] } },
        { id: "idle", url: sims.idle.url, apiKey: "env:SW_TEST_IDLE_KEY" },
        { id: "hung", url: sims.hung.url },
        { id: "dead", url: sims.dead.url },
      ],
      proxies: [{ id: "lb", url: proxy.url }],
      operators: [{ name: "ana", password: "env:SW_TEST_PW" }],
    }),
  );
  env = { STEPWATCH_CONFIG: configPath, STEPWATCH_DB: dbPath, SW_TEST_IDLE_KEY: IDLE_KEY, SW_TEST_PW: "pw" };
  await startApp();
});

afterAll(async () => {
  await app?.stop();
  await proxy?.close();
  await Promise.allSettled(Object.values(sims).map((s) => s.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the watcher over HTTP", () => {
  it("reads through the build's read thread (readThreads 1), which started and answered", async () => {
    await until("a judged backend", async () => (await backend("idle"))?.state === "idle");
    expect(app!.output()).toMatch(/stepwatch: 1 read thread \(readThreads 1, 4 backends every 1 s\)/);
    expect(app!.output()).not.toMatch(/read thread \d+ stopped|read threads cannot start/);
  });

  it("a busy backend is busy, with summed running/waiting, live rates, and no probe ever sent", async () => {
    const b = await until("busy backend busy with rates", async () => {
      const x = await backend("busy");
      return x?.state === "busy" && (x.stepsPerSecond ?? 0) > 0 && (x.generationTokensPerSecond ?? 0) > 0 ? x : null;
    });
    const s = sims.busy.state();
    expect(b.running! + b.waiting!).toBe(5);
    expect([b.running, b.waiting]).toEqual([s.running, s.waiting]);
    expect(b).toMatchObject({ healthy: true, restartRecommended: false, restartConfigured: true });
    expect(b.lastReadAt).toBeGreaterThan(Date.now() - 5000);
    expect(sims.busy.received().filter((r) => r.completion)).toEqual([]);
  });

  it("an idle backend is idle after one probe with its API key", async () => {
    const b = await until("idle backend idle", async () => { const x = await backend("idle"); return x?.state === "idle" ? x : null; }, 20_000);
    expect(b).toMatchObject({ running: 0, waiting: 0, healthy: true });
    const probes = sims.idle.received().filter((r) => r.completion);
    expect(probes.length).toBeGreaterThanOrEqual(1);
    expect(probes.length).toBeLessThanOrEqual(2); // re-probed only every idleProbeSeconds (60 s)
  });

  it("a hung backend goes stalled, then stuck with reasons and restartRecommended", async () => {
    const b = await until("hung backend stuck", async () => { const x = await backend("hung"); return x?.state === "stuck" ? x : null; }, 30_000);
    expect(b.restartRecommended).toBe(true);
    expect(b.healthy).toBe(false);
    expect(b.reasons.map((r) => r.rule)).toEqual(expect.arrayContaining(["no-progress", "no-progress-stuck"]));
    // Transitions are written in batches (about once a second): wait until the stuck one is stored.
    const h = await until("hung's stuck transition stored", async () => {
      const x = await history("hung");
      return x.transitions.some((t) => t.to === "stuck") ? x : null;
    });
    const path = h.transitions.map((t) => t.to);
    expect(path.indexOf("stalled")).toBeGreaterThanOrEqual(0);
    expect(path.indexOf("stalled")).toBeLessThan(path.indexOf("stuck"));
    expect(h.transitions.find((t) => t.to === "stuck")!.reasons.length).toBeGreaterThan(0);
    expect(sims.hung.received().filter((r) => r.completion)).toEqual([]);
  });

  it("a killed backend is down", async () => {
    const b = await until("dead backend down", async () => { const x = await backend("dead"); return x?.state === "down" ? x : null; }, 20_000);
    // Down at once, but a restart is recommended only after startupGraceSeconds (it may be loading weights).
    expect(b).toMatchObject({ restartRecommended: false, healthy: false, running: null });
    expect(b.reasons[0]).toMatchObject({ rule: "down-grace", text: expect.stringMatching(/restart recommended after 10 min/) });
  });

  it("the proxy is up with its models and was only ever asked for /v1/models", async () => {
    const p = await until("proxy up", async () => (await fleet())?.proxies.find((x) => x.id === "lb" && x.state === "up"));
    expect(p.models).toEqual([sims.busy.modelName]);
    const paths = new Set(proxy.received().map((r) => r.path));
    expect([...paths]).toEqual(["/v1/models"]);
  });

  it("never sends a secret to a browser", async () => {
    const text = JSON.stringify(await fleet()) + JSON.stringify(await getJson(`${app!.url}/api/restarts`));
    expect(text).not.toContain(IDLE_KEY);
    expect(text).not.toContain(SECRET_ARG);
  });

  it("history, restarts: validated queries and unknown ids", async () => {
    expect((await getJson(`${app!.url}/api/backends/busy/history?from=abc`))!.status).toBe(400);
    expect((await getJson(`${app!.url}/api/backends/busy/history?from=10&to=5`))!.status).toBe(400);
    expect((await getJson(`${app!.url}/api/backends/nope/history`))!.status).toBe(404);
    const h = (await getJson<HistoryResponse>(`${app!.url}/api/backends/busy/history`))!;
    expect(h.status).toBe(200);
    expect(h.body.resolution).toBe("raw");
    expect(h.body.count).toBeGreaterThan(2);
    expect(h.body.columns.at).toHaveLength(h.body.count);
    expect(toRows(h.body.columns).at(-1)).toMatchObject({ state: "busy" });
    const r = (await getJson<RestartEventDTO[]>(`${app!.url}/api/restarts?backend=busy`))!;
    expect(r).toEqual({ status: 200, body: [] });
    expect((await getJson(`${app!.url}/api/restarts?backend=nope`))!.status).toBe(404);
  });

  it("transitions survive a restart of the app, and are not duplicated by it", async () => {
    // Transitions are written in batches: wait until the stuck one is stored.
    await waitFor("hung's stuck transition stored", async () => (await history("hung")).transitions.at(-1)?.to === "stuck", 30_000);
    const ids = ["busy", "hung"] as const;
    const before = { busy: (await history("busy")).transitions, hung: (await history("hung")).transitions };
    await app!.stop();
    const stoppedAt = Date.now();
    await startApp();
    // Wait for the event, not for a time: three reads of the new process are stored (samples and
    // the transitions of the same polls are written in one transaction), and what the fleet shows
    // as `since` is the last stored transition, so nothing the new process decided is still queued.
    const after = await until("three stored reads of the new process, and its `since` stored", async () => {
      const f = await fleet();
      const out: Partial<Record<(typeof ids)[number], { transitions: HistoryResponse["transitions"]; b: FleetBackend }>> = {};
      for (const id of ids) {
        const h = (await getJson<HistoryResponse>(`${app!.url}/api/backends/${id}/history?from=${stoppedAt}&to=${Date.now() + 60_000}`))?.body;
        const all = await history(id);
        const b = f?.backends.find((x) => x.id === id);
        if (!h || !b || h.count < 3 || b.since !== all.transitions.at(-1)?.at) return null;
        out[id] = { transitions: all.transitions, b };
      }
      return out as Record<(typeof ids)[number], { transitions: HistoryResponse["transitions"]; b: FleetBackend }>;
    }, 30_000);
    for (const id of ids) {
      // What was stored before the restart is kept as it was.
      expect(after[id].transitions.slice(0, before[id].length)).toEqual(before[id]);
      const added = after[id].transitions.slice(before[id].length);
      if (added.length === 0) continue;
      // The restart itself records nothing: the new process starts from the stored state (never
      // from null, never the same state again) and from the stored readings (never "first read").
      // What it may record is what it saw: on a loaded machine the app's own start can hold a
      // read past its 2 s deadline, and a read without an answer is data ("a slow API server").
      expect(added[0].from).toBe(before[id].at(-1)!.to);
      expect(added[0].to).not.toBe(added[0].from);
      expect(added[0].reasons.map((r) => r.text).join("\n")).toMatch(/no complete answer within \d+ ms/);
    }
    // Two waits are computed from the stored readings: still stuck at once, not "unknown" again.
    if (after.hung.transitions.length === before.hung.length) expect(after.hung.b.state).toBe("stuck");
    expect(after.busy.b.since).toBe(after.busy.transitions.at(-1)!.at);
  });
});

describe("a bad config", () => {
  it("stops `next start` with a non-zero exit naming the field", async () => {
    const bad = path.join(dir, "bad.json");
    fs.writeFileSync(bad, JSON.stringify({ backends: [{ id: "a", url: "http://127.0.0.1:1" }, { id: "b", url: "not a url" }] }));
    const a = await spawnApp({ STEPWATCH_CONFIG: bad, STEPWATCH_DB: path.join(dir, "bad.db") });
    const code = await Promise.race([a.exited, new Promise((r) => setTimeout(() => r("still running"), 60_000))]);
    await a.stop();
    expect(code).not.toBe(0);
    expect(code).not.toBe("still running");
    expect(a.output()).toContain("backends[1].url: Invalid URL");
  });
});

describe("no config at all", () => {
  it("watches the embedded demo fleet and says so", async () => {
    const a = await spawnApp({ STEPWATCH_CONFIG: "", STEPWATCH_DB: path.join(dir, "demo.db") });
    try {
      const f = await until("the demo fleet answering", async () => {
        if (a.proc.exitCode !== null) throw new Error(`the app exited:\n${a.output()}`);
        const r = await getJson<FleetResponse>(`${a.url}/api/fleet`);
        return r?.status === 200 && r.body.backends.some((b) => b.lastReadAt !== null) ? r.body : null;
      }, 60_000);
      expect(f.demo).toBe(true);
      expect(f.backends.length).toBeGreaterThanOrEqual(2);
      expect(f.proxies.length).toBeGreaterThanOrEqual(1);
      expect(f.proxies[0].totalBackends).toBe(2); // "N of 2 healthy" beside the demo proxy
      expect(a.output()).toMatch(/DEMO fleet/);
      // No file to reload: the Configuration page says so, and a reload is refused (409).
      const cfg = (await getJson<ConfigView>(`${a.url}/api/config`))!.body;
      expect(cfg).toMatchObject({ demo: true, path: null, operators: [{ name: "demo", password: "***" }] });
      const session = await fetch(`${a.url}/api/session`, { method: "POST", headers: { "content-type": "application/json", origin: a.url }, body: JSON.stringify({ name: "demo", password: "demo" }) });
      const cookie = (session.headers.get("set-cookie") ?? "").split(";")[0];
      expect(cookie).toMatch(/^stepwatch_session=/);
      const reload = await fetch(`${a.url}/api/config/reload`, { method: "POST", headers: { cookie, origin: a.url } });
      expect(reload.status).toBe(409);
      expect(((await reload.json()) as { message: string }).message).toMatch(/demo fleet.*no config file/);
      // Nor is a backend edited: there is no file to write it to.
      const add = await fetch(`${a.url}/api/config/backends`, { method: "POST", headers: { cookie, origin: a.url, "content-type": "application/json" }, body: JSON.stringify({ id: "x", url: "http://127.0.0.1:9" }) });
      expect(add.status).toBe(409);
      expect(((await add.json()) as { message: string }).message).toMatch(/demo fleet.*no config file/);
    } finally {
      await a.stop();
    }
  });
});
