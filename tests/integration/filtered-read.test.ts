/**
 * The filtered exposition (`/metrics/?name[]=…`, lib/engines/vllm.ts `reads.filtered`) against the
 * real prometheus_client (Debian's python3-prometheus-client) serving a registry rebuilt from a real
 * vLLM 0.29 scrape, mounted as vLLM mounts it: single-process (the filter works), multiprocess (a
 * filtered answer is an empty 200), and a server that ignores the query. The server counts what it
 * sent, so the path taken is asserted on its side.
 */
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { FILTER_RETRY_MS, FilterMemory, readBackend } from "@/lib/check/read";
import { startPromVllm, VLLM_FIXTURE, type PromVllm } from "../support/prom-vllm";

const servers: PromVllm[] = [];
const plain: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(plain.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function prom(mode: "single" | "multi"): Promise<PromVllm> {
  const s = await startPromVllm(mode);
  servers.push(s);
  return s;
}

const opts = { timeoutMs: 5000 };

describe("filtered /metrics/ against the real prometheus_client", () => {
  it("single process: the filtered path is read, a third of the bytes or less, the same figures as a full read", async () => {
    const s = await prom("single");
    const memory = new FilterMemory();
    const a = await readBackend({ url: s.url, engine: "vllm" }, { ...opts, filterMemory: memory });
    const b = await readBackend({ url: s.url, engine: "vllm" }, { ...opts, filterMemory: memory });
    const filtered = await s.stats();
    expect(filtered.paths["/metrics/"]).toMatchObject({ requests: 2 });
    expect(filtered.paths["/metrics"]).toBeUndefined();
    expect(memory.mode).toBe("filtered");

    // The full read: an `auto` backend not known yet is asked the plain /metrics.
    const full = await readBackend({ url: s.url }, opts);
    expect((await s.stats()).paths["/metrics"]).toMatchObject({ requests: 1 });
    expect(full.engine).toBe("vllm");
    expect(a.metrics).not.toBeNull();
    expect(b.metrics).toEqual(full.metrics);
    expect(b.latency).toEqual(full.latency);
    expect(b.latency?.ttft).not.toBeNull();
    expect(b.bytes! * 3).toBeLessThan(full.bytes!);
  });

  it("multiprocess: the empty filtered answer falls back to the full read, remembered for the next read", async () => {
    const s = await prom("multi");
    const memory = new FilterMemory();
    const first = await readBackend({ url: s.url, engine: "vllm" }, { ...opts, filterMemory: memory });
    expect(first.metrics).toMatchObject({ running: 0, waiting: 0 });
    expect((await s.stats()).paths).toMatchObject({ "/metrics/": { requests: 1, bytes: 0 }, "/metrics": { requests: 1 } });
    expect(memory.mode).toBe("full");
    const second = await readBackend({ url: s.url, engine: "vllm" }, { ...opts, filterMemory: memory });
    expect(second.metrics).toEqual(first.metrics);
    expect((await s.stats()).paths).toMatchObject({ "/metrics/": { requests: 1 }, "/metrics": { requests: 2 } });
    // After a while the filter is asked again (an upgrade may have made it work).
    const later = await readBackend({ url: s.url, engine: "vllm" }, { ...opts, filterMemory: memory, now: () => Date.now() + FILTER_RETRY_MS });
    expect(later.metrics).not.toBeNull();
    expect((await s.stats()).paths).toMatchObject({ "/metrics/": { requests: 2 }, "/metrics": { requests: 3 } });
  });

  it("a server that ignores the query: its answer is used as the full read, and the plain path is asked next", async () => {
    const body = readFileSync(VLLM_FIXTURE);
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(req.url!.split("?")[0]);
      res.writeHead(200, { "content-type": "text/plain", "content-length": body.length }).end(body);
    });
    plain.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const memory = new FilterMemory();
    const first = await readBackend({ url, engine: "vllm" }, { ...opts, filterMemory: memory });
    expect(first.metrics).not.toBeNull();
    expect(memory.mode).toBe("unfiltered");
    const second = await readBackend({ url, engine: "vllm" }, { ...opts, filterMemory: memory });
    expect(second.metrics).toEqual(first.metrics);
    expect(seen).toEqual(["/metrics/", "/metrics"]);
  });

  it("a new process start time asks the filter again", () => {
    const memory = new FilterMemory();
    memory.set("full", 1000);
    memory.noteStart(100, 1000);
    expect(memory.shouldTry(2000)).toBe(false);
    memory.noteStart(100, 2000);
    expect(memory.shouldTry(3000)).toBe(false);
    memory.noteStart(200, 3000);
    expect(memory.shouldTry(3000)).toBe(true);
  });
});
