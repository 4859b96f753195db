/**
 * The fleet's fast lane (lib/api/fast-lane.ts) over real HTTP against the built app (`next start`)
 * watching real simulators on 127.0.0.1:
 * - parity: the lane's answer to GET /api/fleet and Next's own are the same (status, body bytes,
 *   the headers that matter) for a plain GET, a gzip GET, If-None-Match (304, no body) and HEAD.
 *   Next's own answer comes from the same process (`/api/fleet?next`: the lane answers only the
 *   bare path; the route ignores the query and reads the one process-wide cache, so both name
 *   the same bytes) and from a second app with STEPWATCH_FLEET_FAST_LANE=off (the escape hatch);
 * - falling through: with access.read "signed-in", no credentials get Next's 401, a session
 *   cookie, an API token or a trusted proxy's user get the lane's 200; a wrong token, a
 *   disallowed Host, POST, deflate, /api/fleet/recent and /api/fleet?x are Next's;
 * - a backend's history (JSON) from the lane is the route's, byte for byte (Next's answer asked
 *   with an extra query key, which the lane leaves to Next and the route ignores); errors, the
 *   CSV, HEAD and deflate are Next's.
 *
 * Who answered: Next puts `Vary: rsc, next-router-state-tree, ...` on every route answer; the
 * lane sends `Vary: Accept-Encoding` only (no header of its own is added to tell them apart).
 * Raw bytes through undici (fetch would decompress on its own).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetResponse } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

const T = { viewer: "lane-viewer-token-0123456789abcdef", op: "lane-op-pw" };
let dir: string;
let sims: Simulator[] = [];
/** access.read "open" (the default), lane on. */
let open: RunningApp;
/** The same, STEPWATCH_FLEET_FAST_LANE=off: Next answers everything. */
let off: RunningApp;
/** access.read "signed-in", lane on. */
let gated: RunningApp;
const agents: Agent[] = [];

interface Answer {
  status: number;
  body: Buffer;
  headers: Record<string, string>;
}

async function get(app: RunningApp, p: string, headers: Record<string, string> = {}, method: "GET" | "HEAD" | "POST" = "GET", from?: string): Promise<Answer> {
  let dispatcher: Agent | undefined;
  if (from) {
    dispatcher = new Agent({ localAddress: from });
    agents.push(dispatcher);
  }
  const res = await request(`${app.url}${p}`, { method, headers, headersTimeout: 10_000, bodyTimeout: 10_000, ...(dispatcher ? { dispatcher } : {}) });
  const body = Buffer.from(await res.body.arrayBuffer());
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
  return { status: res.statusCode, body, headers: h };
}

/** Next's Vary names its React Server Component request headers; the lane's does not. */
const byLane = (a: Answer) => a.headers.vary === "Accept-Encoding";
const byNext = (a: Answer) => /\brsc\b/.test(a.headers.vary ?? "");

/** Headers only one of the two sends, or whose value differs by design: see the module comment. */
const TRANSPORT = new Set(["date", "connection", "keep-alive", "transfer-encoding", "content-length", "vary"]);
const SECURITY = ["x-frame-options", "x-content-type-options", "referrer-policy", "cross-origin-opener-policy", "cross-origin-resource-policy"];

/** The lane's answer and Next's agree: status, every header but the transport ones (the CSP's nonce aside), body. */
function expectSame(lane: Answer, next: Answer, opts: { sameBody: boolean; etag?: boolean }) {
  expect(byLane(lane)).toBe(true);
  expect(byNext(next)).toBe(true);
  expect(lane.status).toBe(next.status);
  const names = (a: Answer) => Object.keys(a.headers).filter((k) => !TRANSPORT.has(k)).sort();
  expect(names(lane)).toEqual(names(next));
  for (const k of names(next)) {
    if (k === "content-security-policy" || k === "etag") continue;
    expect([k, lane.headers[k]]).toEqual([k, next.headers[k]]);
  }
  const noNonce = (csp: string) => csp.replace(/'nonce-[^']+'/, "'nonce-N'");
  expect(lane.headers["content-security-policy"]).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]{24}' 'strict-dynamic'/);
  expect(noNonce(lane.headers["content-security-policy"])).toBe(noNonce(next.headers["content-security-policy"]));
  expect(lane.headers["content-security-policy"]).not.toBe(next.headers["content-security-policy"]); // a fresh nonce each
  for (const k of SECURITY) expect(lane.headers[k]).toBeTruthy();
  if (opts.etag !== false) expect(lane.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
  if (opts.sameBody) {
    expect(lane.headers.etag).toBe(next.headers.etag);
    expect(lane.body.equals(next.body)).toBe(true);
  }
}

/** Asks the lane and Next (same process) until both answered from one snapshot (it is rebuilt every 250 ms at most). */
async function pair(headers: Record<string, string>, method: "GET" | "HEAD" = "GET", app: RunningApp = open, what = "a lane and a Next answer of one snapshot") {
  return waitFor(
    what,
    async () => {
      const lane = await get(app, "/api/fleet", headers, method);
      const next = await get(app, "/api/fleet?next", headers, method);
      return lane.headers.etag === next.headers.etag ? { lane, next } : null;
    },
    20_000,
    0,
  );
}

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-fast-lane-"));
  sims = [await startSimulator(), await startSimulator()];
  // s0 carries labels: the lane's bytes must hold them exactly as Next's do.
  const backends = sims.map((s, i) => ({ id: `s${i}`, url: s.url, ...(i === 0 ? { labels: { site: "ams", gpu: "h100" } } : {}) }));
  const write = (name: string, extra: Record<string, unknown>) => {
    const p = path.join(dir, `${name}.config.json`);
    fs.writeFileSync(p, JSON.stringify({ pollIntervalSeconds: 1, backends, ...extra }));
    return p;
  };
  const openCfg = write("open", {});
  const gatedCfg = write("gated", {
    access: { read: "signed-in" },
    operators: [{ name: "op", password: "env:SW_L_OP" }],
    tokens: [{ name: "dash", token: "env:SW_L_VIEWER", role: "viewer" }],
    auth: { proxyHeader: "X-Forwarded-User" },
    server: { trustProxy: ["127.0.0.3"] },
  });
  const env = (name: string, cfg: string, extra: Record<string, string> = {}) => ({ STEPWATCH_CONFIG: cfg, STEPWATCH_DB: path.join(dir, `${name}.db`), ...extra });
  [open, off, gated] = await Promise.all([
    startApp(env("open", openCfg)),
    startApp(env("off", openCfg, { STEPWATCH_FLEET_FAST_LANE: "off" })),
    startApp(env("gated", gatedCfg, { SW_L_OP: T.op, SW_L_VIEWER: T.viewer })),
  ]);
  // Every backend read once, so the answers carry real readings.
  await waitFor("both backends read", async () => {
    const r = await get(open, "/api/fleet");
    const f = JSON.parse(r.body.toString("utf8")) as FleetResponse;
    return f.backends.length === 2 && f.backends.every((b) => b.lastReadAt !== null);
  }, 30_000);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([open?.stop(), off?.stop(), gated?.stop()]);
  await Promise.allSettled(agents.map((a) => a.close()));
  await Promise.allSettled(sims.map((s) => s.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("parity: the lane's answer is Next's", () => {
  it("plain GET: 200, the same bytes and ETag, no-cache, application/json, the security headers and CSP", async () => {
    const { lane, next } = await pair({});
    expectSame(lane, next, { sameBody: true });
    expect(lane.status).toBe(200);
    expect(lane.headers["cache-control"]).toBe("no-cache");
    expect(lane.headers["content-type"]).toBe("application/json");
    expect(lane.headers["content-encoding"]).toBeUndefined();
    expect(Number(lane.headers["content-length"])).toBe(lane.body.length);
    expect((JSON.parse(lane.body.toString("utf8")) as FleetResponse).backends.map((b) => b.id)).toEqual(["s0", "s1"]);
  });

  it("the answer carries each backend's config labels ({} for none), in both lanes", async () => {
    for (const app of [open, off]) {
      const f = JSON.parse((await get(app, "/api/fleet")).body.toString("utf8")) as FleetResponse;
      expect(f.backends.map((b) => [b.id, b.labels])).toEqual([
        ["s0", { site: "ams", gpu: "h100" }],
        ["s1", {}],
      ]);
    }
  });

  it("gzip GET: Content-Encoding gzip, and the bytes gunzip to Next's", async () => {
    const { lane, next } = await pair({ "accept-encoding": "gzip, deflate, br" });
    expectSame(lane, next, { sameBody: false });
    expect(lane.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(lane.body).equals(gunzipSync(next.body))).toBe(true);
    const plain = await get(open, "/api/fleet");
    if (plain.headers.etag === lane.headers.etag) expect(gunzipSync(lane.body).equals(plain.body)).toBe(true);
  });

  it("If-None-Match with the ETag: 304 with no body, the ETag and no-cache, from both", async () => {
    const { lane, next } = await waitFor(
      "a 304 from both of one snapshot",
      async () => {
        const first = await get(open, "/api/fleet");
        const h = { "if-none-match": first.headers.etag, "accept-encoding": "gzip" };
        const p = { lane: await get(open, "/api/fleet", h), next: await get(open, "/api/fleet?next", h) };
        return p.lane.status === 304 && p.next.status === 304 ? p : null;
      },
      20_000,
      0,
    );
    expectSame(lane, next, { sameBody: true });
    expect(lane.body.length).toBe(0);
    expect(lane.headers["content-type"]).toBeUndefined();
    expect(lane.headers["cache-control"]).toBe("no-cache");
    // Another tag is not a match.
    const other = await get(open, "/api/fleet", { "if-none-match": '"other"' });
    expect(other.status).toBe(200);
    expect(byLane(other)).toBe(true);
  });

  it("HEAD: the GET's status and headers, no body (not compressed, as Next's)", async () => {
    const { lane, next } = await pair({ "accept-encoding": "gzip" }, "HEAD");
    expectSame(lane, next, { sameBody: true });
    expect(lane.status).toBe(200);
    expect(lane.body.length).toBe(0);
    expect(lane.headers["content-encoding"]).toBeUndefined();
    expect(lane.headers["content-type"]).toBe("application/json");
  });

  it("STEPWATCH_FLEET_FAST_LANE=off: Next answers /api/fleet, with the lane's headers", async () => {
    for (const h of [{}, { "accept-encoding": "gzip" }] as Array<Record<string, string>>) {
      const lane = await get(open, "/api/fleet", h);
      const next = await get(off, "/api/fleet", h);
      expectSame(lane, next, { sameBody: false });
      expect(lane.headers["content-encoding"]).toBe(next.headers["content-encoding"]);
      const [l, n] = [lane, next].map((a) => JSON.parse((a.headers["content-encoding"] ? gunzipSync(a.body) : a.body).toString("utf8")) as FleetResponse);
      expect(Object.keys(l).sort()).toEqual(Object.keys(n).sort());
      expect(l.backends.map((b) => b.id)).toEqual(n.backends.map((b) => b.id));
    }
    const first = await get(off, "/api/fleet");
    const again = await get(off, "/api/fleet", { "if-none-match": first.headers.etag });
    expect(byNext(again)).toBe(true);
    expect([200, 304]).toContain(again.status);
  });
});

describe("what the lane leaves to Next", () => {
  it("other paths and methods: /api/fleet?x, /api/fleet/recent, POST, deflate", async () => {
    const q = await get(open, "/api/fleet?x=1");
    expect(q.status).toBe(200);
    expect(byNext(q)).toBe(true);
    const recent = await get(open, "/api/fleet/recent");
    expect(recent.status).toBe(200);
    expect(byNext(recent)).toBe(true);
    const post = await get(open, "/api/fleet", {}, "POST");
    const postOff = await get(off, "/api/fleet", {}, "POST");
    expect(post.status).toBe(405);
    expect(byNext(post)).toBe(true);
    expect(post.status).toBe(postOff.status);
    const deflate = await get(open, "/api/fleet", { "accept-encoding": "deflate" });
    expect(deflate.status).toBe(200);
    expect(deflate.headers["content-encoding"]).toBe("deflate");
    expect(byNext(deflate)).toBe(true);
  });

  it("a Host that is not allowed: Next's 421 page", async () => {
    const r = await get(open, "/api/fleet", { host: "rebind.example" });
    expect(r.status).toBe(421);
    expect(r.body.toString("utf8")).toContain("This host name is not served");
    expect(r.headers["content-security-policy"]).toBeTruthy();
    // An allowed name (localhost) is the lane's.
    const ok = await get(open, "/api/fleet", { host: "localhost" });
    expect(ok.status).toBe(200);
    expect(byLane(ok)).toBe(true);
  });

  it('access.read "signed-in": no credentials or a wrong token get Next\'s 401; a cookie, a token, a trusted proxy\'s user the lane\'s 200', async () => {
    // Refusals come from Next's Proxy (proxy.ts), which puts no route Vary on them: the status and body say who.
    const none = await get(gated, "/api/fleet");
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body.toString("utf8"))).toMatchObject({ error: "unauthenticated" });
    const wrong = await get(gated, "/api/fleet", { authorization: "Bearer not-a-token" });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body.toString("utf8"))).toMatchObject({ error: "unauthenticated" });
    // The proxy's user header from an address that is not a trusted proxy counts for nothing.
    const untrusted = await get(gated, "/api/fleet", { "x-forwarded-user": "op" });
    expect(untrusted.status).toBe(401);

    const token = await get(gated, "/api/fleet", { authorization: `Bearer ${T.viewer}` });
    expect(token.status).toBe(200);
    expect(byLane(token)).toBe(true);
    const cookie = await signIn(gated, "op", T.op);
    const session = await get(gated, "/api/fleet", { cookie, "accept-encoding": "gzip" });
    expect(session.status).toBe(200);
    expect(byLane(session)).toBe(true);
    expect((JSON.parse(gunzipSync(session.body).toString("utf8")) as FleetResponse).backends).toHaveLength(2);
    const proxied = await get(gated, "/api/fleet", { "x-forwarded-user": "someone" }, "GET", "127.0.0.3");
    expect(proxied.status).toBe(200);
    expect(byLane(proxied)).toBe(true);
    // A signed-out cookie no longer opens the lane (the session is resolved per request).
    const out = await request(`${gated.url}/api/session`, { method: "DELETE", headers: { cookie, origin: gated.url } });
    await out.body.arrayBuffer();
    expect(out.statusCode).toBeLessThan(300);
    const after = await get(gated, "/api/fleet", { cookie });
    expect(after.status).toBe(401);
  });

  it("signed in, the lane's answer is Next's too", async () => {
    const h = { authorization: `Bearer ${T.viewer}`, "accept-encoding": "gzip" };
    const { lane, next } = await pair(h, "GET", gated);
    expectSame(lane, next, { sameBody: false });
    expect(gunzipSync(lane.body).equals(gunzipSync(next.body))).toBe(true);
  });
});

describe("a backend's history: the lane's JSON is the route's", () => {
  /**
   * A range that ended 3 s ago (the watcher writes its readings every second): every reading in it
   * is stored, so both answers see the same rows.
   */
  const range = () => {
    const to = Date.now() - 3000;
    return `from=${to - 120_000}&to=${to}`;
  };
  beforeAll(async () => {
    // Readings of s0 older than the range's end.
    await waitFor("a stored reading of s0 3 s old", async () => {
      const r = await get(open, `/api/backends/s0/history?${range()}`);
      return (JSON.parse(r.body.toString("utf8")) as { count: number }).count > 0;
    }, 20_000);
  });

  it("plain and gzip GET: 200, the same bytes, no-store, application/json, the security headers and CSP", async () => {
    const q = range();
    for (const h of [{}, { "accept-encoding": "gzip, deflate, br" }] as Array<Record<string, string>>) {
      const lane = await get(open, `/api/backends/s0/history?${q}`, h);
      // An extra key is Next's (the route ignores it): the same range, answered by the route.
      const next = await get(open, `/api/backends/s0/history?${q}&next`, h);
      expectSame(lane, next, { sameBody: !h["accept-encoding"], etag: false });
      expect(lane.status).toBe(200);
      expect(lane.headers["cache-control"]).toBe("no-store");
      expect(lane.headers["content-type"]).toBe("application/json");
      expect(lane.headers["content-encoding"]).toBe(next.headers["content-encoding"]);
      const plain = (a: Answer) => (a.headers["content-encoding"] === "gzip" ? gunzipSync(a.body) : a.body);
      expect(plain(lane).equals(plain(next))).toBe(true);
      const body = JSON.parse(plain(lane).toString("utf8")) as { backendId: string; count: number };
      expect(body.backendId).toBe("s0");
      expect(body.count).toBeGreaterThan(0);
    }
  });

  it("an unknown backend, a bad range, the CSV, HEAD and deflate are Next's", async () => {
    const unknown = await get(open, `/api/backends/nope/history?${range()}`);
    expect(unknown.status).toBe(404);
    expect(byNext(unknown)).toBe(true);
    const bad = await get(open, "/api/backends/s0/history?from=9&to=5");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body.toString("utf8"))).toMatchObject({ error: "bad-request" });
    const csv = await get(open, `/api/backends/s0/history?${range()}&format=csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers["content-type"]).toMatch(/^text\/csv/);
    const head = await get(open, `/api/backends/s0/history?${range()}`, {}, "HEAD");
    expect(byNext(head)).toBe(true);
    const deflate = await get(open, `/api/backends/s0/history?${range()}`, { "accept-encoding": "deflate" });
    expect(deflate.headers["content-encoding"]).toBe("deflate");
    expect(byNext(deflate)).toBe(true);
  });

  it('access.read "signed-in": Next\'s 401 without credentials, the lane\'s 200 with a token; lane off: Next\'s', async () => {
    const q = range();
    const none = await get(gated, `/api/backends/s0/history?${q}`);
    expect(none.status).toBe(401);
    const token = await get(gated, `/api/backends/s0/history?${q}`, { authorization: `Bearer ${T.viewer}` });
    expect(token.status).toBe(200);
    expect(byLane(token)).toBe(true);
    const off1 = await get(off, `/api/backends/s0/history?${q}`);
    expect(off1.status).toBe(200);
    expect(byNext(off1)).toBe(true);
  });
});
