/**
 * Benchmark: the cost of one GET /metrics scrape of stepwatch at 1000 backends (issue 13: "cheap
 * enough to be scraped every 5 s at 1000 backends"). A real watcher (real monitors, real SQLite
 * temp file) over 1000 backends and 10 proxies, its reads replaced by fixed readings so only the
 * export is measured; after one round of verdicts the watcher is stopped and the export's render
 * (fleet snapshot + every collect() + prom-client's text format, default process metrics
 * included) is timed back to back. The comparison, in the same run on the same snapshot: the
 * JSON that /api/fleet encodes. Not included: Next's routing and the socket (a few hundred µs).
 *
 * `npx tsx bench/metrics-scrape.ts [--quick]` prints the result as JSON; `npm run bench -- --only
 * metrics` puts it in bench/results.json and RESULTS.md.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDb } from "../db/client";
import { BACKEND_STATES, STATE_INFO, restartRecommended } from "../lib/core/states";
import { type ProxyReading, type Reading, type Verdict, reason } from "../lib/core/types";
import { parseConfig } from "../lib/config";
import { StepwatchMetrics } from "../lib/api/export/metrics";
import { startWatcher } from "../lib/watcher";
import { fleetSnapshot } from "../lib/api/snapshot";
import { summarize, type Summary } from "./stats";
import { runWhenMain } from "./main";

export interface MetricsScrapeResult {
  backends: number;
  proxies: number;
  scrapes: number;
  /** One render of the whole exposition (ms). */
  renderMs: Summary;
  /** CPU of this process per render (ms). */
  cpuMsPerScrape: number;
  bytes: number;
  /** Sample lines in the exposition. */
  samples: number;
  /** Comparison: JSON.stringify of the same fleet snapshot, as /api/fleet does (ms). */
  fleetJsonMs: Summary;
  fleetJsonBytes: number;
  /** One core's share used by scraping every 5 s: median render / 5000 ms. */
  coreShareAt5s: number;
}

const N_BACKENDS = 1000;
const N_PROXIES = 10;

function fixedReading(i: number, at: number): Reading {
  return {
    at,
    latencyMs: 3 + (i % 17),
    outcome: "ok",
    metrics: {
      processStartTime: 1_700_000_000 + i,
      running: i % 9,
      waiting: i % 4,
      steps: 1000 * i,
      promptTokens: 50_000 * i,
      generationTokens: 20_000 * i,
      finishedRequests: 100 * i,
      kvCacheUsage: (i % 100) / 100,
      models: [`model-${i % 7}`],
    },
    bytes: 35_000,
  };
}

export async function runMetricsScrapeBench(opts: { quick: boolean }): Promise<MetricsScrapeResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-metrics-"));
  const db = openDb(path.join(dir, "m.db"));
  try {
    const config = parseConfig(
      {
        pollIntervalSeconds: 1,
        backends: Array.from({ length: N_BACKENDS }, (_, i) => ({ id: `gpu-${String(i).padStart(4, "0")}`, url: `http://127.0.0.1:${10_000 + i}` })),
        proxies: Array.from({ length: N_PROXIES }, (_, i) => ({ id: `lb-${i}`, url: `http://127.0.0.1:${20_000 + i}` })),
      },
      "bench",
      { env: {} },
    );
    const index = new Map(config.backends.map((b, i) => [b.url, i]));
    const metrics = new StepwatchMetrics();
    metrics.seedRestarts(config.backends.map((b) => b.id), []);
    const watcher = startWatcher({
      config,
      db: db.db,
      telemetry: metrics.telemetry,
      log: () => {},
      // Every state of the list appears; nothing is sent anywhere.
      observe: async (target) => {
        const i = index.get(target.url)!;
        const state = BACKEND_STATES[i % BACKEND_STATES.length];
        const reading = fixedReading(i, Date.now());
        const verdict: Verdict = {
          state,
          health: STATE_INFO[state].health,
          healthy: STATE_INFO[state].health === "yes",
          restartRecommended: restartRecommended(state),
          reasons: [reason("unclassified", `${state}: fixed reading for the benchmark`)],
          rates: { stepsPerSecond: i % 50, generationTokensPerSecond: i % 400, promptTokensPerSecond: i % 3000 },
          basis: [reading],
        };
        return { reading, verdict };
      },
      readProxy: async (): Promise<ProxyReading> => ({ at: Date.now(), latencyMs: 2, outcome: "ok", models: ["m"] }),
    });
    const deadline = Date.now() + 30_000;
    while ([...watcher.backends.values()].some((m) => m.last === null) || [...watcher.proxies.values()].some((m) => m.last === null)) {
      if (Date.now() > deadline) throw new Error("the watcher did not read every backend within 30 s");
      await new Promise((r) => setTimeout(r, 50));
    }
    await watcher.stop();
    const snapshot = () => fleetSnapshot(watcher, { demo: false, now: Date.now(), restartCooldownSeconds: config.restartCooldownSeconds, pollIntervalSeconds: config.pollIntervalSeconds });
    metrics.attach(() => ({ fleet: snapshot(), pollIntervalSeconds: config.pollIntervalSeconds }));

    const scrapes = opts.quick ? 30 : 200;
    let text = "";
    for (let i = 0; i < 10; i++) text = await metrics.render(); // warm-up (JIT, caches)
    const times: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < scrapes; i++) {
      const t0 = performance.now();
      text = await metrics.render();
      times.push(performance.now() - t0);
    }
    const cpu = process.cpuUsage(cpu0);

    let json = "";
    for (let i = 0; i < 10; i++) json = JSON.stringify(snapshot());
    const jsonTimes: number[] = [];
    for (let i = 0; i < scrapes; i++) {
      const t0 = performance.now();
      json = JSON.stringify(snapshot());
      jsonTimes.push(performance.now() - t0);
    }

    const renderMs = summarize(times);
    return {
      backends: N_BACKENDS,
      proxies: N_PROXIES,
      scrapes,
      renderMs,
      cpuMsPerScrape: (cpu.user + cpu.system) / 1000 / scrapes,
      bytes: Buffer.byteLength(text),
      samples: text.split("\n").filter((l) => l !== "" && !l.startsWith("#")).length,
      fleetJsonMs: summarize(jsonTimes),
      fleetJsonBytes: Buffer.byteLength(json),
      coreShareAt5s: renderMs.p50 / 5000,
    };
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d }) : "n/a");

/** The section of bench/RESULTS.md. */
export function metricsScrapeSection(r: MetricsScrapeResult): string {
  return `## 6. One /metrics scrape at ${r.backends} backends

A real watcher over ${r.backends} backends and ${r.proxies} proxies (fixed readings, every state present), then
${r.scrapes} renders of the whole exposition back to back: fleet snapshot, every collect(), prom-client's
text format, default process metrics included (\`bench/metrics-scrape.ts\`).

| | p50 | p90 | p99 | max | size |
|---|---|---|---|---|---|
| GET /metrics exposition (${f(r.samples, 0)} samples) | ${f(r.renderMs.p50)} ms | ${f(r.renderMs.p90)} ms | ${f(r.renderMs.p99)} ms | ${f(r.renderMs.max)} ms | ${f(r.bytes / 1024)} KB |
| comparison: /api/fleet's JSON of the same snapshot | ${f(r.fleetJsonMs.p50)} ms | ${f(r.fleetJsonMs.p90)} ms | ${f(r.fleetJsonMs.p99)} ms | ${f(r.fleetJsonMs.max)} ms | ${f(r.fleetJsonBytes / 1024)} KB |

CPU per scrape ${f(r.cpuMsPerScrape)} ms; scraped every 5 s that is ${f(r.coreShareAt5s * 100, 2)} % of one core.
Not included: Next's routing and the socket.
`;
}

runWhenMain(__filename, () => runMetricsScrapeBench({ quick: process.argv.includes("--quick") }));
