/**
 * Who may read and who may act, over real HTTP against the built app:
 * - access.read "signed-in": pages send strangers to /signin, the read API answers 401;
 * - a viewer reads and never restarts (403); an operator restarts;
 * - API tokens (Authorization: Bearer, from "env:NAME") with their role, recorded as the actor;
 *   a wrong Bearer is refused even next to a valid cookie; wrong ones (API and /metrics tokens)
 *   count against the address like failed sign-ins (429 past the limit), audited as a summary;
 * - trusted reverse-proxy sign-in (auth.proxyHeader), believed only from server.trustProxy;
 * - the audit log (sign-ins ok and failed with name and address, sign-outs, restarts, the config
 *   load), readable by operators only.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RestartEventDTO } from "@/lib/api/types";
import type { AuditEntryDTO } from "@/lib/api/audit";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, call, nodeScript, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

const T = { ci: "ci-token-0123456789abcdef0123456789", dash: "dash-token-fedcba9876543210fedcba98", op: "access-op-pw", vic: "access-viewer-pw", scrape: "scrape-token-0123456789abcdef012345" };
/** Every read route and page, main's later ones included: the gate in proxy.ts covers them without a list of its own. */
const READ_API = [
  "/api/fleet",
  "/api/fleet/recent",
  "/api/outages",
  "/api/outages?format=csv",
  "/api/restarts",
  "/api/restarts?format=csv",
  "/api/backends/b1/history",
  "/api/backends/b1/history?format=csv",
  "/api/backends/b1/restart-plan",
  "/api/backends/b1/replay",
  "/api/backends/b1/advice",
  "/api/evidence?backend=b1",
  "/api/availability",
  "/api/availability?format=csv",
  "/api/cluster",
];
const PAGES = ["/", "/restarts", "/backends/b1", "/history", "/availability"];
let dir: string;
let app: RunningApp;
let sim: Simulator;

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-access-"));
  sim = await startSimulator();
  const ok = nodeScript(dir, "ok", "process.exit(0)");
  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      restartCooldownSeconds: 0,
      backends: [
        { id: "b1", url: sim.url, restart: { command: ok } },
        { id: "b2", url: sim.url, restart: { command: ok } },
      ],
      operators: [
        { name: "op", password: "env:SW_A_OP" },
        { name: "vic", password: "env:SW_A_VIC", role: "viewer" },
      ],
      tokens: [
        { name: "ci", token: "env:SW_A_CI", role: "operator" },
        { name: "dash", token: "env:SW_A_DASH", role: "viewer" },
      ],
      access: { read: "signed-in" },
      auth: { proxyHeader: "X-Forwarded-User" },
      server: { trustProxy: ["127.0.0.3"] },
      metrics: { bearerToken: "env:SW_A_SCRAPE" },
    }),
  );
  app = await startApp({ STEPWATCH_CONFIG: configPath, STEPWATCH_DB: path.join(dir, "db", "sw.db"), SW_A_OP: T.op, SW_A_VIC: T.vic, SW_A_CI: T.ci, SW_A_DASH: T.dash, SW_A_SCRAPE: T.scrape });
  // b1's first reading stored: the replay and advice answer 400 ("no readings") until then, which
  // on a loaded machine came after the first reads below (a 400 there is not what they test).
  await waitFor("b1's first reading stored", async () => (await call(`${app.url}/api/backends/b1/replay`, { headers: { authorization: `Bearer ${T.dash}` } })).status === 200, 30_000);
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await sim?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const restart = (opts: { cookie?: string; headers?: Record<string, string>; from?: string }, id = "b1") =>
  call(`${app.url}/api/backends/${id}/restart`, { method: "POST", body: JSON.stringify({ confirm: id, overrideCooldown: true }), ...opts });

describe('access.read: "signed-in"', () => {
  it("strangers are sent to /signin (pages) or get 401 (API); the sign-in itself stays reachable", async () => {
    for (const p of [...READ_API, "/api/sessions"]) {
      const r = await call(`${app.url}${p}`);
      expect(r.status, p).toBe(401);
      expect(r.text).not.toContain('"backends"');
    }
    for (const p of PAGES) {
      const r = await call(`${app.url}${p}`);
      expect(r.status, p).toBe(303);
      expect(new URL(r.headers.get("location") ?? "", app.url).href).toBe(`${app.url}/signin?next=${encodeURIComponent(p)}`);
    }
    expect((await call(`${app.url}/signin`)).status).toBe(200);
    expect((await call(`${app.url}/api/session`)).json).toMatchObject({ operator: null });
  });

  it("a viewer reads and cannot restart; an operator can", async () => {
    const vic = await signIn(app, "vic", T.vic);
    for (const p of [...READ_API, ...PAGES]) expect((await call(`${app.url}${p}`, { cookie: vic })).status, p).toBe(200);
    expect((await call(`${app.url}/api/session`, { cookie: vic })).json).toMatchObject({ operator: "vic", role: "viewer", via: "session" });
    const refused = await restart({ cookie: vic, headers: { origin: app.url } });
    expect(refused.status).toBe(403);
    expect((refused.json as { message: string }).message).toMatch(/viewer/);
    const op = await signIn(app, "op", T.op);
    const r = await restart({ cookie: op, headers: { origin: app.url } });
    expect(r.status, r.text).toBe(202);
    expect((r.json as { event: RestartEventDTO }).event.requestedBy).toBe("op");
  }, 60_000);
});

describe("the warm-up render at start (lib/api/warm-up.ts)", () => {
  it("asks / with no credentials, is sent to /signin by the read gate like any stranger, and renders that page", async () => {
    await waitFor("the warm-up's log line", async () => /stepwatch: rendered \/ then \/signin \(200, \d+ ms\) once at start/.test(app.output()), 60_000);
    expect(app.output()).not.toMatch(/warm-up render of .* failed/);
  }, 70_000);
});

describe("GET /metrics (the Prometheus export) under access.read signed-in", () => {
  it("is outside the read gate and answers to its own metrics.bearerToken only", async () => {
    const stranger = await call(`${app.url}/metrics`);
    expect(stranger.status).toBe(401);
    expect(stranger.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(stranger.text).not.toContain("stepwatch_backend");
    // Not an API token, not a session: a scraper has neither, and a viewer's token is not the scrape token.
    expect((await call(`${app.url}/metrics`, { headers: bearer(T.dash) })).status).toBe(401);
    const scraped = await call(`${app.url}/metrics`, { headers: bearer(T.scrape) });
    expect(scraped.status).toBe(200);
    expect(scraped.text).toContain('backend="b1"');
  });
});

describe("API tokens", () => {
  it("a viewer token reads; an operator token restarts and is recorded as the actor; a wrong one is 401 even with a cookie", async () => {
    for (const p of READ_API) expect((await call(`${app.url}${p}`, { headers: bearer(T.dash) })).status, p).toBe(200);
    expect((await restart({ headers: bearer(T.dash) })).status).toBe(403);
    const r = await restart({ headers: bearer(T.ci) }, "b2");
    expect(r.status, r.text).toBe(202);
    expect((r.json as { event: RestartEventDTO }).event.requestedBy).toBe("ci");
    const op = await signIn(app, "op", T.op);
    expect((await call(`${app.url}/api/fleet`, { cookie: op, headers: bearer("not-a-token-at-all-000000") })).status).toBe(401);
  }, 60_000);
});

describe("trusted reverse-proxy sign-in (auth.proxyHeader)", () => {
  it("the header is believed from server.trustProxy only; a user the config does not name an operator is a viewer", async () => {
    const asOp = await call(`${app.url}/api/session`, { from: "127.0.0.3", headers: { "x-forwarded-user": "op" } });
    expect(asOp.json).toMatchObject({ operator: "op", role: "operator", via: "proxy" });
    const stranger = await call(`${app.url}/api/session`, { from: "127.0.0.3", headers: { "x-forwarded-user": "someone@example.com" } });
    expect(stranger.json).toMatchObject({ operator: "someone@example.com", role: "viewer", via: "proxy" });
    expect((await call(`${app.url}/api/fleet`, { from: "127.0.0.3", headers: { "x-forwarded-user": "someone@example.com" } })).status).toBe(200);
    expect((await restart({ from: "127.0.0.3", headers: { "x-forwarded-user": "someone@example.com" } })).status).toBe(403);
    // From anywhere else the header is nothing.
    expect((await call(`${app.url}/api/fleet`, { from: "127.0.0.9", headers: { "x-forwarded-user": "op" } })).status).toBe(401);
    expect((await call(`${app.url}/api/session`, { headers: { "x-forwarded-user": "op" } })).json).toMatchObject({ operator: null });
  });
});

describe("audit log", () => {
  it("records sign-ins (ok and failed, with name and address), sign-outs, restarts and the config load; operators only", async () => {
    expect((await call(`${app.url}/api/session`, { method: "POST", body: JSON.stringify({ name: "op", password: "wrong" }), origin: app.url, from: "127.0.0.44" })).status).toBe(401);
    const op = await signIn(app, "op", T.op);
    expect((await call(`${app.url}/api/session`, { method: "DELETE", cookie: op, origin: app.url })).status).toBe(200);
    const op2 = await signIn(app, "op", T.op);
    const r = await call(`${app.url}/api/audit?limit=200`, { cookie: op2 });
    expect(r.status, r.text).toBe(200);
    const entries = (r.json as { entries: AuditEntryDTO[] }).entries;
    const has = (pred: (e: AuditEntryDTO) => boolean) => entries.some(pred);
    expect(has((e) => e.action === "signin.failed" && e.actor === "op" && e.address === "127.0.0.44")).toBe(true);
    expect(has((e) => e.action === "signin.ok" && e.actor === "op" && e.address === "127.0.0.1")).toBe(true);
    expect(has((e) => e.action === "signout" && e.actor === "op")).toBe(true);
    expect(has((e) => e.action === "restart" && e.actor === "op" && e.actorKind === "operator" && e.target === "b1" && e.address === "127.0.0.1")).toBe(true);
    expect(has((e) => e.action === "restart" && e.actor === "ci" && e.actorKind === "token" && e.target === "b2")).toBe(true);
    expect(has((e) => e.action === "config.loaded" && e.actorKind === "system")).toBe(true);
    expect(r.text).not.toContain("wrong"); // never the password tried
    expect(app.output()).toMatch(/signin\.failed for "op" from 127\.0\.0\.44/);

    const vic = await signIn(app, "vic", T.vic);
    expect((await call(`${app.url}/api/audit`, { cookie: vic })).status).toBe(403);
    expect((await call(`${app.url}/api/audit`)).status).toBe(401);
    const page = await call(`${app.url}/audit`, { cookie: op2 });
    expect(page.status).toBe(200);
    expect(page.text).toContain("signin.failed");
  }, 60_000);
});

describe("a wrong Bearer token costs what a wrong password costs", () => {
  it("counts against the client address (20 in the window, then 429 with Retry-After even for a right token), audited as one row a minute", async () => {
    const from = "127.0.0.61"; // its own address: the other tests' budget is untouched
    const guesses: number[] = [];
    for (let i = 0; i < 20; i++) guesses.push((await call(`${app.url}/api/fleet`, { from, headers: bearer(`guess-${i}-0123456789abcdef0123456789`) })).status);
    expect(guesses).toEqual(Array(20).fill(401));
    const over = await call(`${app.url}/api/fleet`, { from, headers: bearer("guess-over-0123456789abcdef0123456789") });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    // A right token from the held-back address is refused too (the answer tells a guesser nothing),
    // on the read gate and on an operator route alike; from another address it works.
    expect((await call(`${app.url}/api/fleet`, { from, headers: bearer(T.dash) })).status).toBe(429);
    const act = await restart({ from, headers: bearer(T.ci) });
    expect(act.status).toBe(429);
    expect(act.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await call(`${app.url}/api/fleet`, { headers: bearer(T.dash) })).status).toBe(200);
    // The same address's sign-in is held back too: one budget per address, whatever it guesses.
    const signin = await call(`${app.url}/api/session`, { method: "POST", body: JSON.stringify({ name: "op", password: T.op }), origin: app.url, from });
    expect(signin.status).toBe(429);

    // /metrics' own token is throttled the same way, per address.
    const scraper = "127.0.0.62";
    for (let i = 0; i < 20; i++) expect((await call(`${app.url}/metrics`, { from: scraper, headers: bearer(`scrape-guess-${i}-0123456789abcdef0123`) })).status).toBe(401);
    const m = await call(`${app.url}/metrics`, { from: scraper, headers: bearer(T.scrape) });
    expect(m.status).toBe(429);
    expect(m.headers.get("retry-after")).toMatch(/^\d+$/);

    const op = await signIn(app, "op", T.op);
    const r = await call(`${app.url}/api/audit?limit=200`, { cookie: op });
    const rows = (r.json as { entries: AuditEntryDTO[] }).entries.filter((e) => e.action === "bearer.failed");
    // 25 failures from 127.0.0.61 and 21 from .62 within a minute: one summary row each, not one per guess.
    expect(rows.filter((e) => e.address === from)).toHaveLength(1);
    expect(rows.filter((e) => e.address === scraper)).toHaveLength(1);
    expect(r.text).not.toContain("guess-"); // never the token tried
    expect(app.output()).not.toContain("guess-");
  }, 60_000);
});
