/**
 * Backends edited over the API (POST/PUT/DELETE /api/config/backends), end to end: the real built
 * app with a temp config file, simulators on 127.0.0.1. What counts is what lands in the file, in
 * the audit log and in the watcher's reads, all observed from outside.
 */
import Database from "better-sqlite3";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetResponse } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, call, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

const PASSWORD = "edit-pw-51xq";
const OP_TOKEN = "edit-op-token-8d2c1f0a9e4b7c3d5f6a";
const VIEWER_TOKEN = "edit-viewer-token-3b7e90c1d2e3f4a5b6";
const LITERAL_KEY = "sk-literal-never-stored-77";

let dir: string;
let configPath: string;
let app: RunningApp;
let cookie: string;
let a: Simulator;
let c: Simulator;

const dbPath = () => path.join(dir, "db", "stepwatch.db");
const fileJson = () => JSON.parse(fs.readFileSync(configPath, "utf8")) as { backends: Array<Record<string, unknown>> };
const fleet = async () => (await call(`${app.url}/api/fleet`)).json as FleetResponse;
const metricsReads = (s: Simulator) => s.received().filter((r) => r.kind === "metrics").length;
const send = (method: string, p: string, body?: unknown, opts: { cookie?: string; origin?: string; token?: string } = { cookie: undefined }) =>
  call(`${app.url}/api/config/backends${p}`, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    cookie: opts.cookie,
    origin: opts.origin,
    headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
  });
const asOperator = { get cookie() { return cookie; }, get origin() { return app.url; } };
const audit = async () =>
  ((await call(`${app.url}/api/audit?limit=50`, { cookie })).json as { entries: Array<{ action: string; target: string | null; actor: string | null }> }).entries;

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-edit-"));
  a = await startSimulator({ weightsLoadSeconds: 0.2 });
  c = await startSimulator({ weightsLoadSeconds: 0.2 });
  fs.mkdirSync(path.join(dir, "cfg"));
  configPath = path.join(dir, "cfg", "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      backends: [{ id: "a", url: a.url, apiKey: "env:SW_EDIT_KEY", restart: { command: ["true"] } }],
      operators: [{ name: "olga", password: "env:SW_EDIT_PW" }],
      tokens: [
        { name: "ci", token: "env:SW_EDIT_OP", role: "operator" },
        { name: "dash", token: "env:SW_EDIT_VIEWER", role: "viewer" },
      ],
    }),
  );
  app = await startApp({
    STEPWATCH_CONFIG: configPath,
    STEPWATCH_DB: dbPath(),
    SW_EDIT_PW: PASSWORD,
    SW_EDIT_OP: OP_TOKEN,
    SW_EDIT_VIEWER: VIEWER_TOKEN,
    SW_EDIT_KEY: "sk-from-env-4410",
  });
  cookie = await signIn(app, "olga", PASSWORD);
}, 90_000);

afterAll(async () => {
  await app?.stop();
  await Promise.all([a?.close(), c?.close()]);
  if (dir) {
    try {
      execFileSync("chattr", ["-i", path.join(dir, "cfg")]);
    } catch {
      /* never made immutable */
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

describe("backends edited over the API", () => {
  it("POST adds it to the file (readable JSON, a backup), the watcher polls it, the audit log names it", async () => {
    const before = fs.readFileSync(configPath, "utf8");
    const r = await send("POST", "", { id: "c", url: c.url, apiKey: "env:SW_EDIT_KEY" }, asOperator);
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ id: "c", ok: true, added: ["backend c"] });
    const text = fs.readFileSync(configPath, "utf8");
    expect(text).toContain('\n  "backends": [');
    expect(fileJson().backends.find((b) => b.id === "c")).toEqual({ id: "c", url: c.url, apiKey: "env:SW_EDIT_KEY" });
    expect(fs.readFileSync(`${configPath}.bak`, "utf8")).toBe(before);
    expect(fs.readdirSync(path.dirname(configPath)).sort()).toEqual(["stepwatch.config.json", "stepwatch.config.json.bak"]);
    await waitFor("c read by the watcher", async () => (await fleet()).backends.find((b) => b.id === "c" && b.lastReadAt !== null));
    expect(metricsReads(c)).toBeGreaterThan(0);
    const lines = await audit();
    expect(lines).toEqual(expect.arrayContaining([expect.objectContaining({ action: "config.backend.added", target: "c", actor: "olga" })]));
  });

  it("PUT replaces it and keeps the file's restart action; a token is a script's way in", async () => {
    const r = await send("PUT", "/a", { url: a.url, engine: "vllm", probe: "none" }, { token: OP_TOKEN });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ id: "a", changed: ["backend a"] });
    expect(fileJson().backends.find((b) => b.id === "a")).toEqual({ id: "a", url: a.url, engine: "vllm", probe: "none", restart: { command: ["true"] } });
    expect(await audit()).toEqual(expect.arrayContaining([expect.objectContaining({ action: "config.backend.changed", target: "a", actor: "ci" })]));
  });

  it("refuses a bad one by field, a used id, an unknown id, and a secret given as a value", async () => {
    const bad = await send("POST", "", { id: "d", url: "not a url" }, asOperator);
    expect(bad.status).toBe(422);
    expect((bad.json as { details: { problems: string[] } }).details.problems).toContain("backends[2].url: Invalid URL");
    const unknownField = await send("POST", "", { id: "d", url: c.url, colour: "red" }, asOperator);
    expect(unknownField.status).toBe(422);
    expect((unknownField.json as { message: string }).message).toContain("backends[2].colour: unknown field");
    const literal = await send("POST", "", { id: "d", url: c.url, apiKey: LITERAL_KEY }, asOperator);
    expect(literal.status).toBe(422);
    expect((literal.json as { message: string }).message).toMatch(/^apiKey: .*env:NAME/);
    // Another variable of stepwatch's environment would be sent to a URL of the caller's choosing.
    const otherVar = await send("POST", "", { id: "d", url: c.url, apiKey: "env:SW_EDIT_PW" }, asOperator);
    expect(otherVar.status).toBe(422);
    expect((otherVar.json as { message: string }).message).toMatch(/^apiKey: SW_EDIT_PW /);
    // A command from a request would run on this server.
    const restart = await send("PUT", "/a", { url: a.url, restart: { command: ["sh", "-c", "id"] } }, asOperator);
    expect(restart.status).toBe(422);
    expect((restart.json as { details: { problems: string[] } }).details.problems[0]).toMatch(/^restart: /);
    expect((await send("POST", "", { id: "c", url: c.url }, asOperator)).status).toBe(409);
    expect((await send("PUT", "/nope", { url: c.url }, asOperator)).status).toBe(404);
    expect((await send("DELETE", "/nope", undefined, asOperator)).status).toBe(404);
    // Nothing of it reached the file.
    const text = fs.readFileSync(configPath, "utf8");
    expect(text).not.toContain(LITERAL_KEY);
    expect(text).not.toContain("\"sh\"");
    expect(fileJson().backends.map((b) => b.id)).toEqual(["a", "c"]);
  });

  it("only an operator from the page's own origin", async () => {
    expect((await send("POST", "", { id: "d", url: c.url })).status).toBe(401);
    expect((await send("POST", "", { id: "d", url: c.url }, { token: VIEWER_TOKEN })).status).toBe(403);
    expect((await send("DELETE", "/c", undefined, { cookie, origin: "http://evil.example" })).status).toBe(403);
    // The page offers the buttons to an operator only.
    expect((await call(`${app.url}/config`, { cookie })).text).toContain('data-testid="backend-add"');
    const asViewer = await call(`${app.url}/config`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } });
    expect(asViewer.status).toBe(200);
    expect(asViewer.text).toContain('data-testid="config-backend-a"');
    expect(asViewer.text).not.toContain('data-testid="backend-add"');
    expect(asViewer.text).not.toContain('data-testid="backend-edit-a"');
    expect(asViewer.text).not.toContain('data-testid="config-reload"');
    expect(fileJson().backends.map((b) => b.id)).toEqual(["a", "c"]);
  });

  it("DELETE removes it from the file and the fleet", async () => {
    const r = await send("DELETE", "/c", undefined, asOperator);
    expect(r.status).toBe(204);
    expect(fileJson().backends.map((b) => b.id)).toEqual(["a"]);
    await waitFor("c gone from the fleet", async () => !(await fleet()).backends.some((b) => b.id === "c"));
    expect(await audit()).toEqual(expect.arrayContaining([expect.objectContaining({ action: "config.backend.removed", target: "c" })]));
  });

  it("an audit line that cannot be written: refused, the previous file put back, nothing applied", async () => {
    const before = fs.readFileSync(configPath, "utf8");
    // Another writer holds the database's write lock: the portable "the audit log takes no write".
    const locker = new Database(dbPath());
    locker.exec("BEGIN EXCLUSIVE");
    let r;
    try {
      r = await send("POST", "", { id: "f", url: c.url }, asOperator);
    } finally {
      locker.exec("COMMIT");
      locker.close();
    }
    expect(r.status).toBe(503);
    expect((r.json as { message: string }).message).toMatch(/audit log/);
    expect(fs.readFileSync(configPath, "utf8")).toBe(before);
    expect((await fleet()).backends.map((b) => b.id)).toEqual(["a"]);
  });

  it("proxies too: added and polled, a backend it fronts cannot go while it names it, removed", async () => {
    const add = await call(`${app.url}/api/config/proxies`, { method: "POST", cookie, origin: app.url, body: JSON.stringify({ id: "lb", url: c.url, backends: ["a"] }) });
    expect(add.status, add.text).toBe(201);
    expect(add.json).toMatchObject({ id: "lb", added: ["proxy lb"] });
    expect((JSON.parse(fs.readFileSync(configPath, "utf8")) as { proxies: unknown[] }).proxies).toEqual([{ id: "lb", url: c.url, backends: ["a"] }]);
    await waitFor("lb read", async () => (await fleet()).proxies.find((p) => p.id === "lb" && p.state === "up"));
    const orphan = await send("DELETE", "/a", undefined, asOperator);
    expect(orphan.status).toBe(422);
    expect((orphan.json as { details: { problems: string[] } }).details.problems).toContain('proxies[0].backends[0]: no backend "a" in backends');
    expect((await call(`${app.url}/api/config/proxies/nope`, { method: "DELETE", cookie, origin: app.url })).status).toBe(404);
    expect((await call(`${app.url}/api/config/proxies/lb`, { method: "DELETE", cookie, origin: app.url })).status).toBe(204);
    expect(await audit()).toEqual(expect.arrayContaining([expect.objectContaining({ action: "config.proxy.added", target: "lb" }), expect.objectContaining({ action: "config.proxy.removed", target: "lb" })]));
    await waitFor("lb gone", async () => !(await fleet()).proxies.some((p) => p.id === "lb"));
  });

  it("a config directory stepwatch cannot write to: refused with the path, nothing changed", async () => {
    const before = fs.readFileSync(configPath, "utf8");
    // chattr +i stops root too (tests run as root, so chmod would not).
    execFileSync("chattr", ["+i", path.dirname(configPath)]);
    try {
      const r = await send("POST", "", { id: "e", url: c.url }, asOperator);
      expect(r.status).toBe(503);
      expect((r.json as { message: string; details: { path: string } }).details.path).toBe(configPath);
      expect((r.json as { message: string }).message).toContain(configPath);
    } finally {
      execFileSync("chattr", ["-i", path.dirname(configPath)]);
    }
    expect(fs.readFileSync(configPath, "utf8")).toBe(before);
    expect((await fleet()).backends.map((b) => b.id)).toEqual(["a"]);
  });
});
