/**
 * The fast lane's own decisions (lib/api/fast-lane.ts): the encoding it sends is the one next
 * start's compression chooses (asked here of Next's own compiled `compression` on a real HTTP
 * server on 127.0.0.1), and STEPWATCH_FLEET_FAST_LANE's values. Its answers against Next's are in
 * tests/integration/fleet-fast-lane.test.ts.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import { encodingFor, fastLaneEnabled } from "@/lib/api/fast-lane";

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
