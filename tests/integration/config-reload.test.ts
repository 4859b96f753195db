/**
 * Config without a restart of stepwatch, end to end: the real built app (`next start`) with a temp
 * config, simulators on 127.0.0.1; the config is changed by rewriting the file, by SIGHUP to the
 * server process and by POST /api/config/reload, and everything is observed over HTTP.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigView, FleetResponse, HistoryResponse } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, call, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

const KEY_A = "sk-reload-a-5e1d9";
const HOOK_TOKEN = "hook-token-from-env-77b2";
const LITERAL_HEADER = "literal-header-secret-c41f";
const LITERAL_PROXY_KEY = "literal-proxy-key-0a9e";
const PASSWORD = "reload-pw-93kq";
const SECRETS = [KEY_A, HOOK_TOKEN, LITERAL_HEADER, LITERAL_PROXY_KEY, PASSWORD];

let dir: string;
let configPath: string;
let app: RunningApp;
let cookie: string;
const sims: Record<"a" | "b" | "c", Simulator> = {} as never;

type Json = Record<string, unknown>;

function baseConfig(): Json & { backends: Json[]; proxies: Json[] } {
  return {
    pollIntervalSeconds: 1,
    stuckAfterSeconds: 3,
    probeTimeoutSeconds: 3,
    backends: [
      { id: "a", url: sims.a.url, apiKey: "env:SW_RELOAD_KEY_A", model: sims.a.modelName },
      {
        id: "b",
        url: sims.b.url,
        restart: { webhook: { url: "http://127.0.0.1:9/hook", headers: { authorization: "env:SW_RELOAD_HOOK", "x-literal": LITERAL_HEADER } } },
      },
    ],
    proxies: [{ id: "lb", url: sims.a.url, apiKey: LITERAL_PROXY_KEY, backends: ["a", "b"] }],
    operators: [{ name: "olga", password: "env:SW_RELOAD_PW" }],
  };
}

/** Rewrites the config the way an editor does: a temp file renamed over it. */
function writeConfig(c: unknown): void {
  const tmp = `${configPath}.tmp`;
  fs.writeFileSync(tmp, typeof c === "string" ? c : JSON.stringify(c, null, 2));
  fs.renameSync(tmp, configPath);
}

const fleet = async () => (await call(`${app.url}/api/fleet`)).json as FleetResponse;
const configView = async () => (await call(`${app.url}/api/config`)).json as ConfigView;
const metricsReads = (s: Simulator) => s.received().filter((r) => r.kind === "metrics").length;
const reload = (opts: { cookie?: string; origin?: string } = { cookie, origin: undefined }) =>
  call(`${app.url}/api/config/reload`, { method: "POST", ...opts });

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-reload-"));
  sims.a = await startSimulator({ weightsLoadSeconds: 0.2 });
  sims.b = await startSimulator({ weightsLoadSeconds: 0.2 });
  sims.c = await startSimulator({ weightsLoadSeconds: 0.2 });
  configPath = path.join(dir, "stepwatch.config.json");
  writeConfig(baseConfig());
  app = await startApp({
    STEPWATCH_CONFIG: configPath,
    STEPWATCH_DB: path.join(dir, "db", "stepwatch.db"),
    SW_RELOAD_KEY_A: KEY_A,
    SW_RELOAD_HOOK: HOOK_TOKEN,
    SW_RELOAD_PW: PASSWORD,
  });
  cookie = await signIn(app, "olga", PASSWORD);
}, 90_000);

afterAll(async () => {
  await app?.stop();
  await Promise.all(Object.values(sims).map((s) => s.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("config reload", () => {
  it("the proxy shows how many of the backends it fronts are healthy", async () => {
    const lb = await waitFor("both backends idle behind lb", async () => {
      const p = (await fleet()).proxies.find((x) => x.id === "lb");
      return p && p.healthyBackends === 2 ? p : null;
    });
    expect(lb).toMatchObject({ state: "up", healthyBackends: 2, totalBackends: 2 });
    await sims.b.crash();
    await waitFor("b down, lb 1 of 2", async () => (await fleet()).proxies.find((x) => x.id === "lb")?.healthyBackends === 1);
    const page = await call(`${app.url}/`);
    expect(page.text).toContain("1 of 2 healthy");
    await sims.b.recover();
  });

  it("SIGHUP re-reads the file", async () => {
    const before = await configView();
    expect(before.loadedBy).toBe("start");
    process.kill(app.proc.pid!, "SIGHUP");
    const after = await waitFor("a reload by SIGHUP", async () => {
      const v = await configView();
      return v.loadedBy === "SIGHUP" ? v : null;
    });
    expect(after.lastChange).toMatchObject({ trigger: "SIGHUP", added: [], removed: [], changed: [] });
    expect(after.configError).toBeNull();
    expect(app.output()).toMatch(/config .* reloaded \(SIGHUP\): no target changed/);
    // SIGHUP no longer ends the process.
    expect(app.proc.exitCode).toBeNull();
  });

  it("a backend added to the file appears and is polled", async () => {
    const c = baseConfig();
    c.backends.push({ id: "c", url: sims.c.url });
    writeConfig(c);
    const row = await waitFor("c read by the watcher", async () => (await fleet()).backends.find((b) => b.id === "c" && b.lastReadAt !== null));
    expect(row.url).toBe(sims.c.url);
    expect(metricsReads(sims.c)).toBeGreaterThan(0);
    const v = await configView();
    expect(v.loadedBy).toBe("file change");
    expect(v.lastChange).toMatchObject({ added: ["backend c"], removed: [], changed: [] });
    // The Prometheus export follows: c's restart series exist (at 0) from the reload on.
    const metrics = (await call(`${app.url}/metrics`)).text;
    expect(metrics).toMatch(/stepwatch_restarts_total\{backend="c",outcome="failed"\} 0/);
    expect(metrics).toMatch(/stepwatch_backend_state\{backend="c",/);
  });

  it("a changed backend keeps its history and state; a removed one is gone and no longer read", async () => {
    const changedAt = Date.now();
    const c = baseConfig();
    c.backends = c.backends.filter((b) => b.id !== "a").map((b) => (b.id === "b" ? { ...b, model: sims.b.modelName } : b));
    c.backends.push({ id: "c", url: sims.c.url });
    c.proxies = [{ id: "lb", url: sims.c.url, backends: ["b", "c"] }];
    writeConfig(c);
    const f = await waitFor("a removed", async () => {
      const x = await fleet();
      return x.backends.some((b) => b.id === "a") ? null : x;
    });
    expect(f.backends.map((b) => b.id).sort()).toEqual(["b", "c"]);
    const b = f.backends.find((x) => x.id === "b")!;
    expect((await configView()).backends.find((x) => x.id === "b")!.model).toBe(sims.b.modelName);
    // Same id, same history: the readings from before the change are still b's.
    const h = (await call(`${app.url}/api/backends/b/history?from=${changedAt - 600_000}&to=${Date.now() + 60_000}`)).json as HistoryResponse;
    expect(h.columns.at.some((at) => at < changedAt)).toBe(true);
    expect(f.proxies.find((p) => p.id === "lb")).toMatchObject({ totalBackends: 2 });
    expect((await call(`${app.url}/api/backends/a/history`)).status).toBe(404);
    expect((await configView()).lastChange).toMatchObject({ removed: ["backend a"], changed: ["backend b", "proxy lb"] });

    // No read of a after the swap: a read in flight then was aborted, no new loop round runs.
    await new Promise((r) => setTimeout(r, 1500));
    const reads = metricsReads(sims.a);
    await new Promise((r) => setTimeout(r, 3000)); // three poll intervals
    expect(metricsReads(sims.a)).toBe(reads);
  });

  it("a bad file keeps the running config and shows the problem by field; fixing it clears it", async () => {
    const running = (await fleet()).backends.map((b) => b.id).sort();
    const bad = baseConfig();
    bad.backends[1] = { id: "b", url: "not a url" };
    bad.proxies = [{ id: "lb", url: sims.a.url, backends: ["a", "nope"] }];
    writeConfig(bad);
    const f = await waitFor("configError in /api/fleet", async () => {
      const x = await fleet();
      return x.configError ? x : null;
    });
    expect(f.configError!.trigger).toBe("file change");
    expect(f.configError!.problems).toEqual(expect.arrayContaining(["backends[1].url: Invalid URL", 'proxies[0].backends[1]: no backend "nope" in backends']));
    expect(f.backends.map((b) => b.id).sort()).toEqual(running);
    // The old config keeps being polled.
    const c = f.backends.find((b) => b.id === "c")!;
    await waitFor("c read again", async () => ((await fleet()).backends.find((b) => b.id === "c")!.lastReadAt ?? 0) > (c.lastReadAt ?? 0));
    const page = await call(`${app.url}/`);
    expect(page.text).toContain("Config not reloaded");
    expect(page.text).toContain("backends[1].url: Invalid URL");
    const cfgPage = await call(`${app.url}/config`);
    expect(cfgPage.text).toContain("backends[1].url: Invalid URL");

    const post = await reload({ cookie });
    expect(post.status).toBe(422);
    expect(post.json).toMatchObject({ error: "invalid-config", details: { ok: false, problems: expect.arrayContaining(["backends[1].url: Invalid URL"]) } });

    writeConfig("{ not json");
    await waitFor("the JSON problem shown", async () => (await fleet()).configError?.problems[0]?.startsWith("not valid JSON") ?? false);

    writeConfig(baseConfig());
    const fixed = await waitFor("a good file loaded", async () => {
      const x = await fleet();
      return x.configError === null && x.backends.some((b) => b.id === "a") ? x : null;
    });
    expect(fixed.backends.map((b) => b.id).sort()).toEqual(["a", "b"]);
  });

  it("POST /api/config/reload: an operator from the same origin only", async () => {
    expect((await reload({})).status).toBe(401);
    expect((await reload({ cookie, origin: "http://evil.example" })).status).toBe(403);
    const ok = await reload({ cookie, origin: app.url });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ ok: true, added: [], removed: [], changed: [], problems: [] });
    expect((await configView()).loadedBy).toBe("operator olga");
  });

  it("a reload changes the /api/fleet ETag at once (the cached answer of the old config is not served)", async () => {
    const before = await call(`${app.url}/api/fleet`);
    const etag = before.headers.get("etag")!;
    expect(etag).toBeTruthy();
    // Right after the reload, inside the 250 ms an encoding is shared: a browser holding the old ETag gets the new fleet.
    expect((await reload({ cookie, origin: app.url })).status).toBe(200);
    const after = await call(`${app.url}/api/fleet`, { headers: { "if-none-match": etag } });
    expect(after.status).toBe(200);
    expect(after.headers.get("etag")).not.toBe(etag);
  });

  it("the Configuration page and the API show what is loaded, never a secret", async () => {
    const v = await configView();
    expect(v.path).toBe(configPath);
    expect(v.backends.find((b) => b.id === "a")).toMatchObject({ url: sims.a.url, apiKey: "env:SW_RELOAD_KEY_A", model: sims.a.modelName });
    expect(v.backends.find((b) => b.id === "b")!.restart).toMatchObject({
      kind: "webhook",
      headers: { authorization: "env:SW_RELOAD_HOOK", "x-literal": "***" },
    });
    expect(v.proxies[0]).toMatchObject({ id: "lb", apiKey: "***", backends: ["a", "b"] });
    expect(v.operators).toEqual([{ name: "olga", password: "env:SW_RELOAD_PW" }]);

    const page = await call(`${app.url}/config`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("env:SW_RELOAD_KEY_A");
    const answers = [JSON.stringify(v), page.text, (await call(`${app.url}/api/fleet`)).text, (await call(`${app.url}/`)).text, app.output()];
    for (const text of answers) for (const s of SECRETS) expect(text).not.toContain(s);
  });
});
