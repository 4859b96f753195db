/**
 * OriginPools (lib/net/http.ts), the watcher's dispatcher: one undici Pool per origin, kept when
 * its connections close (undici's Agent drops it and builds another), bounded in number. Real
 * servers on 127.0.0.1 that close every connection after one answer.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpRequest, OriginPools } from "@/lib/net/http";

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

const get = (url: string, dispatcher: OriginPools) => httpRequest(url, { timeoutMs: 5000, maxBytes: 1024, dispatcher });

describe("OriginPools", () => {
  it("keeps an origin's Pool when its connection closes, and answers each origin from its own", async () => {
    const a = await closingServer();
    const b = await closingServer();
    const pools = new OriginPools({ keepAliveTimeout: 10_000, connections: 2 });
    for (let i = 0; i < 3; i++) {
      const ra = await get(`${a.url}/metrics`, pools);
      const rb = await get(`${b.url}/metrics`, pools);
      expect(ra.outcome).toBe("ok");
      expect(ra.body).toBe(new URL(a.url).port);
      expect(rb.body).toBe(new URL(b.url).port);
    }
    // A new connection for every request (the servers close them), but one Pool per origin throughout.
    expect(a.connections()).toBe(3);
    expect(b.connections()).toBe(3);
    expect(pools.origins).toBe(2);
    await pools.close();
  });

  it("closes the least recently used origin's Pool past maxOrigins, and still answers it later", async () => {
    const s = await Promise.all([closingServer(), closingServer(), closingServer()]);
    const pools = new OriginPools({ connections: 1 }, 2);
    expect((await get(s[0].url, pools)).outcome).toBe("ok");
    expect((await get(s[1].url, pools)).outcome).toBe("ok");
    expect((await get(s[0].url, pools)).outcome).toBe("ok"); // s[1] is now the least recently used
    expect((await get(s[2].url, pools)).outcome).toBe("ok");
    expect(pools.origins).toBe(2);
    const again = await get(s[1].url, pools);
    expect(again.outcome).toBe("ok");
    expect(again.body).toBe(new URL(s[1].url).port);
    expect(pools.origins).toBe(2);
    await pools.close();
  });

  it("after close(), a request is a failed read (never a throw)", async () => {
    const s = await closingServer();
    const pools = new OriginPools({});
    expect((await get(s.url, pools)).outcome).toBe("ok");
    await pools.close();
    const r = await get(s.url, pools);
    expect(r.outcome).not.toBe("ok");
    expect(r.error).toBeTruthy();
  });
});
