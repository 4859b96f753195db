/**
 * The fast lane's own decisions (lib/api/fast-lane.ts): the encoding it sends is the one next
 * start's compression chooses (asked here of Next's own compiled `compression` on a real HTTP
 * server on 127.0.0.1), STEPWATCH_FLEET_FAST_LANE's values, and that any failure of the lane hands
 * the request to the server's own listener (standing in for Next) instead of losing it. Its answers against Next's are in
 * tests/integration/fleet-fast-lane.test.ts.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import { anyLane, encodingFor, fastLaneEnabled, fleetLane, historyAsked, historyLane, type LaneSources } from "@/lib/api/fast-lane";
import type { HistoryResponse } from "@/lib/api/types";
import { encodeJson } from "@/lib/api/fleet";
import { installPeerHeader, setRequestLane } from "@/lib/net/net-policy";

// What router-server.js runs on every answer of `next start` (config.compress defaults to true).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const compression = require("next/dist/compiled/compression") as () => (req: http.IncomingMessage, res: http.ServerResponse, next: () => void) => void;

let server: http.Server;
let url: string;

beforeAll(async () => {
  const compress = compression();
  server = http.createServer((req, res) => {
    compress(req, res, () => {});
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ fleet: "x".repeat(4000) }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

const HEADERS: Array<string | undefined> = [
  undefined,
  "",
  "gzip",
  "gzip, deflate, br",
  "br",
  "deflate",
  "deflate, gzip",
  "deflate;q=1, gzip;q=0.5",
  "gzip;q=0",
  "gzip;q=0, deflate",
  "identity",
  "identity, gzip",
  "identity;q=1, gzip;q=0.5",
  "*",
  "*;q=0",
  "*, gzip;q=0",
  "GZIP",
  "x-gzip",
  "gzip;q=0.001, identity;q=0",
  "br;q=1, gzip;q=0.8, *;q=0.1",
];

describe("encodingFor", () => {
  it.each(HEADERS.map((h) => [h === undefined ? "(no header)" : JSON.stringify(h), h]))("%s: what Next's compression chooses", async (_name, h) => {
    const res = await request(url, { headers: h === undefined ? {} : { "accept-encoding": h }, headersTimeout: 5000, bodyTimeout: 5000 });
    await res.body.arrayBuffer();
    const chosen = (res.headers["content-encoding"] as string | undefined) ?? "identity";
    expect(encodingFor(h)).toBe(chosen);
  });
});

describe("STEPWATCH_FLEET_FAST_LANE", () => {
  it("is on unless it says off; another value is an error naming the variable", () => {
    for (const v of [undefined, "", "on", "1", "true", " ON "]) expect(fastLaneEnabled(v)).toBe(true);
    for (const v of ["off", "0", "false", "Off"]) expect(fastLaneEnabled(v)).toBe(false);
    expect(() => fastLaneEnabled("fast")).toThrow(/STEPWATCH_FLEET_FAST_LANE: "fast" is not "on" or "off"/);
  });
});

describe("a failing lane hands the request over", () => {
  const ADMITTED = { ok: true as const, nonce: "n", csp: "default-src 'self'", https: false, principal: null };
  const fleet = encodeJson({ fleet: "from the lane" });
  let next: http.Server;
  let other: http.Server;
  let nextUrl: string;
  let otherUrl: string;
  let savedPort: string | undefined;

  beforeAll(async () => {
    await installPeerHeader();
    const listen = async (s: http.Server) => {
      await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
      return (s.address() as AddressInfo).port;
    };
    next = http.createServer((_req, res) => res.end("next"));
    other = http.createServer((_req, res) => res.end("other"));
    const port = await listen(next);
    nextUrl = `http://127.0.0.1:${port}/api/fleet`;
    otherUrl = `http://127.0.0.1:${await listen(other)}/api/fleet`;
    savedPort = process.env.PORT;
    process.env.PORT = String(port); // what next start sets: the lane answers on this server only
  });

  afterAll(async () => {
    setRequestLane(null);
    if (savedPort === undefined) delete process.env.PORT;
    else process.env.PORT = savedPort;
    await Promise.all([next, other].map((s) => new Promise<void>((r) => s.close(() => r()))));
  });

  const ask = async (url: string) => {
    const res = await request(url, { headersTimeout: 5000, bodyTimeout: 5000 });
    return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()).toString("utf8"), etag: res.headers.etag };
  };
  const history = { backendId: "a", from: 1, to: 2, resolution: "raw", bucketSeconds: null, count: 0, columns: { at: [], state: [] }, transitions: [], restarts: [] } as unknown as HistoryResponse;
  const sources = (src: Partial<LaneSources>): LaneSources => ({ admit: async () => ADMITTED, fleetJson: async () => fleet, history: async () => history, ...src });
  const lane = (src: Partial<LaneSources>) => setRequestLane(anyLane(fleetLane(sources(src)), historyLane(sources(src))));
  const historyUrl = () => nextUrl.replace("/api/fleet", "/api/backends/a/history?from=1&to=2");

  it("answers when admitted and the bytes are there, on Next's server only", async () => {
    lane({});
    expect(await ask(nextUrl)).toEqual({ status: 200, body: '{"fleet":"from the lane"}', etag: fleet.etag });
    expect((await ask(otherUrl)).body).toBe("other");
  });

  it("a refusal, a failing admission, a failing fleet or a lane that throws: the listener answers", async () => {
    const cases: Array<[string, () => void]> = [
      ["refused", () => lane({ admit: async () => ({ ...ADMITTED, ok: false as const, refusal: { kind: "unauthenticated" as const } }) })],
      ["admission throws", () => lane({ admit: async () => Promise.reject(new Error("admission broke")) })],
      ["fleet throws", () => lane({ fleetJson: async () => Promise.reject(new Error("no fleet")) })],
      ["lane throws", () => setRequestLane(() => {
        throw new Error("lane broke");
      })],
    ];
    for (const [name, install] of cases) {
      install();
      expect([name, (await ask(nextUrl)).body]).toEqual([name, "next"]);
    }
  });

  it("the history: answered when admitted, on Next's server only; a refusal or a failing verb is the listener's", async () => {
    lane({});
    expect(await ask(historyUrl())).toMatchObject({ status: 200, body: JSON.stringify(history) });
    expect((await ask(historyUrl().replace(nextUrl.split("/api")[0], otherUrl.split("/api")[0]))).body).toBe("other");
    const cases: Array<[string, Partial<LaneSources>]> = [
      ["refused", { admit: async () => ({ ...ADMITTED, ok: false as const, refusal: { kind: "unauthenticated" as const } }) }],
      ["admission throws", { admit: async () => Promise.reject(new Error("admission broke")) }],
      ["unknown backend", { history: async () => Promise.reject(new Error("not found")) }],
    ];
    for (const [name, src] of cases) {
      lane(src);
      expect([name, (await ask(historyUrl())).body]).toEqual([name, "next"]);
    }
  });
});

describe("historyAsked: the history requests the lane may answer", () => {
  const now = 10_000_000;
  it("the JSON of a valid range, the last hour by default", () => {
    expect(historyAsked("/api/backends/gb10-a/history?from=5&to=9", now)).toEqual({ id: "gb10-a", search: "?from=5&to=9", from: 5, to: 9 });
    expect(historyAsked("/api/backends/b_1/history", now)).toEqual({ id: "b_1", search: "", from: now - 3600_000, to: now });
    expect(historyAsked("/api/backends/b/history?format=json&to=7200000", now)).toMatchObject({ from: 3600_000, to: 7200_000 });
  });

  it("anything else is Next's: the CSV, another key, a key twice, a bad range, an id that needs decoding, another path", () => {
    for (const url of [
      "/api/backends/b/history?format=csv",
      "/api/backends/b/history?format=xml",
      "/api/backends/b/history?next",
      "/api/backends/b/history?from=1&from=2",
      "/api/backends/b/history?from=9&to=5",
      "/api/backends/b/history?from=-1",
      "/api/backends/b/history?from=abc",
      "/api/backends/b%2Fc/history",
      "/api/backends/-b/history",
      "/api/backends/b/history/",
      "/api/backends/b/history#x",
      "/api/backends/b/restart",
      "/api/backends//history",
    ]) {
      expect([url, historyAsked(url, now)]).toEqual([url, null]);
    }
  });
});
