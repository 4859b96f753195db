import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseFloatStrict, parsePrometheus } from "@/lib/metrics/prometheus";

const FIXTURES = path.join(__dirname, "../fixtures/real-metrics");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name), "utf8");

describe("parsePrometheus on real scrapes", () => {
  // Sample counts = lines that are neither blank nor comments (checked with grep when written);
  // families = distinct # TYPE names (86 and 96 match the fixture README, _created families included).
  it.each([
    { file: "vllm-0.29.0-inferstack.prom", samples: 420, types: 86, created: 45 },
    { file: "vllm-unstated-lmswitch.prom", samples: 519, types: 96, created: 71 },
    { file: "vllm-0.4.3-plus-v1-families-datadog.prom", samples: 185, types: 50, created: 0 },
    { file: "sglang-0.5.10-datadog.prom", samples: 43, types: 25, created: 0 },
    { file: "tgi-datadog-truncated.prom", samples: 161, types: 12, created: 0 },
  ])("$file: $samples samples, $types types, no errors", ({ file, samples, types, created }) => {
    const r = parsePrometheus(fixture(file));
    expect(r.errors).toEqual([]);
    expect(r.errorCount).toBe(0);
    expect(r.samples).toHaveLength(samples);
    expect(r.types.size).toBe(types);
    expect(r.samples.filter((s) => s.name.endsWith("_created"))).toHaveLength(created);
    for (const s of r.samples) expect(typeof s.value).toBe("number");
  });

  it("reads a 3-digit exponent and le=\"1e+06\" (lmswitch)", () => {
    const r = parsePrometheus(fixture("vllm-unstated-lmswitch.prom"));
    expect(r.samples.find((s) => s.name === "process_virtual_memory_bytes")?.value).toBe(10777853952);
    expect(r.samples.some((s) => s.labels.le === "1e+06")).toBe(true);
    expect(r.samples.find((s) => s.name === "process_start_time_seconds")?.value).toBe(1788859833.25);
  });

  it("keeps HELP texts verbatim, trailing space included (inferstack)", () => {
    const r = parsePrometheus(fixture("vllm-0.29.0-inferstack.prom"));
    const help = r.help.get("http_request_duration_seconds");
    expect(help).toBeDefined();
    expect(help?.endsWith(" ")).toBe(true);
    expect(r.types.get("vllm:iteration_tokens_total")).toBe("histogram");
    expect(r.types.get("vllm:prompt_tokens_created")).toBe("gauge");
  });

  it("reads TGI's summary, blank lines between families and counters without HELP", () => {
    const r = parsePrometheus(fixture("tgi-datadog-truncated.prom"));
    expect(r.types.get("tgi_request_skipped_tokens")).toBe("summary");
    expect(r.help.size).toBeLessThan(r.types.size);
    expect(r.samples.at(-1)).toEqual({ name: "tgi_request_skipped_tokens_count", labels: {}, value: 3423 });
  });
});

describe("parsePrometheus on crafted lines", () => {
  const one = (line: string) => {
    const r = parsePrometheus(line);
    expect(r.errors).toEqual([]);
    expect(r.samples).toHaveLength(1);
    return r.samples[0];
  };

  it.each([
    { line: "up 1", name: "up", labels: {}, value: 1 },
    { line: "up 1\n", name: "up", labels: {}, value: 1 },
    { line: "  up \t 1  ", name: "up", labels: {}, value: 1 },
    { line: "vllm:num_requests_running 3", name: "vllm:num_requests_running", labels: {}, value: 3 },
    { line: ":odd:name: 2", name: ":odd:name:", labels: {}, value: 2 },
    { line: 'a{b="c"} 1.5', name: "a", labels: { b: "c" }, value: 1.5 },
    { line: 'a{b="c",} 1', name: "a", labels: { b: "c" }, value: 1 },
    { line: 'a { b = "c" , d="" } 1', name: "a", labels: { b: "c", d: "" }, value: 1 },
    { line: "a{} 7", name: "a", labels: {}, value: 7 },
    { line: 'a{b="x y} {z=1"} 2', name: "a", labels: { b: "x y} {z=1" }, value: 2 },
    { line: 'a{p="C:\\\\DIR\\\\F.TXT"} 1', name: "a", labels: { p: "C:\\DIR\\F.TXT" }, value: 1 },
    { line: 'a{e="say \\"hi\\"\\nbye"} 1', name: "a", labels: { e: 'say "hi"\nbye' }, value: 1 },
    { line: 'a{e="tab\\t"} 1', name: "a", labels: { e: "tab\\t" }, value: 1 },
    { line: 'a{e="ends in a backslash\\\\"} 1', name: "a", labels: { e: "ends in a backslash\\" }, value: 1 },
    { line: 'a{e="\\"} 1"} 2', name: "a", labels: { e: '"} 1' }, value: 2 },
    { line: 'a{u="ünï ✓"} 1', name: "a", labels: { u: "ünï ✓" }, value: 1 },
    { line: "a 1.0777853952e+010", name: "a", labels: {}, value: 10777853952 },
    { line: "a -1.5E-3", name: "a", labels: {}, value: -0.0015 },
    { line: "a .5", name: "a", labels: {}, value: 0.5 },
    { line: "a 5.", name: "a", labels: {}, value: 5 },
    { line: "a +Inf", name: "a", labels: {}, value: Infinity },
    { line: "a -Inf", name: "a", labels: {}, value: -Infinity },
    { line: "a inf", name: "a", labels: {}, value: Infinity },
  ])("$line", ({ line, name, labels, value }) => {
    const s = one(line);
    expect(s.name).toBe(name);
    expect(s.labels).toEqual(labels);
    expect(s.value).toBe(value);
    expect(s.timestampMs).toBeUndefined();
  });

  it("reads NaN", () => {
    expect(one("a NaN").value).toBeNaN();
  });

  it.each([
    { line: "a 1 1395066363000", ts: 1395066363000 },
    { line: 'a{b="c"} +Inf -3982045', ts: -3982045 },
    { line: "a 2 0\t", ts: 0 },
  ])("timestamp: $line", ({ line, ts }) => {
    expect(one(line).timestampMs).toBe(ts);
  });

  it("sets a label named __proto__ as a plain own property", () => {
    const s = one('a{__proto__="x",constructor="y"} 1');
    expect(Object.getPrototypeOf(s.labels)).toBe(Object.prototype);
    expect(Object.keys(s.labels)).toEqual(["__proto__", "constructor"]);
    expect(Object.getOwnPropertyDescriptor(s.labels, "__proto__")?.value).toBe("x");
  });

  it("handles CRLF, blank lines, comments and a body with no trailing newline", () => {
    const body = [
      "# HELP a The a.",
      "# TYPE a counter",
      "",
      "   ",
      "# just a comment",
      "# type is lowercase here, so a comment",
      "# HELPFUL text",
      "#TYPE b gauge",
      "a_total 4",
      "b 5", // no newline after the last line
    ].join("\r\n");
    const r = parsePrometheus(body);
    expect(r.errors).toEqual([]);
    expect(r.samples).toEqual([
      { name: "a_total", labels: {}, value: 4 },
      { name: "b", labels: {}, value: 5 },
    ]);
    expect(r.types).toEqual(
      new Map([
        ["a", "counter"],
        ["b", "gauge"], // "#TYPE" without a blank counts, as in Prometheus' own parser
      ]),
    );
    expect(r.help).toEqual(new Map([["a", "The a."]]));
  });

  it("unescapes HELP (\\\\ and \\n only) and keeps the first TYPE of a name", () => {
    const r = parsePrometheus('# HELP a x\\\\y\\nz \\"q\\"\n# TYPE a gauge\n# TYPE a counter\n# HELP b\n');
    expect(r.errors).toEqual([]);
    expect(r.help.get("a")).toBe('x\\y\nz \\"q\\"');
    expect(r.help.get("b")).toBe("");
    expect(r.types.get("a")).toBe("gauge");
  });

  it.each([
    { line: "<html>", message: "no metric name" },
    { line: '{"a": 1}', message: "no metric name" },
    { line: "404 page not found", message: "no metric name" },
    { line: "a", message: "no value" },
    { line: "a{b=\"c\"}", message: "no value" },
    { line: "a b", message: "invalid value" },
    { line: "a 0x1F", message: "invalid value" },
    { line: "a 1e", message: "invalid value" },
    { line: "a +NaN", message: "invalid value" },
    { line: "a 1 2.5", message: "invalid timestamp" },
    { line: "a 1 2 3", message: "unexpected text after the timestamp" },
    { line: "a-1 2", message: "unexpected character" },
    { line: 'a{b="c"}1', message: "unexpected character" },
    { line: 'a{b="c} 1', message: "unterminated value" },
    { line: 'a{b="c\\', message: "unterminated value" },
    { line: 'a{b="c"', message: "unterminated label set" },
    { line: "a{b=c} 1", message: "expected a quoted value" },
    { line: 'a{b "c"} 1', message: 'expected "="' },
    { line: 'a{1b="c"} 1', message: "invalid label name" },
    { line: 'a{b:c="d"} 1', message: 'expected "="' },
    { line: 'a{b="c" d="e"} 1', message: 'expected "," or "}"' },
    { line: 'a{b="c",b="d"} 1', message: "duplicate label" },
    { line: "# TYPE", message: "without a valid metric name" },
    { line: "# TYPE a", message: "without a type" },
    { line: "# TYPE a counter extra", message: "unexpected text" },
    { line: "# HELP 1a text", message: "without a valid metric name" },
  ])("rejects $line", ({ line, message }) => {
    const r = parsePrometheus(`ok 1\n${line}\nok 2`);
    expect(r.samples.map((s) => s.value)).toEqual([1, 2]);
    expect(r.errorCount).toBe(1);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0].line).toBe(2);
    expect(r.errors[0].message).toContain(message);
    expect(r.errors[0].text).toBe(line.slice(0, 80));
  });

  it("turns an HTML page into errors only, with line numbers", () => {
    const html = "<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n\n<body>502</body>\n</html>\n";
    const r = parsePrometheus(html);
    expect(r.samples).toEqual([]);
    expect(r.errorCount).toBe(5);
    expect(r.errors.map((e) => e.line)).toEqual([1, 2, 3, 5, 6]);
  });

  it("turns a JSON body into errors only", () => {
    const r = parsePrometheus(JSON.stringify({ object: "error", message: "Not Found", code: 404 }, null, 2));
    expect(r.samples).toEqual([]);
    expect(r.errorCount).toBe(5);
  });

  it("keeps at most maxErrors errors but counts them all, on a large junk body", () => {
    const junk = Array.from({ length: 200_000 }, (_, i) =>
      i % 3 === 0 ? 'm{l="' + "\\\\".repeat(20) : i % 3 === 1 ? "{".repeat(30) : "<p>junk</p>",
    ).join("\n");
    const r = parsePrometheus(junk);
    expect(r.samples).toEqual([]);
    expect(r.errorCount).toBe(200_000);
    expect(r.errors).toHaveLength(100);
    expect(parsePrometheus(junk, { maxErrors: 3 }).errors.map((e) => e.line)).toEqual([1, 2, 3]);
  });

  it("cuts the error text of a very long line", () => {
    const r = parsePrometheus("x".repeat(100_000) + "!");
    expect(r.errorCount).toBe(1);
    expect(r.errors[0].text).toHaveLength(80);
  });
});

describe("parseFloatStrict", () => {
  it.each([
    ["0", 0],
    ["-0.0", -0],
    ["1e3", 1000],
    ["1E+06", 1e6],
    ["+2.5", 2.5],
    ["Infinity", Infinity],
    ["-INF", -Infinity],
  ])("%s -> %s", (tok, value) => {
    expect(parseFloatStrict(tok)).toBe(value);
  });

  it.each(["", "+", "-", ".", "e5", "1e", "1e+", "1.2.3", "0x10", "1_000", " 1", "1 ", "Infx", "-NaN", "١"])(
    "rejects %j",
    (tok) => {
      expect(parseFloatStrict(tok)).toBeNull();
    },
  );
});

describe("parsePrometheus with a family filter", () => {
  const FILES = [
    "vllm-0.29.0-inferstack.prom",
    "vllm-unstated-lmswitch.prom",
    "vllm-0.4.3-plus-v1-families-datadog.prom",
    "sglang-0.5.10-datadog.prom",
    "tgi-datadog-truncated.prom",
  ];
  const SUFFIXES = ["", "_total", "_count", "_sum", "_bucket", "_created", "_info"];
  const wanted = (families: string[]) => (name: string) => families.some((f) => SUFFIXES.some((x) => name === f + x));

  it.each(FILES)("%s: keeps exactly the full parse's samples of the named families, and counts the rest", (file) => {
    const text = fixture(file);
    const full = parsePrometheus(text);
    // A family with buckets, a counter, a single series name, and one that is absent everywhere.
    const families = ["vllm:iteration_tokens_total", "vllm:prompt_tokens", "process_start_time_seconds", "vllm:num_requests_running", "sglang:num_running_reqs", "tgi_request_count", "absent_family"];
    const keep = wanted(families);
    const filtered = parsePrometheus(text, { families });
    expect(filtered.samples).toEqual(full.samples.filter((s) => keep(s.name)));
    expect(filtered.skippedLines).toBe(full.samples.length - filtered.samples.length);
    expect(filtered.errorCount).toBe(0);
    expect([...filtered.types.keys()].every(keep)).toBe(true);
    expect([...filtered.types]).toEqual([...full.types].filter(([k]) => keep(k)));
    expect([...filtered.help]).toEqual([...full.help].filter(([k]) => keep(k)));
  });

  it("a single series name keeps that series only (no buckets)", () => {
    const r = parsePrometheus(fixture("vllm-0.29.0-inferstack.prom"), { families: ["vllm:iteration_tokens_total_count"] });
    expect(r.samples.map((s) => s.name)).toEqual(["vllm:iteration_tokens_total_count"]);
    expect(r.samples[0].labels.model_name).toBe("qwen2.5-1.5b");
  });

  it("still reports malformed lines of kept families, and lines with no valid name; skips the labels of others unread", () => {
    const body = ['keep{a="1"} 1', 'keep{a="unterminated} 2', 'other{a="unterminated} 3', "<html>", "other_total 4"].join("\n");
    const r = parsePrometheus(body, { families: ["keep"] });
    expect(r.samples).toEqual([{ name: "keep", labels: { a: "1" }, value: 1 }]);
    expect(r.errors.map((e) => e.line)).toEqual([2, 4]);
    expect(r.skippedLines).toBe(2);
  });

  it("a name that shares a hash with a kept one is still skipped (the name itself is compared)", () => {
    // "Aa" and "BB" have the same 31-multiplier hash.
    const r = parsePrometheus("Aa 1\nBB 2\n", { families: ["Aa"] });
    expect(r.samples.map((s) => s.name)).toEqual(["Aa"]);
    expect(r.skippedLines).toBe(1);
  });

  it("junk after a brace with no closing brace is an error, found without looking past the line", () => {
    const r = parsePrometheus("x} 1\nother{a=\"1\" 2\n", { families: ["keep"] });
    expect(r.skippedLines).toBe(0);
    expect(r.errors.map((e) => e.line)).toEqual([1, 2]);
  });

  it("without the option nothing is skipped", () => {
    const r = parsePrometheus("a 1\nb 2\n");
    expect(r.samples).toHaveLength(2);
    expect(r.skippedLines).toBe(0);
  });
});
