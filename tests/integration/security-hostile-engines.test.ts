/**
 * The caps on what a backend sends hold for EVERY engine's read path, not only vLLM's: each hostile
 * backend (sim/hostile.ts, real HTTP on 127.0.0.1) has 30,000 model names in the place its
 * engine names models, and the reading stepwatch keeps (what is stored in SQLite and shown by the
 * API) stays a few KB, its list ends with "… and N more" and still counts them all. Assertions are
 * on sizes and contents, never on timings. The whole app with a hostile vLLM backend is
 * security-hostile.test.ts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { countOf, MAX_ENGINE_SLICES, MAX_LIST_ITEMS } from "@/lib/core/caps";
import { classify } from "@/lib/check/classify";
import { observe } from "@/lib/check/observe";
import { readBackend, readProxy } from "@/lib/check/read";
import { DEFAULT_THRESHOLDS } from "@/lib/core/types";
import { startHostileBackend, type HostileBackend, type HostileShape } from "@/sim/hostile";

const started: HostileBackend[] = [];
const start = async (...a: Parameters<typeof startHostileBackend>) => {
  const b = await startHostileBackend(...a);
  started.push(b);
  return b;
};
afterAll(async () => {
  await Promise.allSettled(started.map((b) => b.close()));
});

const N = 30_000;
/** As many as fit in the 1 MB cap on a JSON answer (/v1/models, /api/ps); past it the answer is not read at all. */
const LISTED = 15_000;
/** What a stored reading weighs (the sample's reading JSON; the in-memory latency is not stored). */
const size = (r: object) => JSON.stringify({ ...r, latency: undefined }).length;

describe("a hostile backend of every engine: what is kept is bounded", () => {
  const cases: Array<{ shape: HostileShape; engine: string; list: "metrics" | "models"; n: number }> = [
    { shape: "vllm", engine: "vllm", list: "metrics", n: N },
    { shape: "sglang", engine: "sglang", list: "metrics", n: N },
    { shape: "ollama", engine: "ollama", list: "models", n: LISTED },
    { shape: "none", engine: "(none)", list: "models", n: LISTED },
  ];
  for (const c of cases) {
    const N = c.n;
    it(`${c.shape}: ${N} model names become ${MAX_LIST_ITEMS} and "… and N more"`, async () => {
      const b = await start({ shape: c.shape, models: N });
      const reading = await readBackend({ url: b.url }); // engine "auto": detected, as configured by default
      expect(reading.engine ?? "(none)").toBe(c.engine);
      const ids = c.list === "metrics" ? reading.metrics!.models : reading.models!.ids;
      expect(ids).toHaveLength(MAX_LIST_ITEMS + 1);
      expect(ids.at(-1)).toBe(`… and ${N - MAX_LIST_ITEMS} more`);
      expect(countOf(ids)).toBe(N);
      expect(size(reading)).toBeLessThan(8 * 1024);
      // Judged as usual (the reasons count every model), never stuck from the caps.
      const v = classify({ history: [], reading, thresholds: DEFAULT_THRESHOLDS, now: reading.at });
      expect(v.state).not.toBe("stuck");
      expect(JSON.stringify(v.reasons).length).toBeLessThan(4 * 1024);
      if (c.list === "models") expect(v.reasons.map((r) => r.text).join(" ")).toContain(`${N} models`);
    }, 60_000);
  }

  for (const shape of ["llamacpp", "tgi"] as const) {
    it(`${shape}: a model name of 100,000 characters is cut to a few hundred`, async () => {
      const b = await start({ shape, models: 1, nameLength: 100_000 });
      const reading = await readBackend({ url: b.url });
      expect(reading.engine).toBe(shape);
      expect(reading.metrics).not.toBeNull();
      expect(reading.metrics!.models).toHaveLength(1);
      expect(reading.metrics!.models[0]).toMatch(/^hostile-0x+… \(\d+ more characters\)$/);
      expect(size(reading)).toBeLessThan(4 * 1024);
    }, 60_000);
  }

  it("vllm: 10,000 made-up data-parallel engine labels are not judged one by one", async () => {
    // 10,000 (a 1 MB body, under the 2 MB cap): each engine judged on its own is a pass over the body.
    const b = await start({ shape: "vllm", models: 1, dpEngines: 10_000 });
    const reading = await readBackend({ url: b.url });
    expect(reading.engine).toBe("vllm");
    expect(reading.metrics).not.toBeNull();
    expect(reading.metrics!.engines).toBeUndefined(); // judged on the sums
    expect(size(reading)).toBeLessThan(4 * 1024);
    // A real data-parallel server (up to the cap) keeps its per-engine figures.
    const dp = await start({ shape: "vllm", models: 1, dpEngines: MAX_ENGINE_SLICES });
    const ok = await readBackend({ url: dp.url });
    expect(Object.keys(ok.metrics!.engines ?? {})).toHaveLength(MAX_ENGINE_SLICES);
  }, 60_000);

  it("a proxy listing 15,000 models keeps 16 and counts the rest", async () => {
    const b = await start({ shape: "none", models: LISTED });
    const r = await readProxy({ url: b.url });
    expect(r.outcome).toBe("ok");
    expect(r.models).toHaveLength(MAX_LIST_ITEMS + 1);
    expect(countOf(r.models)).toBe(LISTED);
  }, 60_000);

  it("the probe never asks for a model name the caps cut: it asks for the whole name", async () => {
    const b = await start({ shape: "vllm", models: 3, nameLength: 1000 });
    const { reading } = await observe({ url: b.url }, [], { thresholds: DEFAULT_THRESHOLDS });
    expect(reading.metrics!.models[0]).toMatch(/more characters\)$/); // what is kept is cut
    expect(reading.probe?.ok).toBe(true);
    const asked = b.probedModels();
    expect(asked).toHaveLength(1);
    expect(asked[0]).toHaveLength(1000); // the probe listed /v1/models and used the real name
    expect(asked[0].startsWith("hostile-0")).toBe(true);
  }, 60_000);
});
