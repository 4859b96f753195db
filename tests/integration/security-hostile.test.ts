/**
 * A hostile backend cannot swell anything (real app over HTTP, real SQLite file): a /metrics with
 * 30,000 model_name labels (sim/hostile.ts), one with 100,000 (over the 2 MB answer cap) and a
 * proxy listing 15,000 models. Assertions are on sizes, never on timings:
 * - an answer over the cap is not parsed at all: a reading with an error, never "stuck";
 * - the database grows by kilobytes per reading, not megabytes (before: 4.8 MB per reading);
 * - /api/fleet, /api/restarts and a restart event stay small; lists end with "… and N more";
 * - the restart log is paged (limit, before, Link rel="next");
 * - the other backend keeps being read all along.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetResponse, RestartEventDTO } from "@/lib/api/types";
import { startHostileBackend, type HostileBackend } from "@/sim/hostile";
import { startSimulator, type Simulator } from "@/sim/server";
import { askRestart, assertBuilt, call, getJson, nodeScript, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

let dir: string;
let dbFile: string;
let app: RunningApp;
let hostile: HostileBackend;
let hostileLb: HostileBackend;
let huge: HostileBackend;
let sim: Simulator;
let cookie: string;

const dbBytes = () => [dbFile, `${dbFile}-wal`].reduce((n, f) => n + (fs.existsSync(f) ? fs.statSync(f).size : 0), 0);
const fleet = async () => (await getJson<FleetResponse>(`${app.url}/api/fleet`))!.body;

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-hostile-"));
  dbFile = path.join(dir, "db", "stepwatch.db");
  hostile = await startHostileBackend({ models: 30_000 });
  hostileLb = await startHostileBackend({ models: 15_000 });
  huge = await startHostileBackend({ models: 100_000 });
  sim = await startSimulator();
  const ok = nodeScript(dir, "ok", "process.exit(0)");
  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      restartCooldownSeconds: 0,
      backends: [
        { id: "hostile", url: hostile.url, restart: { command: ok } },
        { id: "fine", url: sim.url, restart: { command: ok } },
        { id: "huge", url: huge.url },
      ],
      proxies: [{ id: "hostile-lb", url: hostileLb.url }],
      operators: [{ name: "op", password: "env:SW_H_PW" }],
    }),
  );
  app = await startApp({ STEPWATCH_CONFIG: configPath, STEPWATCH_DB: dbFile, SW_H_PW: "hostile-test-pw" });
  cookie = await signIn(app, "op", "hostile-test-pw");
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await Promise.allSettled([hostile?.close(), hostileLb?.close(), huge?.close(), sim?.close()]);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("a backend with 30,000 model_name labels", () => {
  it("is read as a valid vLLM server, and what is kept of it is bounded", async () => {
    expect(hostile.metricsBytes).toBeGreaterThan(1_500_000); // the exposition itself is megabytes
    await waitFor("the hostile backend read", async () => (await fleet()).backends.find((b) => b.id === "hostile")?.state === "idle", 30_000);
    const servedBefore = hostile.metricsServed();
    const simBefore = sim.state().received;
    const sizeBefore = dbBytes();
    await waitFor("ten more reads of the hostile backend", () => hostile.metricsServed() >= servedBefore + 10, 60_000);
    const grown = dbBytes() - sizeBefore;
    // Before the caps each stored reading was ~4.8 MB: ten of them were ~50 MB.
    expect(grown).toBeLessThan(1_000_000);

    const f = await call(`${app.url}/api/fleet`);
    expect(f.text.length).toBeLessThan(64 * 1024);
    const body = f.json as FleetResponse;
    expect(body.backends.find((b) => b.id === "hostile")!.model).toBe("hostile-0");
    const lb = body.proxies.find((p) => p.id === "hostile-lb")!;
    expect(lb.state).toBe("up");
    expect(lb.models).toHaveLength(17);
    expect(lb.models[16]).toBe("… and 14984 more");
    // The other backend went on being read while the hostile one was.
    expect(sim.state().received).toBeGreaterThanOrEqual(simBefore + 5);
    expect(body.backends.find((b) => b.id === "fine")!.state).toBe("idle");
  }, 120_000);

  it("an answer over the 2 MB cap is cut and not parsed: an error in the reading, never stuck", async () => {
    expect(huge.metricsBytes).toBeGreaterThan(2 * 1024 * 1024);
    const b = await waitFor("the huge backend read", async () => {
      const h = (await fleet()).backends.find((x) => x.id === "huge")!;
      return h.lastReadAt !== null && huge.metricsServed() >= 2 ? h : null;
    }, 30_000);
    expect(b.state).not.toBe("stuck");
    expect(b.state).not.toBe("idle");
    expect(b.reasons.map((r) => r.text).join(" ")).toMatch(/cap/); // the reading's error, in the words
    expect(JSON.stringify(b).length).toBeLessThan(8 * 1024);
  }, 60_000);

  it("a restart event of it is small, and so is the restart log", async () => {
    const r = await askRestart(app, cookie, "hostile", { confirm: "hostile", note: "hostile test" });
    expect(r.status, r.text).toBe(202);
    expect(r.text.length).toBeLessThan(64 * 1024); // before: 14 MB of evidence in one event
    const event = (r.json as { event: RestartEventDTO }).event;
    expect(JSON.stringify(event.evidence).length).toBeLessThan(32 * 1024);
    const list = await call(`${app.url}/api/restarts`);
    expect(list.status).toBe(200);
    expect(list.text.length).toBeLessThan(64 * 1024);
  }, 60_000);

  it("GET /api/restarts is paged: limit, then before=<id> from the Link header", async () => {
    const second = await askRestart(app, cookie, "fine", { confirm: "fine" });
    expect(second.status, second.text).toBe(202);
    const first = await call(`${app.url}/api/restarts?limit=1`);
    const page1 = first.json as RestartEventDTO[];
    expect(page1).toHaveLength(1);
    expect(page1[0].backendId).toBe("fine");
    const link = first.headers.get("link") ?? "";
    const m = /^<([^>]+)>; rel="next"$/.exec(link);
    expect(m, link).not.toBeNull();
    const next = await call(`${app.url}${m![1]}`);
    const page2 = next.json as RestartEventDTO[];
    expect(page2.map((e) => e.backendId)).toEqual(["hostile"]);
    expect(next.headers.get("link")).toBeNull();
    expect((await call(`${app.url}/api/restarts?limit=1001`)).status).toBe(400);
    expect((await call(`${app.url}/api/restarts?before=abc`)).status).toBe(400);
  }, 60_000);
});
