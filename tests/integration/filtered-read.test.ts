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
import { VLLM_LEAN_SAMPLES, VLLM_SAMPLES } from "@/lib/engines/vllm";
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
    // The first read asks the whole filter (the latency histograms too), the next one its lean part.
    const a = await readBackend({ url: s.url, engine: "vllm" }, { ...opts, filterMemory: memory });
    const b = await readBackend({ url: s.url, engine: "vllm" }, { ...opts, filterMemory: memory });
    const filtered = await s.stats();
    expect(filtered.paths["/metrics/"]).toMatchObject({ requests: 2, withBuckets: 1, names: VLLM_SAMPLES.size });
    expect(filtered.paths["/metrics"]).toBeUndefined();
    expect(memory.mode).toBe("filtered");

    // The full read: an `auto` backend not known yet is asked the plain /metrics.
    const full = await readBackend({ url: s.url }, opts);
    expect((await s.stats()).paths["/metrics"]).toMatchObject({ requests: 1 });
    expect(full.engine).toBe("vllm");
    expect(a.metrics).toEqual(full.metrics);
    expect(a.latency).toEqual(full.latency);
    expect(a.latency?.ttft).not.toBeNull();
    expect(a.bytes! * 3).toBeLessThan(full.bytes!);
    // Every figure a state is judged by is in the lean read; only the histograms are not.
    expect(b.metrics).toEqual(full.metrics);
    expect(b.latency).toEqual({ ...full.latency, ttft: null, itl: null, e2e: null, queue: null, histogramsAsked: false });
    expect(b.bytes! * 10).toBeLessThan(full.bytes!);
  });

  it("single process: the latency histograms are asked once per histogramsEveryMs, the other samples on every read", async () => {
    const s = await prom("single");
    const memory = new FilterMemory();
    const t0 = Date.now();
    const asked: boolean[] = [];
    // 13 reads 5 s apart (a clock of their own): the histograms at 0, 30 and 60 s.
    for (let i = 0; i <= 12; i++) {
      const r = await readBackend({ url: s.url, engine: "vllm" }, { ...opts, filterMemory: memory, histogramsEveryMs: 30_000, now: () => t0 + i * 5000 });
      expect(r.metrics).toMatchObject({ running: expect.any(Number), waiting: expect.any(Number), steps: expect.any(Number), processStartTime: expect.any(Number) });
      expect(r.latency?.successByReason).not.toBeNull();
      asked.push(r.latency?.histogramsAsked !== false && r.latency?.ttft !== null);
    }
    expect(asked.map((a, i) => (a ? i : -1)).filter((i) => i >= 0)).toEqual([0, 6, 12]);
    // Counted on the server's side: 13 filtered requests, 3 of them asked for a _bucket.
    expect((await s.stats()).paths["/metrics/"]).toMatchObject({ requests: 13, withBuckets: 3 });
  });

  it("a new process (another start time) makes the next read ask the histograms", async () => {
    const first = await prom("single");
    const memory = new FilterMemory();
    const t0 = Date.now();
    const at = (ms: number) => ({ ...opts, filterMemory: memory, histogramsEveryMs: 30_000, now: () => t0 + ms });
    const r0 = await readBackend({ url: first.url, engine: "vllm" }, at(0));
    await readBackend({ url: first.url, engine: "vllm" }, at(5000));
    // The backend restarted: another Python process (its own process_start_time_seconds) answers.
    const second = await prom("single");
    const seen = await readBackend({ url: second.url, engine: "vllm" }, at(10_000));
    expect(seen.metrics!.processStartTime).not.toBe(r0.metrics!.processStartTime);
    expect(seen.latency?.histogramsAsked).toBe(false); // the read that sees the new start was lean
    const next = await readBackend({ url: second.url, engine: "vllm" }, at(15_000));
    expect(next.latency?.histogramsAsked).toBeUndefined();
    expect(next.latency?.ttft).not.toBeNull();
    expect((await second.stats()).paths["/metrics/"]).toMatchObject({ requests: 2, withBuckets: 1 });
    // And the cadence goes on from there: 30 s later, not before.
    expect((await readBackend({ url: second.url, engine: "vllm" }, at(40_000))).latency?.histogramsAsked).toBe(false);
    expect((await readBackend({ url: second.url, engine: "vllm" }, at(45_000))).latency?.histogramsAsked).toBeUndefined();
  });

  it("without a FilterMemory (the CLI's one-shot read) only the lean filter is asked", async () => {
    const s = await prom("single");
    const r = await readBackend({ url: s.url, engine: "vllm" }, opts);
    expect(r.metrics).not.toBeNull();
    expect((await s.stats()).paths["/metrics/"]).toMatchObject({ requests: 1, withBuckets: 0, names: VLLM_LEAN_SAMPLES.size });
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

  it("a new process start time asks the filter again, and the histograms", () => {
    const memory = new FilterMemory();
    memory.set("full", 1000);
    memory.noteStart(100, 1000);
    expect(memory.shouldTry(2000)).toBe(false);
    memory.noteStart(100, 2000);
    expect(memory.shouldTry(3000)).toBe(false);
    memory.noteStart(200, 3000);
    expect(memory.shouldTry(3000)).toBe(true);

    const f = new FilterMemory();
    f.noteStart(100, 0);
    expect(f.wantsHistograms(0, 30_000)).toBe(true);
    f.histogramsAt = 0;
    expect(f.wantsHistograms(29_999, 30_000)).toBe(false);
    f.noteStart(100, 5000);
    expect(f.wantsHistograms(5000, 30_000)).toBe(false);
    f.noteStart(200, 10_000);
    expect(f.wantsHistograms(10_000, 30_000)).toBe(true);
    expect(f.mode).toBe("try"); // unchanged for a filter that works: only the histograms are asked again
  });
});
