/**
 * LineCache (lib/metrics/prometheus.ts): a target's lines of last time, so the next body parses only
 * its values. The claim is that it changes the time a parse takes, never its result: every test here
 * parses the same bodies with and without a cache and compares the whole ParseResult (samples,
 * HELP/TYPE, errors, counts), on the real scrapes and on bodies mutated the ways a server's /metrics
 * changes (values, new series, dropped series, reordered lines, a junk line, a truncated answer).
 */
import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { ADAPTERS } from "@/lib/engines/registry";
import { LineCache, parsePrometheus, type ParseOptions } from "@/lib/metrics/prometheus";
import { renderMetrics } from "@/sim/metrics";
import { VllmSimModel } from "@/sim/model";
import { fixture, SCRAPES } from "./scrapes";

const FILTERS: Array<[string, ReadonlySet<string> | undefined]> = [
  ["no filter", undefined],
  ...Object.entries(ADAPTERS)
    .filter(([, a]) => a.families)
    .map(([k, a]) => [k, a.families] as [string, ReadonlySet<string>]),
];

/** Parses with the cache and checks the result against a parse without one. */
function same(text: string, families: ReadonlySet<string> | undefined, cache: LineCache, label: string): void {
  const opts: ParseOptions = families ? { families } : {};
  const want = parsePrometheus(text, opts);
  const got = parsePrometheus(text, { ...opts, cache });
  expect(got, label).toEqual(want);
}

/** A small seeded PRNG (mulberry32): the same mutations on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The ways a body changes between two reads, and a few ways it breaks. */
const MUTATIONS: Array<(lines: string[], r: () => number) => void> = [
  // a value moves (the common case)
  (l, r) => {
    const i = Math.floor(r() * l.length);
    l[i] = l[i].replace(/ (\S+)$/, (m, v: string) => (v.startsWith("#") || l[i].startsWith("#") ? m : ` ${Number(v) + Math.floor(r() * 5) || 1}`));
  },
  // a new series (a line copied elsewhere, so later lines move down)
  (l, r) => l.splice(Math.floor(r() * l.length), 0, l[Math.floor(r() * l.length)]),
  // a series goes away
  (l, r) => l.splice(Math.floor(r() * l.length), 1),
  // two lines swap
  (l, r) => {
    const i = Math.floor(r() * l.length);
    const j = Math.floor(r() * l.length);
    [l[i], l[j]] = [l[j], l[i]];
  },
  // a label value changes
  (l, r) => {
    const i = Math.floor(r() * l.length);
    l[i] = l[i].replace(/="([^"]*)"/, `="$1x"`);
  },
  // junk in place of a line
  (l, r) => (l[Math.floor(r() * l.length)] = ["<html>", "Service Unavailable", "{}", "x{a=\"b\"}", ""][Math.floor(r() * 5)]),
  // a line cut short (a truncated answer)
  (l, r) => {
    const i = Math.floor(r() * l.length);
    l[i] = l[i].slice(0, Math.floor(r() * l[i].length));
  },
  // text after the value: a timestamp, a stray "}", an invalid token, blanks
  (l, r) => {
    const i = Math.floor(r() * l.length);
    l[i] += [" 1700000000000", " }", " }1", " x", "  ", "\t", " 12 }"][Math.floor(r() * 7)];
  },
  // the value itself breaks
  (l, r) => {
    const i = Math.floor(r() * l.length);
    l[i] = l[i].replace(/ \S+$/, [" NaN", " +Inf", " 1e", " 0x1F", "", " -"][Math.floor(r() * 6)]);
  },
  // a line gets CRLF, leading blanks, or a second HELP/TYPE
  (l, r) => {
    const i = Math.floor(r() * l.length);
    const k = Math.floor(r() * 3);
    if (k === 0) l[i] += "\r";
    else if (k === 1) l[i] = `  ${l[i]}`;
    else l.splice(i, 0, l[i].startsWith("# ") ? l[i].replace(/ \S+$/, " other") : "# HELP vllm:num_requests_running second help");
  },
];

describe("LineCache", () => {
  it.each(SCRAPES)("%s: the same result with a cache, on the first body and the next, for every adapter's filter", (file) => {
    const text = fixture(file);
    for (const [name, families] of FILTERS) {
      const cache = new LineCache();
      same(text, families, cache, `${name}, first`);
      const missed = cache.misses;
      // The next body, values moved: every line that still starts as before is read from its template.
      const next = text.replace(/ (\d+(\.\d+)?)$/gm, (_m, v: string) => ` ${Number(v) + 1}`);
      same(next, families, cache, `${name}, values moved`);
      expect(cache.hits, name).toBeGreaterThan(0);
      expect(cache.misses - missed, name).toBeLessThan(missed / 2);
    }
  });

  it("the simulator's vLLM body: a second read is parsed from templates (hits) and gives the same samples", () => {
    const engine = new VllmSimModel();
    const body = renderMetrics(engine);
    const cache = new LineCache();
    const families = ADAPTERS.vllm.families!;
    same(body, families, cache, "first");
    const lines = body.split("\n").length;
    expect(cache.hits).toBe(0);
    same(body, families, cache, "second");
    // Every line but blank ones (and the trailing empty one) came from a template.
    expect(cache.hits).toBeGreaterThan(lines * 0.9);
  });

  it.each([1, 2, 3, 4, 5, 6])("seed %i: 150 successive mutated bodies parse the same with one cache as without", (seed) => {
    const r = rng(seed);
    const files = [...SCRAPES];
    let lines = fixture(files[seed % files.length]).split("\n");
    const [name, families] = FILTERS[seed % FILTERS.length];
    const cache = new LineCache();
    for (let step = 0; step < 150; step++) {
      const n = 1 + Math.floor(r() * 4);
      for (let k = 0; k < n && lines.length > 0; k++) MUTATIONS[Math.floor(r() * MUTATIONS.length)](lines, r);
      lines = [...lines];
      same(lines.join("\n"), families, cache, `${name}, step ${step}`);
    }
    // The last body once more: every line is read from its template, but the blank ones and the
    // ones with an error, which are never remembered.
    const text = lines.join("\n");
    const errors = parsePrometheus(text, families ? { families } : {}).errorCount;
    const parsed = text.endsWith("\n") ? lines.slice(0, -1) : lines;
    const blank = parsed.filter((l) => /^[ \t]*\r?$/.test(l)).length;
    const misses = cache.misses;
    same(text, families, cache, `${name}, unchanged`);
    expect(cache.misses - misses).toBe(blank + errors);
  });

  it("a different filter on the same cache starts over instead of replaying the other filter's lines", () => {
    const text = fixture("real-metrics/vllm-0.29.0-inferstack.prom");
    const cache = new LineCache();
    same(text, ADAPTERS.vllm.families, cache, "vllm");
    same(text, ADAPTERS.sglang.families, cache, "sglang after vllm");
    same(text, undefined, cache, "no filter after sglang");
    same(text, ADAPTERS.vllm.families, cache, "vllm again");
  });

  it("a sample read from a template has frozen labels: no reader can change another reading's", () => {
    const text = fixture("real-metrics/vllm-0.29.0-inferstack.prom");
    const cache = new LineCache();
    parsePrometheus(text, { families: ADAPTERS.vllm.families, cache });
    const s = parsePrometheus(text, { families: ADAPTERS.vllm.families, cache }).samples.find((x) => Object.keys(x.labels).length > 0)!;
    expect(Object.isFrozen(s.labels)).toBe(true);
    expect(() => {
      (s.labels as Record<string, string>).engine = "9";
    }).toThrow(TypeError);
  });

  it("a label named __proto__ is an own label through the cache too, never the prototype", () => {
    const text = '# TYPE x gauge\nx{__proto__="p",a="1"} 1\n';
    const cache = new LineCache();
    same(text, undefined, cache, "first");
    same(text, undefined, cache, "second");
    const s = parsePrometheus(text, { cache }).samples[0];
    expect(Object.getPrototypeOf(s.labels)).toBe(Object.prototype);
    expect(Object.hasOwn(s.labels, "__proto__")).toBe(true);
  });

  it("many caches of one fleet share their templates and keep no body alive", () => {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    // Model names of 13+ characters: V8 keeps such a substring as a view into the whole body.
    const base = fixture("real-metrics/vllm-0.29.0-inferstack.prom").replace(/model_name="[^"]*"/g, 'model_name="meta-llama/Llama-3.1-70B-Instruct"');
    const caches: LineCache[] = [];
    const kept: unknown[] = [];
    const n = 300;
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < n; i++) {
      const cache = new LineCache();
      // A distinct body per backend and per read, as every answer is.
      for (let read = 0; read < 2; read++) {
        const r = parsePrometheus(`# backend ${i} read ${read}\n${base}`, { families: ADAPTERS.vllm.families, cache });
        kept.push(r.samples);
      }
      caches.push(cache);
    }
    gc();
    const perBackend = (process.memoryUsage().heapUsed - before) / n;
    // Two readings' samples and one line array each; a body kept alive would be ~57 KB more.
    expect(perBackend).toBeLessThan(base.length / 2);
    expect(caches.every((c) => c.hits > 0)).toBe(true);
    expect(kept).toHaveLength(2 * n);
  });
});
