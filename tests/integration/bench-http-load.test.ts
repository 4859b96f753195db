/**
 * The dashboard bench's load generator (bench/http-load.ts), run as the bench runs it: in a process
 * of its own, against a real HTTP server on 127.0.0.1. It counts what it was answered (200s, 304s
 * as a browser, errors) and reports its own GC beside the latencies.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runHttpLoad } from "@/bench/http-load";

let server: http.Server;
let base = "";
let served = 0;
const BODY = Buffer.alloc(4096, "x");

beforeAll(async () => {
  server = http.createServer((req, res) => {
    served++;
    if (req.url === "/broken") {
      res.writeHead(500).end();
      return;
    }
    if (req.headers["if-none-match"] === '"v1"') {
      res.writeHead(304, { etag: '"v1"' }).end();
      return;
    }
    res.writeHead(200, { etag: '"v1"', "content-type": "application/json", "content-length": BODY.length }).end(BODY);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

describe("the bench's load generator, in its own process", () => {
  it("sends back to back from each client up to the request cap, and measures every answer", async () => {
    const before = served;
    const s = await runHttpLoad({ base, path: "/fleet", clients: 4, seconds: 20, maxRequests: 400 });
    expect(s.errors).toBe(0);
    expect(s.requests).toBeGreaterThanOrEqual(400);
    expect(s.requests).toBeLessThan(400 + 4); // each client checks the cap before its next request
    expect(served - before).toBe(s.requests);
    expect(s.responseBytes).toBe(BODY.length);
    expect(s.p99Ms).toBeGreaterThanOrEqual(s.p50Ms);
    expect(s.maxMs).toBeGreaterThanOrEqual(s.p99Ms);
    expect(s.generator!.gcMaxMs).toBeGreaterThanOrEqual(0);
    expect(s.generator!.cpuCores).toBeGreaterThan(0);
    expect(s.notModified).toBeUndefined();
  }, 60_000);

  it("as a browser, sends the ETag it got and counts the 304s it is answered", async () => {
    const s = await runHttpLoad({ base, path: "/fleet", clients: 2, seconds: 20, maxRequests: 100, asBrowser: true });
    expect(s.errors).toBe(0);
    // Each client's first answer is a 200 (it has no ETag yet), every later one a 304.
    expect(s.notModified).toBe(s.requests - 2);
  }, 60_000);

  it("an answer that is neither 200 nor an expected 304 is an error, not a latency", async () => {
    const s = await runHttpLoad({ base, path: "/broken", clients: 2, seconds: 20, maxRequests: 50 });
    expect(s.requests).toBe(0);
    expect(s.errors).toBeGreaterThanOrEqual(50);
  }, 60_000);
});
