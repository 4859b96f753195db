/**
 * Security, third pass (issue 31, items 3 and 4), over real HTTP against the built app:
 * - the trusted proxy's user header (auth.proxyHeader) is believed only with the secret the proxy
 *   adds (auth.proxy.secretHeader): with trustProxy on the loopback, as SECURITY.md's nginx setup
 *   has it, any local process reaches the port directly and could otherwise name itself an operator;
 * - a loopback trustProxy without that proof is warned about at reload; a /0 is refused by field;
 * - a malformed "env:" reference (a key pasted after "env:") is named by field and never quoted:
 *   not in the dashboard's configError, not in the audit log, not in the server log.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEntryDTO } from "@/lib/api/audit";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, call, getJson, startApp, waitFor, type HttpAnswer, type RunningApp } from "./faults-support";

const SECRET = "proxy-secret-31-0123456789abcdef0123";
const PASTED = "sk-live-PASTED-31-9f8e7d6c5b4a";
const PW = "proxy-op-pw-31";
let dir: string;
let configPath: string;
let app: RunningApp;
let sim: Simulator;

function writeConfig(over: { auth?: unknown; trustProxy?: string[]; apiKey?: string } = {}): void {
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      backends: [{ id: "b1", url: sim.url, ...(over.apiKey ? { apiKey: over.apiKey } : {}) }],
      operators: [{ name: "op", password: "env:SW_P_OP" }],
      auth: over.auth ?? { proxyHeader: "X-Forwarded-User", proxy: { secretHeader: "X-Stepwatch-Proxy-Secret", secret: "env:SW_P_SECRET" } },
      server: { trustProxy: over.trustProxy ?? ["127.0.0.1"] },
    }),
  );
}

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-proxy-"));
  sim = await startSimulator();
  configPath = path.join(dir, "stepwatch.config.json");
  writeConfig();
  app = await startApp({ STEPWATCH_CONFIG: configPath, STEPWATCH_DB: path.join(dir, "db", "sw.db"), SW_P_OP: PW, SW_P_SECRET: SECRET });
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await sim?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const who = async (headers: Record<string, string>) => (await call(`${app.url}/api/session`, { from: "127.0.0.1", headers })).json as { operator: string | null; via: string | null };
const restart = (headers: Record<string, string>) =>
  call(`${app.url}/api/backends/b1/restart`, { method: "POST", body: JSON.stringify({ confirm: "b1" }), origin: app.url, from: "127.0.0.1", headers });
const reload = (cookie: string) => call(`${app.url}/api/config/reload`, { method: "POST", cookie, origin: app.url });
const sessionOf = (r: HttpAnswer) => `stepwatch_session=${/stepwatch_session=([^;]+)/.exec(r.headers.get("set-cookie") ?? "")![1]}`;

describe("a trusted proxy's user header needs the proxy's secret", () => {
  it("a local process that sends X-Forwarded-User straight to the port is nobody; with the proxy's secret it is the user", async () => {
    // Before the fix: {operator: "op", via: "proxy"} from anything on the host.
    expect(await who({ "x-forwarded-user": "op" })).toMatchObject({ operator: null });
    expect(await who({ "x-forwarded-user": "op", "x-stepwatch-proxy-secret": "a-guess-of-the-same-length-0123456789" })).toMatchObject({ operator: null });
    expect(await who({ "x-forwarded-user": "op", "x-stepwatch-proxy-secret": SECRET.slice(0, -1) })).toMatchObject({ operator: null });
    expect((await restart({ "x-forwarded-user": "op" })).status).toBe(401);
    expect(await who({ "x-forwarded-user": "op", "x-stepwatch-proxy-secret": SECRET })).toMatchObject({ operator: "op", via: "proxy" });
    expect(app.output()).not.toContain(SECRET);
  });
});

describe("config: loose trust warned, /0 refused, a malformed env: reference never quoted", () => {
  it("reloads: loopback trust without the secret is a warning; a /0 and a pasted key are refused naming the field, never the value", async () => {
    const op = sessionOf(await call(`${app.url}/api/session`, { method: "POST", body: JSON.stringify({ name: "op", password: PW }), origin: app.url }));

    writeConfig({ auth: { proxyHeader: "X-Forwarded-User" } });
    expect((await reload(op)).status).toBe(200);
    await waitFor("the loose-trust warning", () => /auth\.proxyHeader is believed from server\.trustProxy 127\.0\.0\.1 without auth\.proxy\.secretHeader/.test(app.output()));

    writeConfig({ trustProxy: ["127.0.0.1", "0.0.0.0/0"] });
    const slash0 = await reload(op);
    expect(slash0.status).toBe(422);
    expect(slash0.text).toMatch(/server\.trustProxy\[1\]: a \/0 range/);

    const logBefore = app.output().length;
    writeConfig({ apiKey: `env:${PASTED}` });
    const pasted = await reload(op);
    expect(pasted.status).toBe(422);
    expect(pasted.text).toMatch(/backends\[0\]\.apiKey: malformed env reference/);
    const fleet = await waitFor("configError naming the field", async () => {
      const f = await getJson<{ configError: { problems: string[] } | null }>(`${app.url}/api/fleet`);
      return f?.body.configError?.problems.some((p) => p.startsWith("backends[0].apiKey")) ? f : null;
    });
    expect(fleet.body.configError!.problems).toContain("backends[0].apiKey: malformed env reference: must be env:NAME (letters, digits and _; the value is not shown)");
    const audit = await call(`${app.url}/api/audit?limit=500`, { cookie: op });
    expect((audit.json as { entries: AuditEntryDTO[] }).entries.some((e) => e.action === "config.reload.refused")).toBe(true);
    // Before the fix: `"env:sk-live-..." is not a valid env reference` in all three, and on the page.
    const page = await call(`${app.url}/`);
    for (const [where, text] of [["reload answer", pasted.text], ["fleet", JSON.stringify(fleet.body)], ["audit", audit.text], ["page", page.text], ["server log", app.output().slice(logBefore)]])
      expect(text, where).not.toContain("PASTED");
  }, 120_000);
});
