import { afterEach, describe, expect, it } from "vitest";
import { parseVllmMetrics } from "@/lib/engines/vllm";
import { startLeastConnProxy, type LeastConnProxy } from "@/sim/proxy";
import { startSimulator, type Simulator } from "@/sim/server";
import { call, waitFor } from "./sim-support";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function fleet(n = 2): Promise<{ sims: Simulator[]; proxy: LeastConnProxy }> {
  const sims: Simulator[] = [];
  for (let i = 0; i < n; i++) {
    const s = await startSimulator({ modelName: `backend-${i}`, weightsLoadSeconds: 0.2 });
    closers.push(() => s.close());
    sims.push(s);
  }
  const proxy = await startLeastConnProxy({ backends: sims.map((s) => s.url) });
  closers.push(() => proxy.close());
  return { sims, proxy };
}

describe("least-connection proxy", () => {
  it("sends consecutive /metrics reads to different backends (why stepwatch never reads through it)", async () => {
    const { sims, proxy } = await fleet(2);
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      const a = await call(`${proxy.url}/metrics`);
      expect(a.status).toBe(200);
      seen.push(parseVllmMetrics(a.body).metrics!.models[0]);
    }
    expect(seen).toEqual(["backend-0", "backend-1", "backend-0", "backend-1"]);
    expect(proxy.received().map((r) => [r.path, r.backend])).toEqual([
      ["/metrics", sims[0].url],
      ["/metrics", sims[1].url],
      ["/metrics", sims[0].url],
      ["/metrics", sims[1].url],
    ]);
  });

  it("prefers the backend with fewer open requests", async () => {
    const { sims, proxy } = await fleet(2);
    const abort = new AbortController();
    const long = call(`${proxy.url}/v1/completions`, { body: { prompt: "x", max_tokens: 10_000 }, signal: abort.signal });
    await waitFor("the long request to be open", () => Object.values(proxy.active()).some((n) => n === 1));
    const busy = sims.find((s) => proxy.active()[s.url] === 1)!;
    for (let i = 0; i < 3; i++) expect((await call(`${proxy.url}/v1/completions`, { body: { prompt: "x", max_tokens: 1 } })).status).toBe(200);
    const quick = proxy.received().filter((r) => r.path === "/v1/completions").slice(1);
    expect(quick.every((r) => r.backend !== busy.url)).toBe(true);
    abort.abort();
    await long;
    // The proxy cancels the backend request when its client leaves: the slot is freed.
    await waitFor("the backend slot to be freed", () => busy.state().running === 0);
  });

  it("answers /v1/models from a live backend when another is down, and records what it received", async () => {
    const { sims, proxy } = await fleet(2);
    await sims[0].crash();
    for (let i = 0; i < 3; i++) {
      const a = await call(`${proxy.url}/v1/models`);
      expect(a.status).toBe(200);
      expect(JSON.parse(a.body).data[0].id).toBe("backend-1");
    }
    expect(proxy.received().map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual(Array(3).fill("GET /v1/models 200"));
    expect(sims[1].received().map((r) => r.path)).toEqual(["/v1/models", "/v1/models", "/v1/models"]);
  });

  it("answers 502 when no backend is reachable", async () => {
    const { sims, proxy } = await fleet(2);
    await Promise.all(sims.map((s) => s.crash()));
    const a = await call(`${proxy.url}/v1/models`);
    expect(a.status).toBe(502);
    expect(proxy.received()[0]).toMatchObject({ path: "/v1/models", backend: null, status: 502 });
  });
});
