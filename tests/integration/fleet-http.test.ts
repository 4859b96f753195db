/**
 * GET /api/fleet and /api/fleet/recent over real HTTP against the built app (`next start`): the
 * ETag and its 304 with no body, gzip for a client that asks for it (next start compresses), "no-cache" so a browser keeps
 * the answer and revalidates it, and the sparkline points in their own answer. Simulators on
 * 127.0.0.1; raw bytes through undici (fetch would decompress on its own).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetRecentResponse, FleetResponse } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, getJson, spawnApp, waitFor, type RunningApp } from "./app-support";

let dir: string;
let app: RunningApp | null = null;
const sims: Simulator[] = [];

async function get(p: string, headers: Record<string, string> = {}) {
  const res = await request(`${app!.url}${p}`, { headers, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const body = Buffer.from(await res.body.arrayBuffer());
  const h = (k: string) => {
    const v = res.headers[k];
    return typeof v === "string" ? v : null;
  };
  return { status: res.statusCode, body, etag: h("etag"), encoding: h("content-encoding"), cacheControl: h("cache-control"), type: h("content-type") };
}

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-fleet-http-"));
  for (let i = 0; i < 3; i++) sims.push(await startSimulator());
  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(configPath, JSON.stringify({ pollIntervalSeconds: 1, backends: sims.map((s, i) => ({ id: `s${i}`, url: s.url })) }));
  const a = await spawnApp({ STEPWATCH_CONFIG: configPath, STEPWATCH_DB: path.join(dir, "stepwatch.db") });
  app = a;
  await waitFor(
    "every backend read twice",
    async () => {
      if (a.proc.exitCode !== null) throw new Error(`the app exited:\n${a.output()}`);
      const r = await getJson<FleetRecentResponse>(`${a.url}/api/fleet/recent`);
      return r?.status === 200 && Object.values(r.body.backends).length === 3 && Object.values(r.body.backends).every((p) => p.length >= 2);
    },
    60_000,
  );
}, 90_000);

afterAll(async () => {
  await app?.stop();
  await Promise.allSettled(sims.map((s) => s.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("GET /api/fleet", () => {
  it("carries an ETag and no-cache; the same ETag back gets 304 with no body, a changed fleet a new ETag", async () => {
    const seen: Array<{ status: number; sameTag: boolean }> = [];
    await waitFor(
      "a 304",
      async () => {
        const first = await get("/api/fleet");
        expect(first.status).toBe(200);
        expect(first.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
        expect(first.cacheControl).toBe("no-cache");
        expect(first.type).toMatch(/^application\/json/);
        const again = await get("/api/fleet", { "if-none-match": first.etag! });
        seen.push({ status: again.status, sameTag: again.etag === first.etag });
        if (again.status === 304) {
          expect(again.body.length).toBe(0);
          expect(again.etag).toBe(first.etag);
          return true;
        }
        // The snapshot was rebuilt between the two (every 250 ms at most): a 200 then names new bytes.
        expect(again.status).toBe(200);
        expect(again.etag).not.toBe(first.etag);
        return false;
      },
      20_000,
      0,
    );
    expect(seen.at(-1)).toEqual({ status: 304, sameTag: true });
  });

  it("a weak or listed If-None-Match matches too; another tag does not", async () => {
    await waitFor(
      "both forms answered 304 for one snapshot",
      async () => {
        const first = await get("/api/fleet");
        const weak = await get("/api/fleet", { "if-none-match": `"other", W/${first.etag}` });
        const other = await get("/api/fleet", { "if-none-match": `"other"` });
        expect(other.status).toBe(200);
        return weak.status === 304 && weak.etag === first.etag;
      },
      20_000,
      0,
    );
  });

  it("gzip (next start's) for a client that accepts it: the same JSON, smaller, with the same ETag as the plain bytes", async () => {
    await waitFor(
      "a plain and a gzip answer of one snapshot",
      async () => {
        const plain = await get("/api/fleet");
        const gz = await get("/api/fleet", { "accept-encoding": "gzip" });
        expect(plain.encoding).toBeNull();
        expect(gz.encoding).toBe("gzip");
        if (gz.etag !== plain.etag) return false;
        expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
        expect(gz.body.length).toBeLessThan(plain.body.length);
        return true;
      },
      20_000,
      0,
    );
  });

  it("the list has no sparkline points; /api/fleet/recent has each backend's, oldest first, with its own ETag", async () => {
    const f = JSON.parse((await get("/api/fleet")).body.toString("utf8")) as FleetResponse;
    expect(f.backends.map((b) => b.id)).toEqual(["s0", "s1", "s2"]);
    for (const b of f.backends) expect(b).not.toHaveProperty("recent");
    const r = await get("/api/fleet/recent");
    expect(r.status).toBe(200);
    expect(r.etag).toMatch(/^"/);
    const recent = JSON.parse(r.body.toString("utf8")) as FleetRecentResponse;
    expect(Object.keys(recent.backends).sort()).toEqual(["s0", "s1", "s2"]);
    for (const points of Object.values(recent.backends)) {
      expect(points.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < points.length; i++) expect(points[i][0]).toBeGreaterThan(points[i - 1][0]);
      for (const [, running] of points) expect(running === null || running === 0).toBe(true); // idle simulators
    }
    const again = await get("/api/fleet/recent", { "if-none-match": r.etag! });
    expect([200, 304]).toContain(again.status);
    if (again.status === 304) expect(again.body.length).toBe(0);
  });
});
