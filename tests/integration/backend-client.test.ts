/**
 * backendClient (lib/net/http.ts), each watcher monitor's connection: one undici Client that keeps
 * itself when the server closes its connection and opens a new socket for the next request. Real
 * servers on 127.0.0.1 that close every connection after one answer.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { backendClient, httpRequest } from "@/lib/net/http";
import type { Client } from "undici";

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A server that answers its port and closes the connection after each answer; counts connections. */
async function closingServer(): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const server = http.createServer((_req, res) => {
    res.setHeader("connection", "close");
    res.end(String((server.address() as AddressInfo).port));
  });
  server.on("connection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections };
}

const get = (url: string, dispatcher: Client) => httpRequest(url, { timeoutMs: 5000, maxBytes: 1024, dispatcher });

describe("backendClient", () => {
  it("answers every read after the server closed the connection before, each backend from its own Client", async () => {
    const a = await closingServer();
    const b = await closingServer();
    const ca = backendClient(`${a.url}/v1`)!;
    const cb = backendClient(b.url)!;
    for (let i = 0; i < 3; i++) {
      const ra = await get(`${a.url}/metrics`, ca);
      const rb = await get(`${b.url}/metrics`, cb);
      expect(ra.outcome).toBe("ok");
      expect(ra.body).toBe(new URL(a.url).port);
      expect(rb.body).toBe(new URL(b.url).port);
    }
    // A new connection for every request (the servers close them), through the same Client.
    expect(a.connections()).toBe(3);
    expect(b.connections()).toBe(3);
    expect(ca.closed || ca.destroyed).toBe(false);
    await Promise.all([ca.close(), cb.close()]);
  });

  it("is null for a URL that is no URL; after destroy() a read is a failed read (never a throw)", async () => {
    expect(backendClient("not a url")).toBeNull();
    const s = await closingServer();
    const c = backendClient(s.url)!;
    expect((await get(s.url, c)).outcome).toBe("ok");
    await c.destroy();
    const r = await get(s.url, c);
    expect(r.outcome).not.toBe("ok");
    expect(r.error).toBeTruthy();
  });
});
