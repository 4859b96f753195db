/**
 * Security, third pass (issue 31), over real HTTP against the built app (`next start`): what a
 * config reload and a database that takes no writes must not get wrong.
 * - sessions are swept at every reload: a password that goes A -> B -> A, or an operator removed
 *   and added back, does not bring an old session back (it was never used in between, so only the
 *   sweep can end it);
 * - after a reload a restart command gets none of the variables the previous config read a
 *   secret from;
 * - with the database locked by another writer, sign-in answers 503 with the reason (not 500), and
 *   a reload that cannot write its audit line is refused (503) and the running config stays.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "@/lib/auth/password";
import type { RestartEventDTO } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { askRestart, assertBuilt, call, getJson, nodeScript, startApp, waitFor, type HttpAnswer, type RunningApp } from "./faults-support";

const PW = { admin: "admin-pw-31aa", a: "op-password-A-31", b: "op-password-B-31", gone: "gone-pw-31cc" };
const OLD_SECRET = "old-secret-value-31-zz";

let dir: string;
let configPath: string;
let dbPath: string;
let app: RunningApp;
let sim: Simulator;
let hash: { a: string; b: string; gone: string };
let printEnv: string[];

function writeConfig(o: { op: string; gone: boolean; oldKey: boolean; extra?: boolean }): void {
  const backends: unknown[] = [{ id: "b1", url: sim.url, restart: { command: printEnv, timeoutSeconds: 10 } }];
  // b2 reads its API key from SW_R_OLD: while it is configured, that variable is a secret.
  if (o.oldKey) backends.push({ id: "b2", url: sim.url, apiKey: "env:SW_R_OLD" });
  if (o.extra) backends.push({ id: "b3", url: sim.url });
  const operators = [
    { name: "admin", password: "env:SW_R_ADMIN" },
    { name: "op", password: o.op },
    ...(o.gone ? [{ name: "gone", password: hash.gone }] : []),
  ];
  fs.writeFileSync(configPath, JSON.stringify({ pollIntervalSeconds: 1, restartCooldownSeconds: 0, backends, operators }));
}

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-sec3-"));
  configPath = path.join(dir, "stepwatch.config.json");
  dbPath = path.join(dir, "db", "stepwatch.db");
  sim = await startSimulator();
  hash = { a: await hashPassword(PW.a), b: await hashPassword(PW.b), gone: await hashPassword(PW.gone) };
  printEnv = nodeScript(dir, "print-env", `console.log("SW_R_OLD=" + (process.env.SW_R_OLD ?? "absent"));`);
  writeConfig({ op: hash.a, gone: true, oldKey: true });
  app = await startApp({ STEPWATCH_CONFIG: configPath, STEPWATCH_DB: dbPath, SW_R_ADMIN: PW.admin, SW_R_OLD: OLD_SECRET });
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await sim?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const signInAs = (name: string, password: string, from: string) =>
  call(`${app.url}/api/session`, { method: "POST", body: JSON.stringify({ name, password }), origin: app.url, from });
const cookieOf = (r: HttpAnswer) => {
  const m = /stepwatch_session=([^;]+)/.exec(r.headers.get("set-cookie") ?? "");
  if (!m) throw new Error(`no session cookie: ${r.status} ${r.text}`);
  return `stepwatch_session=${m[1]}`;
};
const whoAmI = async (cookie: string) => ((await call(`${app.url}/api/session`, { cookie })).json as { operator: string | null }).operator;
const reload = (cookie: string) => call(`${app.url}/api/config/reload`, { method: "POST", cookie, origin: app.url });

/** Another writer holds the database's write lock while `f` runs (the portable "cannot write"). */
async function withLockedDb<T>(f: () => Promise<T>): Promise<T> {
  const locker = new Database(dbPath);
  locker.exec("BEGIN EXCLUSIVE");
  try {
    return await f();
  } finally {
    locker.exec("COMMIT");
    locker.close();
  }
}

let admin: string;

describe("sessions are swept at every reload", () => {
  it("a password A -> B -> A, or an operator removed and added back, does not bring an old session back", async () => {
    admin = cookieOf(await signInAs("admin", PW.admin, "127.0.0.90"));
    const op = cookieOf(await signInAs("op", PW.a, "127.0.0.91"));
    const gone = cookieOf(await signInAs("gone", PW.gone, "127.0.0.92"));
    expect([await whoAmI(op), await whoAmI(gone)]).toEqual(["op", "gone"]);

    // B, and without "gone": neither old cookie is sent meanwhile, so only a sweep can end them.
    writeConfig({ op: hash.b, gone: false, oldKey: true });
    expect((await reload(admin)).status).toBe(200);
    writeConfig({ op: hash.a, gone: true, oldKey: true });
    const back = await reload(admin);
    expect(back.status, back.text).toBe(200);

    // Before the fix both came back: the fingerprint of A matched again, "gone" existed again.
    expect(await whoAmI(op)).toBeNull();
    expect(await whoAmI(gone)).toBeNull();
    expect(await whoAmI(admin)).toBe("admin"); // unchanged: still signed in
    // The password A itself works again, for a new session.
    expect((await signInAs("op", PW.a, "127.0.0.93")).status).toBe(200);
  }, 120_000);
});

describe("restart commands get only what the current config allows", () => {
  it("after a reload drops the backend that read SW_R_OLD, the restart command still does not get it", async () => {
    writeConfig({ op: hash.a, gone: true, oldKey: false });
    const r = await reload(admin);
    expect(r.status, r.text).toBe(200);
    expect((r.json as { removed: string[] }).removed).toEqual(["backend b2"]);
    await waitFor("b1 watched", async () => (await getJson<{ backends: Array<{ id: string; state: string }> }>(`${app.url}/api/fleet`))?.body.backends.find((b) => b.id === "b1" && b.state !== "unknown"), 30_000);
    const ask = await askRestart(app, admin, "b1");
    expect(ask.status, ask.text).toBe(202);
    const done = await waitFor(
      "the restart command finished",
      async () => (await getJson<RestartEventDTO[]>(`${app.url}/api/restarts`))?.body.find((e) => e.backendId === "b1" && e.commandFinishedAt !== null),
      30_000,
    );
    // Before the fix: "SW_R_OLD=old-secret-value-31-zz", shown to every reader of the restart log.
    expect(done.commandOutput).toContain("SW_R_OLD=absent");
    expect(JSON.stringify(done)).not.toContain(OLD_SECRET);
  }, 120_000);
});

describe("a database that takes no writes", () => {
  it("sign-in answers 503 naming the storage problem (the right password, nothing recorded)", async () => {
    const r = await withLockedDb(() => signInAs("op", PW.a, "127.0.0.94"));
    // Before the fix: 500 "internal error".
    expect(r.status, r.text).toBe(503);
    expect((r.json as { error: string; message: string }).error).toBe("unavailable");
    expect((r.json as { message: string }).message).toMatch(/cannot record the sign-in.*database/i);
    expect(r.headers.get("set-cookie") ?? "").not.toMatch(/stepwatch_session=[^;]/);
    // Once writable again the same sign-in works (the failure took no attempt of the throttle's).
    expect((await signInAs("op", PW.a, "127.0.0.94")).status).toBe(200);
  }, 60_000);

  it("a reload whose audit line cannot be written is refused (503) and the running config stays", async () => {
    const r = await withLockedDb(async () => {
      writeConfig({ op: hash.a, gone: true, oldKey: false, extra: true });
      return reload(admin);
    });
    // Before the fix: 200, b3 added, and no audit line anywhere.
    expect(r.status, r.text).toBe(503);
    expect((r.json as { error: string; message: string }).error).toBe("unavailable");
    expect((r.json as { message: string }).message).toMatch(/audit log/);
    const cfg = await call(`${app.url}/api/config`);
    expect((cfg.json as { backends: Array<{ id: string }> }).backends.map((b) => b.id)).toEqual(["b1"]);
    // Writable again: the same file loads, and its line is in the audit log.
    const again = await reload(admin);
    expect(again.status, again.text).toBe(200);
    expect((again.json as { added: string[] }).added).toEqual(["backend b3"]);
    const audit = await call(`${app.url}/api/audit`, { cookie: admin });
    expect(audit.text).toMatch(/config\.reload[^]*added backend b3/);
    // The refusal itself could not be audited either (same database): the server log has it.
    expect(app.output()).toMatch(/refused[^]*not recorded, so not applied: cannot write the audit log/);
  }, 60_000);
});
