/**
 * Security, second pass, over real HTTP against the built app (`next start`): several clients are
 * told apart by their source address (127.0.0.x on the loopback), 127.0.0.3 plays a trusted
 * reverse proxy (server.trustProxy).
 * - a burst of guesses sent at once is throttled like the same guesses one by one;
 * - failures from one address never lock the operator out from another; a random-name flood from
 *   one address stops at the per-address limit; X-Forwarded-For counts only from trustProxy;
 * - the Host check (DNS rebinding) and the Origin check (scheme + host, X-Forwarded-Host only
 *   from trustProxy);
 * - sessions are server-side: sign-out, ending one from the list, a changed password and the
 *   operator's removal end them;
 * - JSON routes take only application/json; refusals carry the security headers.
 */
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "@/lib/auth/password";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, call, startApp, type HttpAnswer, type RunningApp } from "./faults-support";

const PW = { op: "op-pw-1a2b3c", other: "other-pw-4d5e6f", burst: "burst-pw-778899", gone: "gone-pw-0a0b0c" };
const PUBLIC_HOST = "ops.example.test";
const ALLOWED = "stepwatch.example.internal";

let dir: string;
let configPath: string;
let dbPath: string;
let app: RunningApp;
let sim: Simulator;
/** burst's password is a scrypt hash: its comparison is asynchronous, which is where the old check-then-count raced. */
let burstHash: string;
const env = () => ({
  STEPWATCH_CONFIG: configPath,
  STEPWATCH_DB: dbPath,
  SW_T_OP: PW.op,
  SW_T_OTHER: PW.other,
  SW_T_BURST: burstHash,
  SW_T_GONE: PW.gone,
});

function writeConfig(operators: Array<{ name: string; password: string }>): void {
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      backends: [{ id: "b1", url: sim.url }],
      operators,
      publicUrl: `https://${PUBLIC_HOST}`,
      server: { trustProxy: ["127.0.0.3"], allowedHosts: [ALLOWED] },
    }),
  );
}
const OPERATORS = [
  { name: "op", password: "env:SW_T_OP" },
  { name: "other", password: "env:SW_T_OTHER" },
  { name: "burst", password: "env:SW_T_BURST" },
  { name: "gone", password: "env:SW_T_GONE" },
];

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-sec2-"));
  configPath = path.join(dir, "stepwatch.config.json");
  dbPath = path.join(dir, "db", "stepwatch.db");
  sim = await startSimulator();
  burstHash = await hashPassword(PW.burst);
  writeConfig(OPERATORS);
  app = await startApp(env());
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await sim?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const signInAs = (name: string, password: string, opts: { from?: string; headers?: Record<string, string> } = {}) =>
  call(`${app.url}/api/session`, { method: "POST", body: JSON.stringify({ name, password }), origin: app.url, ...opts });
const cookieOf = (r: HttpAnswer) => {
  const m = /(?:__Host-)?stepwatch_session=([^;]+)/.exec(r.headers.get("set-cookie") ?? "");
  if (!m) throw new Error(`no session cookie: ${r.status} ${r.text}`);
  return `stepwatch_session=${m[1]}`;
};
const whoAmI = async (cookie: string) => ((await call(`${app.url}/api/session`, { cookie })).json as { operator: string | null }).operator;

/** A raw request with any Host header (fetch would not let us choose it). */
function rawGet(p: string, host: string, extra: Record<string, string> = {}, localAddress?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: app.port, path: p, headers: { host, ...extra }, localAddress, timeout: 20_000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

describe("sign-in under a burst", () => {
  it("500 wrong guesses sent at once: 5 are evaluated (401), every other one is refused (429) at once", async () => {
    const answers = await Promise.all(Array.from({ length: 500 }, (_, i) => signInAs("burst", `guess-${i}`, { from: "127.0.0.10" })));
    const count = (s: number) => answers.filter((a) => a.status === s).length;
    // Before the fix the limit was checked before the slow comparison and counted after it: all 500 were evaluated.
    expect(count(401)).toBe(5);
    expect(count(429)).toBe(495);
    expect(answers.every((a) => a.status !== 200)).toBe(true);
    expect(Number(answers.find((a) => a.status === 429)!.headers.get("retry-after"))).toBeGreaterThan(0);
  }, 180_000);

  it("a random-name flood from one address stops at the per-address limit (20), so it cannot fill the table", async () => {
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => signInAs(`random-${i}-${Math.random()}`, "x", { from: "127.0.0.11" })));
    expect(answers.filter((a) => a.status === 401)).toHaveLength(20);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(80);
    // The lockout of the burst above is still there.
    expect((await signInAs("burst", PW.burst, { from: "127.0.0.10" })).status).toBe(429);
  }, 180_000);
});

describe("nobody can lock the operator out", () => {
  it("failures from one address (with made-up X-Forwarded-For) do not stop the operator signing in from another", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await signInAs("op", `wrong-${i}`, { from: "127.0.0.20", headers: { "x-forwarded-for": `198.51.100.${i}` } })).status);
    expect(statuses).toEqual([...Array(5).fill(401), ...Array(7).fill(429)]);
    // That address is refused even with the right password...
    expect((await signInAs("op", PW.op, { from: "127.0.0.20" })).status).toBe(429);
    // ...the operator at their own desk is not (before the fix: 429 for 15 minutes, from everywhere).
    const ok = await signInAs("op", PW.op, { from: "127.0.0.21" });
    expect(ok.status, ok.text).toBe(200);
  }, 120_000);

  it("X-Forwarded-For is believed from a trusted proxy only: behind it, each client has its own count", async () => {
    const via = (xff: string, pw: string) => signInAs("other", pw, { from: "127.0.0.3", headers: { "x-forwarded-for": xff } });
    for (let i = 0; i < 5; i++) expect((await via("203.0.113.7", `bad-${i}`)).status).toBe(401);
    expect((await via("203.0.113.7", PW.other)).status).toBe(429);
    expect((await via("203.0.113.8", PW.other)).status).toBe(200);
    // The same header from an untrusted client: counted against the client's own address.
    for (let i = 0; i < 5; i++) expect((await signInAs("other", `bad-${i}`, { from: "127.0.0.30", headers: { "x-forwarded-for": `203.0.113.${50 + i}` } })).status).toBe(401);
    expect((await signInAs("other", PW.other, { from: "127.0.0.30", headers: { "x-forwarded-for": "203.0.113.99" } })).status).toBe(429);
  }, 120_000);
});

describe("Host check (DNS rebinding) and Origin check", () => {
  it.each([["127.0.0.1"], ["localhost"], [PUBLIC_HOST], [ALLOWED], ["[::1]"]])("Host %s is served", async (name) => {
    const r = await rawGet("/api/fleet", `${name}:${app.port}`);
    expect(r.status).toBe(200);
  });

  it("any other Host gets a clear 421 page, with the security headers, for pages and API alike", async () => {
    for (const p of ["/", "/api/fleet", "/api/restarts", "/signin"]) {
      const r = await rawGet(p, `rebind.attacker.example:${app.port}`);
      expect(r.status, p).toBe(421);
      expect(r.text).toContain("server.allowedHosts");
      expect(r.text).not.toContain('"backends"');
      expect(r.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
      expect(r.headers["x-content-type-options"]).toBe("nosniff");
    }
    // A sign-in through the operator's browser from a rebinding page never reaches the password check.
    const viaRebind = await new Promise<number>((resolve, reject) => {
      const body = JSON.stringify({ name: "op", password: "guess" });
      const req = http.request(
        { host: "127.0.0.1", port: app.port, path: "/api/session", method: "POST", headers: { host: "rebind.attacker.example", "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
        (res) => (res.resume(), resolve(res.statusCode ?? 0)),
      );
      req.on("error", reject);
      req.end(body);
    });
    expect(viaRebind).toBe(421);
  });

  it("X-Forwarded-Host is believed only from a trusted proxy", async () => {
    const attackerHost = { "x-forwarded-host": "rebind.attacker.example" };
    expect((await rawGet("/api/fleet", `127.0.0.1:${app.port}`, attackerHost, "127.0.0.3")).status).toBe(421);
    expect((await rawGet("/api/fleet", `rebind.attacker.example`, { "x-forwarded-host": ALLOWED }, "127.0.0.40")).status).toBe(421);
    expect((await rawGet("/api/fleet", `127.0.0.1:${app.port}`, { "x-forwarded-host": ALLOWED }, "127.0.0.3")).status).toBe(200);
  });

  it("the Origin must match scheme and host; publicUrl's origin is ours", async () => {
    const body = JSON.stringify({ name: "op", password: "no" });
    const post = (origin: string, extra: { from?: string; headers?: Record<string, string> } = {}) =>
      call(`${app.url}/api/session`, { method: "POST", body, origin, from: extra.from ?? "127.0.0.50", headers: extra.headers });
    expect((await post(app.url.replace("http:", "https:"))).status).toBe(403); // same host, other scheme
    expect((await post(`http://${ALLOWED}:${app.port}`)).status).toBe(403); // an allowed name, but not this request's
    // A client claiming the host via X-Forwarded-Host is not believed.
    expect((await post(`http://${ALLOWED}`, { headers: { "x-forwarded-host": ALLOWED } })).status).toBe(403);
    // The trusted proxy is.
    expect((await post(`https://${ALLOWED}`, { from: "127.0.0.3", headers: { "x-forwarded-host": ALLOWED, "x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.200" } })).status).toBe(401);
    expect((await post(`https://${PUBLIC_HOST}`)).status).toBe(401);
  });
});

describe("JSON routes take JSON only", () => {
  it("a form or text/plain body is 415, before any password is compared", async () => {
    for (const ct of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const r = await call(`${app.url}/api/session`, { method: "POST", body: JSON.stringify({ name: "op", password: "x" }), origin: app.url, headers: { "content-type": ct }, from: "127.0.0.60" });
      expect(r.status, ct).toBe(415);
      expect((r.json as { message: string }).message).toMatch(/application\/json/);
      expect(r.headers.get("content-security-policy")).toContain("default-src 'self'");
    }
    const ok = await call(`${app.url}/api/session`, { method: "POST", body: JSON.stringify({ name: "op", password: PW.op }), origin: app.url, headers: { "content-type": "application/json; charset=utf-8" }, from: "127.0.0.60" });
    expect(ok.status).toBe(200);
  });
});

describe("server-side sessions", () => {
  it("an operator sees their own sessions, ends one of them, and signing out ends the other", async () => {
    const a = cookieOf(await signInAs("op", PW.op, { from: "127.0.0.70", headers: { "user-agent": "laptop" } }));
    const b = cookieOf(await signInAs("op", PW.op, { from: "127.0.0.71", headers: { "user-agent": "phone" } }));
    const list = await call(`${app.url}/api/sessions`, { cookie: a });
    expect(list.status).toBe(200);
    const sessions = (list.json as { operator: string; sessions: Array<{ id: string; current: boolean; address: string; userAgent: string }> }).sessions;
    const mine = sessions.find((s) => s.current)!;
    const phone = sessions.find((s) => s.userAgent === "phone")!;
    expect(mine).toMatchObject({ address: "127.0.0.70", userAgent: "laptop" });
    expect(phone).toMatchObject({ address: "127.0.0.71", current: false });
    expect(list.text).not.toContain(a.split("=")[1]); // ids are hashes, not tokens
    // Nobody else's: another operator cannot end op's session.
    const other = cookieOf(await signInAs("gone", PW.gone, { from: "127.0.0.72" }));
    expect((await call(`${app.url}/api/sessions/${phone.id}`, { method: "DELETE", cookie: other, origin: app.url })).status).toBe(404);
    expect((await call(`${app.url}/api/sessions/${phone.id}`, { method: "DELETE", cookie: a, origin: "https://evil.example" })).status).toBe(403);
    expect((await call(`${app.url}/api/sessions/${phone.id}`, { method: "DELETE", cookie: a, origin: app.url })).status).toBe(200);
    expect(await whoAmI(b)).toBeNull();
    expect(await whoAmI(a)).toBe("op");
    expect((await call(`${app.url}/api/session`, { method: "DELETE", cookie: a, origin: app.url })).status).toBe(200);
    expect(await whoAmI(a)).toBeNull(); // the token itself is dead, not just the cookie cleared
    expect((await call(`${app.url}/api/sessions`, { cookie: a })).status).toBe(401);
  }, 60_000);

  it("a changed password and the removal of the operator end their sessions (after stepwatch restarts with the new config)", async () => {
    const op = cookieOf(await signInAs("op", PW.op, { from: "127.0.0.80" }));
    const gone = cookieOf(await signInAs("gone", PW.gone, { from: "127.0.0.80" }));
    const other = cookieOf(await signInAs("other", PW.other, { from: "127.0.0.81" }));
    expect([await whoAmI(op), await whoAmI(gone), await whoAmI(other)]).toEqual(["op", "gone", "other"]);
    await app.stop();
    writeConfig(OPERATORS.filter((o) => o.name !== "gone"));
    app = await startApp({ ...env(), SW_T_OP: "a-new-password-for-op" }, app.port);
    expect(await whoAmI(op)).toBeNull(); // password changed
    expect(await whoAmI(gone)).toBeNull(); // removed from the config
    expect(await whoAmI(other)).toBe("other"); // unchanged: still signed in
    expect((await signInAs("op", "a-new-password-for-op", { from: "127.0.0.82" })).status).toBe(200);
  }, 120_000);
});
