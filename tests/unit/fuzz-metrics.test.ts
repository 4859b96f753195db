/**
 * Property-based fuzzing of the /metrics parser and the vLLM extraction (fast-check, fixed seed).
 *
 * What must hold for ANY body a backend might send:
 * - parsePrometheus and parseVllmMetrics never throw, and what they return is consistent (errors are
 *   counted, line numbers exist, values are numbers).
 * - No metrics always comes with a reason (`error`); metrics, when present, are usable numbers:
 *   running/waiting finite and >= 0, counters finite >= 0 or null, kv usage in 0..1 or null.
 * - A busy server never reads as idle unless the mutated data itself says 0 running and 0 waiting:
 *   as long as one of the original busy lines is still intact in the body, the extraction either
 *   sees the load or gives no metrics at all. "Idle" is the only state in which stepwatch sends a
 *   request of its own; a busy server misread as idle would get a probe queued behind its load
 *   (the incident stepwatch exists for).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parsePrometheus, type ParseResult } from "@/lib/metrics/prometheus";
import { parseVllmMetrics, type VllmParse } from "@/lib/metrics/vllm";

const FIXTURES = path.join(__dirname, "../fixtures/real-metrics");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name), "utf8");

/** Fixed seed: a failure reproduces exactly; the counts keep the whole file well under 10 s. */
const SEED = 20_260_601;
const RUNS = { arbitrary: 1000, mutations: 500 };

const RUNNING = "vllm:num_requests_running";
const WAITING = "vllm:num_requests_waiting";

/**
 * The real vLLM scrapes were all taken at rest (0 running, 0 waiting). The busy originals are the
 * same bodies with the load gauges set to 3 running, 2 waiting (and for the V1 scrape, a second
 * data-parallel engine with 1 running), so mutations start from a server that is busy.
 */
function busy(body: string, extraEngine: boolean): string {
  const lines = body.split("\n").map((l) => {
    if (l.startsWith(`${RUNNING}{`)) return l.replace(/ 0\.0$/, " 3.0");
    if (l.startsWith(`${WAITING}{`)) return l.replace(/ 0\.0$/, " 2.0");
    return l;
  });
  if (extraEngine) {
    const i = lines.findIndex((l) => l.startsWith(`${RUNNING}{`));
    lines.splice(i + 1, 0, lines[i].replace('engine="0"', 'engine="1"').replace(/ 3\.0$/, " 1.0"));
  }
  return lines.join("\n");
}

const ORIGINALS = [
  { name: "vllm-0.29.0-inferstack (2 engines)", body: busy(fixture("vllm-0.29.0-inferstack.prom"), true) },
  { name: "vllm-unstated-lmswitch", body: busy(fixture("vllm-unstated-lmswitch.prom"), false) },
  { name: "vllm-0.4.3-plus-v1-families-datadog", body: busy(fixture("vllm-0.4.3-plus-v1-families-datadog.prom"), false) },
];

/** The lines that make a body busy: running or waiting with a value > 0. */
const busyLines = (body: string) =>
  body.split("\n").filter((l) => (l.startsWith(`${RUNNING}{`) || l.startsWith(`${WAITING}{`)) && !/ 0(\.0)?$/.test(l));

/** Everything that must hold for any body. */
function checkInvariants(body: string, parsed: ParseResult, r: VllmParse): void {
  const lineCount = body.split("\n").length;
  expect(parsed.errorCount).toBeGreaterThanOrEqual(parsed.errors.length);
  expect(parsed.errors.length).toBeLessThanOrEqual(100);
  expect(parsed.samples.length + parsed.errorCount).toBeLessThanOrEqual(lineCount);
  // One expect per list (not per item): thousands of runs over 500-sample bodies stay fast.
  const badError = parsed.errors.find((e) => !(e.line >= 1 && e.line <= lineCount && e.message.length > 0 && e.text.length <= 80));
  expect(badError).toBeUndefined();
  const badSample = parsed.samples.find((s) => typeof s.value !== "number" || s.name.length === 0);
  expect(badSample).toBeUndefined();
  expect(r.sampleCount).toBe(parsed.samples.length);
  expect(r.errorCount).toBe(parsed.errorCount);
  if (r.metrics === null) {
    // No metrics is never silent: the reading will say why.
    expect(typeof r.error).toBe("string");
    expect(r.error!.length).toBeGreaterThan(0);
    return;
  }
  const m = r.metrics;
  for (const v of [m.running, m.waiting]) {
    expect(Number.isFinite(v)).toBe(true);
    expect(v).toBeGreaterThanOrEqual(0);
  }
  for (const v of [m.steps, m.promptTokens, m.generationTokens, m.finishedRequests]) {
    if (v !== null) {
      expect(Number.isFinite(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(0);
    }
  }
  if (m.kvCacheUsage !== null) {
    expect(m.kvCacheUsage).toBeGreaterThanOrEqual(0);
    expect(m.kvCacheUsage).toBeLessThanOrEqual(1);
  }
  if (m.processStartTime !== null) {
    expect(Number.isFinite(m.processStartTime)).toBe(true);
    expect(m.processStartTime).toBeGreaterThan(0);
  }
  // Unparseable lines in a body that still gave metrics are reported, not dropped silently.
  if (parsed.errorCount > 0) expect(r.warnings[0]).toMatch(/unparseable line/);
}

describe("parsePrometheus / parseVllmMetrics on arbitrary text", () => {
  it.each([
    { unit: "grapheme-ascii", what: "printable ASCII" },
    { unit: "binary", what: "any unicode code point, lone surrogates included" },
    { unit: "grapheme", what: "unicode graphemes" },
  ] as const)("never throw, and report what they could not read ($what)", ({ unit }) => {
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 400 }), (body) => {
        checkInvariants(body, parsePrometheus(body), parseVllmMetrics(body));
      }),
      { seed: SEED, numRuns: RUNS.arbitrary },
    );
  });

  // Text built from the format's own pieces reaches deep into the grammar (labels, escapes,
  // exponents, timestamps), where random characters rarely go.
  const token = fc.constantFrom(
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:iteration_tokens_total_count",
    "process_start_time_seconds", "vllm:kv_cache_usage_perc", "x", "{", "}", '"', "\\", "\\\"", "\\n", "=",
    ",", " ", "\t", "\r", "\n", "#", "# HELP ", "# TYPE ", "gauge", 'engine="0"', 'model_name="m"',
    "0", "1", "-1", "3.0", "1e308", "-1e308", "1e-320", "NaN", "+Inf", "-Inf", "Infinity", "nan", "0x1F",
    "1e", ".", "+", "1700000000000", "_created", "__proto__", "constructor", "le=\"+Inf\"", "\u0000", "é", "💥",
  );
  it("never throw on text made of Prometheus tokens", () => {
    fc.assert(
      fc.property(fc.array(token, { maxLength: 80 }), (parts) => {
        const body = parts.join("");
        checkInvariants(body, parsePrometheus(body), parseVllmMetrics(body));
      }),
      { seed: SEED, numRuns: RUNS.arbitrary * 2 },
    );
  });
});

/** One edit of a body, with indices taken modulo the body's size when applied. */
type Mutation =
  | { op: "delete" | "duplicate"; line: number }
  | { op: "swap"; a: number; b: number }
  | { op: "flip"; pos: number; char: string }
  | { op: "value"; line: number; value: string; loadOnly: boolean }
  | { op: "series"; line: number; engine: string }
  | { op: "insert"; line: number; text: string }
  | { op: "truncate"; pos: number }
  | { op: "crlf" };

const ODD_VALUES = ["NaN", "+Inf", "-Inf", "-1", "-0", "1e308", "1.7976931348623157e308", "0", "1e-320", "9007199254740993", "", "1,5", "0x10"];

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constantFrom("delete" as const, "duplicate" as const), line: fc.nat() }),
  fc.record({ op: fc.constant("swap" as const), a: fc.nat(), b: fc.nat() }),
  fc.record({ op: fc.constant("flip" as const), pos: fc.nat(), char: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) }),
  fc.record({ op: fc.constant("value" as const), line: fc.nat(), value: fc.constantFrom(...ODD_VALUES), loadOnly: fc.boolean() }),
  fc.record({ op: fc.constant("series" as const), line: fc.nat(), engine: fc.constantFrom("0", "1", "7", "") }),
  fc.record({ op: fc.constant("insert" as const), line: fc.nat(), text: fc.string({ unit: "binary", maxLength: 60 }) }),
  fc.record({ op: fc.constant("truncate" as const), pos: fc.nat() }),
  fc.constant({ op: "crlf" as const }),
);

const isSample = (l: string) => l !== "" && !l.startsWith("#");
const isLoad = (l: string) => l.startsWith(`${RUNNING}{`) || l.startsWith(`${WAITING}{`);

function apply(body: string, m: Mutation): string {
  const lines = body.split("\n");
  const at = (i: number) => i % lines.length;
  switch (m.op) {
    case "delete":
      lines.splice(at(m.line), 1);
      return lines.join("\n");
    case "duplicate":
      lines.splice(at(m.line), 0, lines[at(m.line)]);
      return lines.join("\n");
    case "swap": {
      const [a, b] = [at(m.a), at(m.b)];
      [lines[a], lines[b]] = [lines[b], lines[a]];
      return lines.join("\n");
    }
    case "flip": {
      if (body.length === 0) return m.char;
      const p = m.pos % body.length;
      return body.slice(0, p) + m.char + body.slice(p + 1);
    }
    case "value": {
      // Replace the value of a sample line (a load gauge when loadOnly and there is one left).
      const candidates = lines.map((l, i) => [l, i] as const).filter(([l]) => isSample(l) && (!m.loadOnly || isLoad(l)));
      if (candidates.length === 0) return body;
      const [l, i] = candidates[m.line % candidates.length];
      const cut = l.lastIndexOf(" ");
      lines[i] = cut === -1 ? `${l} ${m.value}` : `${l.slice(0, cut)} ${m.value}`;
      return lines.join("\n");
    }
    case "series": {
      // A duplicate series: the same sample again, under another engine label (or the same one).
      const vllm = lines.map((l, i) => [l, i] as const).filter(([l]) => l.startsWith("vllm:"));
      if (vllm.length === 0) return body;
      const [l, i] = vllm[m.line % vllm.length];
      const copy = m.engine === "" ? l : l.replace(/engine="[^"]*"/, `engine="${m.engine}"`);
      lines.splice(i + 1, 0, copy);
      return lines.join("\n");
    }
    case "insert":
      lines.splice(at(m.line), 0, m.text);
      return lines.join("\n");
    case "truncate":
      return body.slice(0, body.length === 0 ? 0 : m.pos % body.length);
    case "crlf":
      return body.replace(/\n/g, "\r\n");
  }
}

describe("mutations of real vLLM scrapes of a busy server", () => {
  it.each(ORIGINALS)("the busy original reads busy: $name", ({ body }) => {
    const r = parseVllmMetrics(body);
    expect(r.error).toBeUndefined();
    expect(r.metrics!.running + r.metrics!.waiting).toBeGreaterThan(0);
  });

  it.each(ORIGINALS)("never throw, report errors, never idle while a busy line is intact: $name", ({ body }) => {
    const original = busyLines(body);
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 6 }), (mutations) => {
        const mutated = mutations.reduce(apply, body);
        const parsed = parsePrometheus(mutated);
        const r = parseVllmMetrics(mutated);
        checkInvariants(mutated, parsed, r);
        if (r.metrics === null) return;
        // The parser reads lines independently: an intact busy line is a positive sample, and
        // one positive series makes the family's sum positive (a bad series spoils it to null).
        const intact = mutated.split(/\r?\n/).filter((l) => original.includes(l));
        if (intact.length > 0) expect(r.metrics.running + r.metrics.waiting).toBeGreaterThan(0);
        // Idle only when every load line the parser accepted says 0.
        if (r.metrics.running === 0 && r.metrics.waiting === 0) {
          const load = parsed.samples.filter((s) => s.name === RUNNING || s.name === WAITING);
          expect(load.length).toBeGreaterThanOrEqual(2);
          for (const s of load) expect(s.value).toBe(0);
        }
      }),
      { seed: SEED, numRuns: RUNS.mutations },
    );
  });

  it.each(["NaN", "+Inf", "-Inf", "-1"])("%s in a load gauge of a busy body: no metrics, with the family named", (value) => {
    for (const { body } of ORIGINALS) {
      for (const gauge of [RUNNING, WAITING]) {
        const mutated = body
          .split("\n")
          .map((l) => (l.startsWith(`${gauge}{`) ? `${l.slice(0, l.lastIndexOf(" "))} ${value}` : l))
          .join("\n");
        const r = parseVllmMetrics(mutated);
        expect(r.metrics).toBeNull();
        expect(r.error).toContain(`unusable ${gauge}`);
      }
    }
  });

  // Two engines whose values are each usable (at most 2^53) but add up past 2^53: only the guard
  // on the SUM (combine in lib/metrics/vllm.ts) catches them; the per-series check lets each through.
  const twoEngines = (value: string) =>
    ORIGINALS[0].body // two engines of running; iteration_tokens gets a second engine here
      .split("\n")
      .map((l) => (l.startsWith(`${RUNNING}{`) || l.startsWith("vllm:iteration_tokens_total_count{") ? `${l.slice(0, l.lastIndexOf(" "))} ${value}` : l))
      .join("\n")
      .replace(/^(vllm:iteration_tokens_total_count\{engine=)"0"(.*)$/m, (line) => `${line}\n${line.replace('engine="0"', 'engine="1"')}`);

  it("values usable one by one that add up past 2^53 are unusable, never a sum that cannot show progress", () => {
    const each = 2 ** 52 + 2 ** 51; // 6755399441055744 <= 2^53, twice that is not
    const mutated = twoEngines(String(each));
    const r = parseVllmMetrics(mutated);
    checkInvariants(mutated, parsePrometheus(mutated), r);
    expect(r.metrics).toBeNull();
    expect(r.error).toBe(`unusable ${RUNNING}: the 2 series of ${RUNNING} add up past 2^53; cannot tell a busy server from an idle one`);
    // The same sum on a counter only drops that counter, with a warning naming it.
    const steps = parseVllmMetrics(twoEngines(String(each)).replace(new RegExp(`^(${RUNNING}\\{[^}]*\\}) \\S+$`, "gm"), "$1 1.0"));
    expect(steps.metrics).not.toBeNull();
    expect(steps.metrics!.steps).toBeNull();
    expect(steps.warnings).toContain("vllm:iteration_tokens_total_count ignored: the 2 series of vllm:iteration_tokens_total_count add up past 2^53");
  });

  it("1e308 on two engines (Infinity if summed) is refused per series, never summed", () => {
    const mutated = twoEngines("1e308");
    const r = parseVllmMetrics(mutated);
    checkInvariants(mutated, parsePrometheus(mutated), r);
    expect(r.metrics).toBeNull();
    expect(r.error).toMatch(/^unusable vllm:num_requests_running: .* = 1e\+308 is not a finite number >= 0 \(at most 2\^53\)/);
  });
});

describe("absurd counts", () => {
  it("one series at 1e308 or past 2^53 is unusable, named in the error or warning", () => {
    const [{ body }] = ORIGINALS;
    const running = parseVllmMetrics(body.replace(/^(vllm:num_requests_running\{engine="0"[^}]*\}) 3\.0$/m, "$1 1e308"));
    expect(running.metrics).toBeNull();
    expect(running.error).toContain("unusable vllm:num_requests_running");
    const steps = parseVllmMetrics(body.replace(/^(vllm:iteration_tokens_total_count\{[^}]*\}) 137\.0$/m, "$1 9007199254740993"));
    expect(steps.metrics!.steps).toBeNull();
    expect(steps.warnings.join("\n")).toContain("vllm:iteration_tokens_total_count ignored");
  });
});
