/**
 * The read path parses only the engine's families (its adapter's `families`) once the engine is
 * known, configured or seen last, and the Reading is the same as the full parse's. Real fixtures
 * served over HTTP on 127.0.0.1; parsePrometheus is wrapped only to record the options it was given.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it, vi } from "vitest";
import * as prom from "@/lib/metrics/prometheus";
import { readBackend } from "@/lib/check/read";
import { ADAPTERS } from "@/lib/engines/registry";
import type { EngineKind } from "@/lib/core/engine";
import type { Reading } from "@/lib/core/types";

vi.mock("@/lib/metrics/prometheus", async (importOriginal) => {
  const real = await importOriginal<typeof prom>();
  return { ...real, parsePrometheus: vi.fn(real.parsePrometheus) };
});

const fixture = (p: string) => readFileSync(new URL(`../fixtures/${p}`, import.meta.url), "utf8");
const CASES: Array<[string, EngineKind]> = [
  ["real-metrics/vllm-0.29.0-inferstack.prom", "vllm"],
  ["real-metrics/vllm-unstated-lmswitch.prom", "vllm"],
  ["real-metrics/sglang-0.5.10-datadog.prom", "sglang"],
  ["real-metrics/tgi-datadog-truncated.prom", "tgi"],
];
const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

async function serve(body: string): Promise<string> {
  const server = createServer((req, res) => {
    if (req.url === "/metrics") res.writeHead(200, { "content-type": "text/plain" }).end(body);
    else res.writeHead(404).end("not found");
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const figures = (r: Reading) => ({ engine: r.engine, outcome: r.outcome, metrics: r.metrics, latency: r.latency, error: r.error, asleep: r.asleep });
const parse = vi.mocked(prom.parsePrometheus);

describe("readBackend parses only the engine's families", () => {
  it.each(CASES)("%s", async (file, kind) => {
    const url = await serve(fixture(file));
    parse.mockClear();
    const first = await readBackend({ url }, { timeoutMs: 5000 }); // auto, nothing seen yet: full parse
    expect(first.engine).toBe(kind);
    expect(first.metrics).not.toBeNull();
    expect(parse.mock.calls.every((c) => c[1]?.families === undefined)).toBe(true);

    for (const read of [() => readBackend({ url }, { timeoutMs: 5000, engineHint: kind }), () => readBackend({ url, engine: kind }, { timeoutMs: 5000 })]) {
      parse.mockClear();
      const r = await read();
      expect(parse).toHaveBeenCalledTimes(1);
      expect(parse.mock.calls[0][1]?.families).toBe(ADAPTERS[kind].families);
      expect(figures(r)).toEqual(figures(first));
    }
  });

  it("a backend that now answers as another engine is detected from the full parse", async () => {
    const url = await serve(fixture("real-metrics/sglang-0.5.10-datadog.prom"));
    parse.mockClear();
    const r = await readBackend({ url }, { timeoutMs: 5000, engineHint: "vllm" });
    expect(r.engine).toBe("sglang");
    expect(r.metrics).not.toBeNull();
    expect(parse.mock.calls.map((c) => c[1]?.families === undefined)).toEqual([false, true]);
  });
});
