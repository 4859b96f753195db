/**
 * Security of the real app over HTTP (`next start` on a built .next, simulators, temp config/DB):
 * - every mutating route needs a signed-in operator AND a same-origin request;
 * - sessions live on the server: made-up tokens and signed-out ones are refused; sign-in is rate-limited;
 * - scrypt hashes made by `npm run --silent hash-password` are accepted;
 * - no secret of the config (API keys, passwords, hashes, webhook token, env, a URL's user:password
 *   or query) appears in any API answer, page, script or line of the server's log;
 * - the operator's note and request fields never reach the restart command's argv or a shell, and
 *   the command's environment lacks STEPWATCH_* and every variable a config secret was read from;
 * - security headers on every page and API route; bad input gets a 4xx with a reason.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetResponse, RestartEventDTO } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { askRestart, assertBuilt, call, getJson, nodeScript, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

const ROOT = path.resolve(__dirname, "../..");

// Distinctive secrets: none of them may ever leave the server.
const S = {
  apiKey: "sk-backend-8d1f0c-SECRETKEY",
  proxyKey: "sk-proxy-2c77e1-SECRETKEY",
  operatorPw: "op-pass-5e7a1-SECRETPW",
  hashedPw: "hash-op-6f3b9-SECRETPW",
  hookToken: "Bearer hook-token-77ab-SECRETTOKEN",
  hookUrlToken: "hookurl-token-31c9-SECRETQ",
  hookUrlPass: "hookurl-pass-8e20-SECRETUSERINFO",
  backendUrlPass: "backendurl-pass-1d4a-SECRETUSERINFO",
  proxyUrlToken: "proxyurl-token-63f5-SECRETQ",
  cmdEnv: "cmd-env-secret-4b2e-SECRETENV",
  sessionSecret: "session-secret-9a0f-SECRET-0123456789",
};
const SECRET_VALUES = Object.values(S);
/** Variables stepwatch itself reads secrets from (STEPWATCH_*, and each "env:NAME" in the config). */
const STEPWATCH_OWN_ENV = ["STEPWATCH_SESSION_SECRET", "STEPWATCH_CONFIG", "STEPWATCH_DB", "SW_SEC_APIKEY", "SW_SEC_PROXY_KEY", "SW_SEC_PW", "SW_SEC_HOOK_URL", "SW_SEC_HOOK_TOKEN"];

let dir: string;
let app: RunningApp;
let cookie: string;
let scryptHash: string;
const sims: Record<string, Simulator> = {};
let hooks: http.Server;
const hookRequests: Array<{ url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
const argvFile = () => path.join(dir, "argv.log");
const shellMarker = () => path.join(dir, "pwned");
/** Every answer body seen, for the secret scan at the end. */
const seen: Array<{ what: string; text: string }> = [];

async function get(p: string, opts: Parameters<typeof call>[1] = {}) {
  const r = await call(`${app.url}${p}`, opts);
  seen.push({ what: `${opts.method ?? "GET"} ${p}`, text: r.text + JSON.stringify([...r.headers.entries()].filter(([k]) => k !== "set-cookie")) });
  return r;
}

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-security-"));
  sims.keyed = await startSimulator({ apiKey: S.apiKey });
  sims.argv = await startSimulator();
  sims.hook = await startSimulator();
  sims.lb = await startSimulator();

  hooks = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      hookRequests.push({ url: req.url ?? "", headers: req.headers, body });
      res.writeHead(200, { "content-type": "text/plain" }).end("restarting");
    });
  });
  await new Promise<void>((r) => hooks.listen(0, "127.0.0.1", r));
  const hookBase = `http://127.0.0.1:${(hooks.address() as { port: number }).port}`;

  // The real helper, as an operator would run it: the password on stdin, the hash on stdout.
  const hp = spawnSync("npm", ["run", "--silent", "hash-password"], { cwd: ROOT, input: `${S.hashedPw}\n`, encoding: "utf8", timeout: 60_000 });
  expect(hp.status, hp.stderr).toBe(0);
  scryptHash = hp.stdout.trim();
  expect(scryptHash).toMatch(/^scrypt:\d+:\d+:\d+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);

  // The restart command records its argv, whether it got the variable meant for it (it may use it;
  // it must not leak), and which of stepwatch's own secrets' variables reached it (none may).
  const record = nodeScript(
    dir,
    "record",
    `const own = ${JSON.stringify(STEPWATCH_OWN_ENV)}.filter((n) => n in process.env);
     require("fs").appendFileSync(process.argv[2], JSON.stringify({argv: process.argv.slice(3), env: process.env.SW_SEC_CMD_ENV === ${JSON.stringify(S.cmdEnv)}, own})+"\\n");`,
    [argvFile(), "--unit", "vllm@argv", "fixed arg with spaces"],
  );

  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      probeTimeoutSeconds: 2,
      restartCooldownSeconds: 0,
      backends: [
        { id: "keyed", url: sims.keyed.url, apiKey: "env:SW_SEC_APIKEY", model: sims.keyed.modelName },
        // Credentials in URLs (a user:password, a ?token=) must not be shown as configured.
        { id: "argv", url: sims.argv.url.replace("//", `//ops:${S.backendUrlPass}@`), restart: { command: record, timeoutSeconds: 10 } },
        {
          id: "hook",
          url: sims.hook.url,
          restart: { webhook: { url: "env:SW_SEC_HOOK_URL", headers: { authorization: "env:SW_SEC_HOOK_TOKEN" } } },
        },
      ],
      proxies: [{ id: "lb", url: `${sims.lb.url}/?token=${S.proxyUrlToken}`, apiKey: "env:SW_SEC_PROXY_KEY" }],
      // The "TLS proxy" of the cookie test connects from 127.0.0.3.
      server: { trustProxy: ["127.0.0.3"] },
      operators: [
        { name: "sec-op", password: "env:SW_SEC_PW" },
        { name: "hash-op", password: scryptHash },
        { name: "limited", password: "env:SW_SEC_PW" },
        { name: "spoofer", password: "env:SW_SEC_PW" },
      ],
    }),
  );
  app = await startApp({
    STEPWATCH_CONFIG: configPath,
    STEPWATCH_DB: path.join(dir, "db", "stepwatch.db"),
    STEPWATCH_SESSION_SECRET: S.sessionSecret,
    SW_SEC_APIKEY: S.apiKey,
    SW_SEC_PROXY_KEY: S.proxyKey,
    SW_SEC_PW: S.operatorPw,
    SW_SEC_HOOK_URL: `${hookBase.replace("//", `//hook:${S.hookUrlPass}@`)}/restart?token=${S.hookUrlToken}`,
    SW_SEC_HOOK_TOKEN: S.hookToken,
    SW_SEC_CMD_ENV: S.cmdEnv,
  });
  cookie = await signIn(app, "sec-op", S.operatorPw);
  await waitFor("every backend idle", async () => (await getJson<FleetResponse>(`${app.url}/api/fleet`))?.body.backends.every((b) => b.state === "idle"), 30_000);
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await new Promise((r) => hooks?.close(r));
  await Promise.allSettled(Object.values(sims).map((s) => s.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const foreign = "https://evil.example";

describe("mutating routes: a signed-in operator AND the same origin", () => {
  it("restart: 401 without a session, 403 from a foreign or opaque Origin even with one", async () => {
    const body = JSON.stringify({ confirm: "argv" });
    const url = "/api/backends/argv/restart";
    expect((await get(url, { method: "POST", body })).status).toBe(401);
    expect((await get(url, { method: "POST", body, origin: app.url })).status).toBe(401);
    for (const origin of [foreign, "null", `http://localhost:${app.port + 1}`, "not a url"]) {
      const r = await get(url, { method: "POST", body, cookie, origin });
      expect(r.status, origin).toBe(403);
      expect((r.json as { message: string }).message).toMatch(/not accepted/);
    }
    expect(fs.existsSync(argvFile())).toBe(false);
  });

  it("a session from the page's own origin gets past both checks (here: 422, the healthy backend's id not typed)", async () => {
    const r = await get("/api/backends/argv/restart", { method: "POST", body: "{}", cookie, origin: app.url });
    expect(r.status).toBe(422);
    // A script without Origin (curl) holding the cookie is let through too.
    expect((await get("/api/backends/argv/restart", { method: "POST", body: "{}", cookie })).status).toBe(422);
    expect(fs.existsSync(argvFile())).toBe(false);
  });

  it("sign-in and sign-out refuse a foreign Origin", async () => {
    const signInBody = JSON.stringify({ name: "sec-op", password: S.operatorPw });
    const r = await get("/api/session", { method: "POST", body: signInBody, origin: foreign });
    expect(r.status).toBe(403);
    expect(r.headers.get("set-cookie")).toBeNull();
    expect((await get("/api/session", { method: "DELETE", cookie, origin: foreign })).status).toBe(403);
  });

  it("read routes take no writes", async () => {
    for (const p of ["/api/fleet", "/api/restarts", "/api/backends/argv/history", "/metrics"]) {
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        const r = await get(p, { method, cookie, origin: app.url, body: "{}" });
        expect(r.status, `${method} ${p}`).toBe(405);
      }
    }
  });
});

describe("sessions", () => {
  it("a made-up token, or one that was signed out, does not work", async () => {
    const mine = await signIn(app, "sec-op", S.operatorPw);
    expect((await get("/api/session", { cookie: mine })).json).toMatchObject({ operator: "sec-op" });
    for (const [what, c] of [["made up", "stepwatch_session=" + "A".repeat(43)], ["garbage", "stepwatch_session=x.y"]]) {
      expect((await get("/api/session", { cookie: c })).json, what).toMatchObject({ operator: null });
      const r = await get("/api/backends/argv/restart", { method: "POST", body: JSON.stringify({ confirm: "argv" }), cookie: c, origin: app.url });
      expect(r.status, what).toBe(401);
    }
    expect((await get("/api/session", { method: "DELETE", cookie: mine, origin: app.url })).status).toBe(200);
    expect((await get("/api/session", { cookie: mine })).json).toMatchObject({ operator: null });
    expect((await get("/api/backends/argv/restart", { method: "POST", body: "{}", cookie: mine, origin: app.url })).status).toBe(401);
  });

  it("the cookie is httpOnly, SameSite=Strict, path /, expires; Secure and __Host- behind a trusted TLS proxy only", async () => {
    const body = JSON.stringify({ name: "sec-op", password: S.operatorPw });
    const plain = await get("/api/session", { method: "POST", body, origin: app.url });
    const set = plain.headers.get("set-cookie")!;
    expect(set).toMatch(/HttpOnly/i);
    expect(set).toMatch(/SameSite=Strict/i);
    expect(set).toMatch(/Path=\//);
    expect(set).toMatch(/Expires=/i);
    expect(set).not.toMatch(/Secure/i);
    // From a client that is not a listed proxy, X-Forwarded-Proto is not believed.
    const claimed = await get("/api/session", { method: "POST", body, origin: app.url, headers: { "x-forwarded-proto": "https" } });
    expect(claimed.status).toBe(200);
    expect(claimed.headers.get("set-cookie")).toMatch(/^stepwatch_session=/);
    expect(claimed.headers.get("set-cookie")).not.toMatch(/Secure/i);
    const host = new URL(app.url).host;
    const tls = await get("/api/session", { method: "POST", body, origin: `https://${host}`, from: "127.0.0.3", headers: { "x-forwarded-proto": "https" } });
    expect(tls.status, tls.text).toBe(200);
    expect(tls.headers.get("set-cookie")).toMatch(/^__Host-stepwatch_session=/);
    expect(tls.headers.get("set-cookie")).toMatch(/Secure/i);
    expect(tls.headers.get("strict-transport-security")).toMatch(/max-age=\d+/);
    expect(plain.headers.get("strict-transport-security")).toBeNull();
  });

  it("a scrypt hash from `npm run hash-password` signs in; a wrong password does not", async () => {
    const ok = await get("/api/session", { method: "POST", body: JSON.stringify({ name: "hash-op", password: S.hashedPw }), origin: app.url });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ operator: "hash-op" });
    const bad = await get("/api/session", { method: "POST", body: JSON.stringify({ name: "hash-op", password: "nope" }), origin: app.url });
    expect(bad.status).toBe(401);
    expect(bad.headers.get("set-cookie")).toBeNull();
  });
});

describe("sign-in rate limit", () => {
  const attempt = (name: string, password: string, headers: Record<string, string> = {}) =>
    get("/api/session", { method: "POST", body: JSON.stringify({ name, password }), origin: app.url, headers });

  it("after 5 failures: 429 with Retry-After, even for the right password", async () => {
    for (let i = 0; i < 5; i++) expect((await attempt("limited", `guess-${i}`)).status).toBe(401);
    const r = await attempt("limited", "guess-5");
    expect(r.status).toBe(429);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((r.json as { message: string }).message).toMatch(/too many failed sign-ins/);
    expect((await attempt("limited", S.operatorPw)).status).toBe(429);
  }, 30_000);

  it("a client cannot dodge it by sending its own X-Forwarded-For (the socket address counts)", async () => {
    // Before the fix every made-up address had its own count (and 10 of them locked the name for everyone).
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await attempt("spoofer", `guess-${i}`, { "x-forwarded-for": `10.9.8.${i}` })).status);
    expect(statuses).toEqual([...Array(5).fill(401), 429, 429, 429]);
  }, 40_000);
});

describe("the operator's note and request fields never reach the command", () => {
  it("argv is exactly the configured one, no shell runs, and stepwatch's own secrets stay out of its environment", async () => {
    const note = `$(touch ${shellMarker()}); \`touch ${shellMarker()}\` && rm -rf / --no-preserve-root; --evil "quoted" 'single'`;
    const unknownField = await askRestart(app, cookie, "argv", { confirm: "argv", note, argv: ["--evil"] });
    expect(unknownField.status).toBe(400);
    const r = await askRestart(app, cookie, "argv", { confirm: "argv", note, overrideCooldown: true });
    expect(r.status, r.text).toBe(202);
    const recorded = await waitFor("the command ran", () => (fs.existsSync(argvFile()) ? fs.readFileSync(argvFile(), "utf8").trim() : null), 15_000);
    expect(recorded.split("\n").map((l) => JSON.parse(l))).toEqual([{ argv: ["--unit", "vllm@argv", "fixed arg with spaces"], env: true, own: [] }]);
    expect(fs.existsSync(shellMarker())).toBe(false);
    const event = (r.json as { event: RestartEventDTO }).event;
    expect(event.note).toBe(note);
    expect(event.requestedBy).toBe("sec-op");
  });

  it("the webhook gets ids only (never the note), with its secret header", async () => {
    const r = await askRestart(app, cookie, "hook", { confirm: "hook", note: "note-for-the-record-only" });
    expect(r.status, r.text).toBe(202);
    const req = await waitFor("the webhook called", () => hookRequests[0], 15_000);
    expect(req.headers.authorization).toBe(S.hookToken);
    expect(req.url).toBe(`/restart?token=${S.hookUrlToken}`);
    expect(JSON.parse(req.body)).toEqual({ backend: "hook", event: (r.json as { event: RestartEventDTO }).event.id, requestedBy: "sec-op" });
  });
});

describe("bad input: 4xx with a reason", () => {
  const restart = (body: string, headers: Record<string, string> = {}) =>
    get("/api/backends/argv/restart", { method: "POST", body, cookie, origin: app.url, headers });
  const reason = (r: { json: unknown }) => (r.json as { message?: string })?.message ?? "";

  it.each([
    { what: "malformed JSON", body: "{confirm:", status: 400, msg: /not valid JSON/ },
    { what: "an array", body: "[1,2]", status: 400, msg: /body|expected/i },
    { what: "confirm of the wrong type", body: '{"confirm":5}', status: 400, msg: /confirm/ },
    { what: "overrideCooldown of the wrong type", body: '{"overrideCooldown":"yes"}', status: 400, msg: /overrideCooldown/ },
    { what: "a note over 500 characters", body: JSON.stringify({ note: "x".repeat(501) }), status: 400, msg: /note/ },
    { what: "an unknown field", body: '{"command":["sh"]}', status: 400, msg: /command|unrecognized|unknown/i },
    { what: "a 10 KB body", body: JSON.stringify({ note: "x".repeat(10_000) }), status: 413, msg: /over 4096 bytes/ },
  ])("restart: $what -> $status", async ({ body, status, msg }) => {
    const r = await restart(body);
    expect(r.status).toBe(status);
    expect(reason(r)).toMatch(msg);
  });

  it("restart: an oversize body without Content-Length (chunked) -> 413", async () => {
    const chunk = new TextEncoder().encode(`{"note":"${"y".repeat(3000)}`);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(chunk);
        c.enqueue(chunk);
        c.close();
      },
    });
    const res = await fetch(`${app.url}/api/backends/argv/restart`, {
      method: "POST",
      headers: { cookie, origin: app.url, "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit & { duplex: "half" });
    expect(res.status).toBe(413);
  });

  it("restart: an unknown backend id -> 404 naming it", async () => {
    const r = await get("/api/backends/no-such-backend/restart", { method: "POST", body: '{"confirm":"no-such-backend"}', cookie, origin: app.url });
    expect(r.status).toBe(404);
    expect(reason(r)).toContain("no-such-backend");
    const h = await get("/api/backends/no-such-backend/history");
    expect(h.status).toBe(404);
    expect(reason(h)).toContain("no-such-backend");
  });

  it.each([
    { what: "malformed JSON", body: "name=a&password=b", status: 400 },
    { what: "a missing password", body: '{"name":"sec-op"}', status: 400 },
    { what: "a name of the wrong type", body: '{"name":1,"password":"x"}', status: 400 },
    { what: "a 10 KB body", body: JSON.stringify({ name: "sec-op", password: "p".repeat(10_000) }), status: 413 },
  ])("sign-in: $what -> $status", async ({ body, status }) => {
    const r = await get("/api/session", { method: "POST", body, origin: app.url });
    expect(r.status).toBe(status);
    expect(reason(r).length).toBeGreaterThan(0);
  });

  it.each(["from=abc", "from=10&to=5", "from=-1e400"])("history ?%s -> 400 with a reason", async (q) => {
    const r = await get(`/api/backends/argv/history?${q}`);
    expect(r.status).toBe(400);
    expect(reason(r).length).toBeGreaterThan(0);
  });
});

describe("security headers on every page and API route", () => {
  const PAGES = ["/", "/signin", "/restarts", "/config", "/backends/keyed", "/backends/argv", "/no-such-page"];
  const APIS = ["/api/fleet", "/api/restarts", "/api/config", "/api/backends/argv/history", "/api/session", "/api/backends/nope/history", "/metrics"];

  it.each([...PAGES, ...APIS])("%s", async (p) => {
    const r = await get(p, { cookie });
    expect(r.status).toBeLessThan(500);
    const csp = r.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("object-src 'none'");
    // Scripts only by this answer's nonce: no 'unsafe-inline' for scripts.
    const scriptSrc = csp.split(";").find((d) => d.trim().startsWith("script-src")) ?? "";
    expect(scriptSrc).toMatch(/'nonce-[A-Za-z0-9+/=]{16,}'/);
    expect(scriptSrc).toContain("'strict-dynamic'");
    expect(scriptSrc).not.toContain("unsafe-inline");
    expect(r.headers.get("x-frame-options")).toBe("DENY");
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    expect(r.headers.get("x-powered-by")).toBeNull();
  });

  it("also on refusals (401, 403) of the restart route", async () => {
    for (const opts of [{}, { cookie, origin: foreign }]) {
      const r = await get("/api/backends/argv/restart", { method: "POST", body: "{}", ...opts });
      expect([401, 403]).toContain(r.status);
      expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });
});

describe("no secret anywhere a browser or a log reader can see", () => {
  it("API answers, pages, their scripts and the server log hold none of the config's secrets", async () => {
    // Make the app do everything once more: reads, history, restarts list, pages, a failed sign-in.
    await waitFor("the webhook restart recorded", async () => (await getJson<RestartEventDTO[]>(`${app.url}/api/restarts`))?.body.some((e) => e.backendId === "hook" && e.commandFinishedAt !== null), 15_000);
    for (const p of ["/api/fleet", "/api/restarts", "/api/config", "/api/session", "/api/backends/keyed/history", "/api/backends/argv/history", "/api/backends/hook/history", "/metrics"]) {
      await get(p, { cookie });
      await get(p);
    }
    const scripts = new Set<string>();
    for (const p of ["/", "/signin", "/restarts", "/config", "/backends/keyed", "/backends/argv", "/backends/hook", "/no-such-page"]) {
      for (const c of [cookie, undefined]) {
        const r = await get(p, { cookie: c });
        for (const m of r.text.matchAll(/<script[^>]+src="([^"]+)"/g)) scripts.add(m[1]);
      }
    }
    expect(scripts.size).toBeGreaterThan(0);
    for (const s of scripts) await get(s);
    await get("/api/session", { method: "POST", body: JSON.stringify({ name: "sec-op", password: `${S.operatorPw}-wrong` }), origin: app.url });

    const fleet = (await getJson<FleetResponse>(`${app.url}/api/fleet`))!.body;
    expect(fleet.backends.find((b) => b.id === "keyed")!.state).toBe("idle"); // the key was used, and worked
    const hookEvent = (await getJson<RestartEventDTO[]>(`${app.url}/api/restarts`))!.body.find((e) => e.backendId === "hook")!;
    expect(hookEvent.action).toMatch(/^webhook: POST http:\/\/\*\*\*@127\.0\.0\.1:\d+\/restart\?\*\*\*$/);
    expect(fleet.backends.find((b) => b.id === "argv")!.url).toBe(sims.argv.url.replace("//", "//***@"));
    expect(fleet.proxies.find((p) => p.id === "lb")!.url).toBe(`${sims.lb.url}/?***`);

    const sources = [...seen, { what: "server log", text: app.output() }, { what: "scrypt hash", text: "" }];
    const leaks: string[] = [];
    for (const { what, text } of sources) {
      for (const secret of [...SECRET_VALUES, scryptHash, scryptHash.split(":")[5]]) {
        if (text.includes(secret)) leaks.push(`${what} contains ${secret.slice(0, 12)}...`);
      }
    }
    expect(leaks).toEqual([]);
    expect(seen.length).toBeGreaterThan(40);
  }, 60_000);
});
