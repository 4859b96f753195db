/**
 * Benchmark: our Prometheus text parser (lib/metrics/prometheus.ts) against the npm package
 * parse-prometheus-text-format, on a realistic /metrics body of an 8-engine data-parallel vLLM V1
 * server. Run: `npx tsx bench/parse.ts` (add `--quick` for fewer iterations). bench/run.ts calls
 * runParseBench(). Timings are printed, never asserted by tests.
 *
 * It also times a junk body at two sizes, to show the parser stays linear on input it cannot parse.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { VLLM_FAMILIES } from "@/lib/engines/vllm";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { runWhenMain } from "./main";


const FIXTURE = path.join(process.cwd(), "tests/fixtures/real-metrics/vllm-0.29.0-inferstack.prom");
const ENGINES = 8;

/**
 * The real single-engine vLLM 0.29.0 scrape with every vllm:* family's samples repeated for
 * engine="0".."7" (HELP/TYPE once per family, samples grouped by family as prometheus_client does).
 */
export function buildDataParallelBody(engines = ENGINES): string {
  const lines = readFileSync(FIXTURE, "utf8").split("\n");
  const out: string[] = [];
  let block: string[] = [];
  const flush = () => {
    for (let e = 0; e < engines; e++) {
      for (const line of block) out.push(line.replace('engine="0"', `engine="${e}"`));
    }
    block = [];
  };
  for (const line of lines) {
    if (line.startsWith("vllm:") && line.includes('engine="0"')) {
      block.push(line);
      continue;
    }
    flush();
    out.push(line);
  }
  flush();
  return out.join("\n");
}

/** Lines that no parser can read: HTML, JSON, unterminated labels, runs of backslashes and braces. */
export function buildJunkBody(bytes: number): string {
  const pieces = [
    "<html><head><title>502 Bad Gateway</title></head>",
    '{"detail":"Not Found","errors":[{"a":1}]}',
    'metric{label="never closed \\\\\\\\\\\\\\\\\\\\\\\\',
    "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
    'm{a="b",c="d",e="f",g="h",i="j",k="l"} not_a_number',
    "                                         ",
  ];
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const p = pieces[i % pieces.length];
    parts.push(p);
    size += p.length + 1;
  }
  return parts.join("\n");
}

type Parser = (text: string) => unknown;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

function time(parse: Parser, text: string, warmup: number, iterations: number): number {
  for (let i = 0; i < warmup; i++) parse(text);
  const runs: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    parse(text);
    runs.push(performance.now() - t0);
  }
  return median(runs);
}

async function loadOther(): Promise<Parser> {
  // A variable specifier keeps TypeScript from demanding type declarations the package lacks.
  const specifier = "parse-prometheus-text-format";
  const mod = (await import(specifier)) as { default?: Parser } | Parser;
  return typeof mod === "function" ? mod : (mod.default as Parser);
}

export interface ParseBenchResult {
  bytes: number;
  samples: number;
  ours: { medianMs: number };
  /** Ours with a family filter of the series the vLLM extraction reads (the engines merge left the watcher on a full parse for now). */
  oursFiltered: { medianMs: number; samples: number };
  other: { medianMs: number };
  /** other / ours: how many times faster ours is. */
  ratio: number;
  junk: { smallBytes: number; smallMs: number; largeBytes: number; largeMs: number };
}

export async function runParseBench(opts: { quick?: boolean } = {}): Promise<ParseBenchResult> {
  const warmup = opts.quick ? 5 : 20;
  const iterations = opts.quick ? 15 : 50;
  const body = buildDataParallelBody();
  const ours = parsePrometheus(body);
  if (ours.errorCount > 0) throw new Error(`bench body does not parse: ${JSON.stringify(ours.errors[0])}`);
  const other = await loadOther();
  other(body); // throws if the package cannot read the body at all

  const oursMs = time(parsePrometheus, body, warmup, iterations);
  // The families the vLLM adapter and the latency figures read: what the read path parses.
  const filtered = (text: string) => parsePrometheus(text, { families: VLLM_FAMILIES });
  const filteredMs = time(filtered, body, warmup, iterations);
  const otherMs = time(other, body, warmup, iterations);

  // Linear on junk: 10x the bytes should take about 10x the time.
  const smallBytes = opts.quick ? 1_000_000 : 5_000_000;
  const largeBytes = smallBytes * 10;
  const smallMs = time(parsePrometheus, buildJunkBody(smallBytes), 1, 3);
  const largeMs = time(parsePrometheus, buildJunkBody(largeBytes), 0, 1);

  return {
    bytes: Buffer.byteLength(body),
    samples: ours.samples.length,
    ours: { medianMs: oursMs },
    oursFiltered: { medianMs: filteredMs, samples: filtered(body).samples.length },
    other: { medianMs: otherMs },
    ratio: otherMs / oursMs,
    junk: { smallBytes, smallMs, largeBytes, largeMs },
  };
}

function printTable(r: ParseBenchResult): void {
  const kb = (b: number) => `${(b / 1024).toFixed(0)} KB`;
  const mb = (b: number) => `${(b / 1e6).toFixed(0)} MB`;
  console.log(`body: ${ENGINES}-engine vLLM V1 /metrics, ${kb(r.bytes)}, ${r.samples} samples`);
  console.log("parser                          median ms");
  console.log(`lib/metrics/prometheus.ts       ${r.ours.medianMs.toFixed(2).padStart(9)}`);
  console.log(`ours, vLLM families only        ${r.oursFiltered.medianMs.toFixed(2).padStart(9)}`);
  console.log(`parse-prometheus-text-format    ${r.other.medianMs.toFixed(2).padStart(9)}`);
  console.log(`ratio (other / ours)            ${r.ratio.toFixed(2).padStart(9)}x`);
  const j = r.junk;
  console.log(
    `junk body: ${mb(j.smallBytes)} ${j.smallMs.toFixed(0)} ms, ${mb(j.largeBytes)} ${j.largeMs.toFixed(0)} ms ` +
      `(x${(j.largeMs / j.smallMs).toFixed(1)} time for x10 bytes)`,
  );
}

// Run directly (`npx tsx bench/parse.ts`), not when bench/run.ts imports it.
runWhenMain(__filename, () => runParseBench({ quick: process.argv.includes("--quick") }), printTable);
