/**
 * Benchmark: what one read costs the model server (issue 30: "at least 10x less bytes and server
 * CPU for vLLM"). The real prometheus_client (tests/support/prom-vllm.py, single-process, a registry
 * rebuilt from a real vLLM 0.29 scrape) is read N times each way, back to back in one run:
 * - the full `GET /metrics` (what every read cost before, and what Prometheus scrapes);
 * - the whole filter `GET /metrics/?name[]=...` (lib/engines/vllm.ts: VLLM_SAMPLES, the latency
 *   histograms' `_bucket`/`_count`/`_sum` included): every read asked this before the cadence;
 * - its lean part (VLLM_LEAN_SAMPLES, without the histograms): the reads in between;
 * - as shipped: the watcher's own read (readBackend with a FilterMemory, one backend polled every
 *   5 s on a clock of its own, the histograms every latencyEverySeconds), averaged over the window:
 *   what a watched vLLM server pays per poll.
 * The bytes and the CPU are the server's own (its GET /stats: bytes sent per path and
 * time.process_time()), not estimated from this side.
 *
 * `npx tsx bench/read-cost.ts [--quick]` prints the result as JSON; `npm run bench -- --only reads`
 * puts it in bench/results.json and RESULTS.md.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { httpRequest } from "../lib/net/http";
import { FilterMemory, LATENCY_EVERY_MS, readBackend } from "../lib/check/read";
import { vllmAdapter } from "../lib/engines/vllm";
import { startPromVllm, VLLM_FIXTURE, type PromVllm } from "../tests/support/prom-vllm";
import { runWhenMain } from "./main";

export interface ReadCostRow {
  what: string;
  path: string;
  /** name[] values in the query (0: the full read). */
  names: number;
  reads: number;
  bytesPerRead: number;
  /** The Python server's own CPU (user + system) per read, in ms. */
  serverCpuMsPerRead: number;
}

export interface ReadCostResult {
  fixture: string;
  prometheusClient: string;
  reads: number;
  full: ReadCostRow;
  /** The whole filter, the histograms included: every read before the cadence, one read in `cadence.every` now. */
  filtered: ReadCostRow;
  /** The lean filter (no latency histograms): the other reads. */
  lean: ReadCostRow;
  /** As shipped: the watcher's reads over a window, the histograms once per `everySeconds`. */
  cadence: ReadCostRow & { pollSeconds: number; everySeconds: number; withHistograms: number };
  /** GET /health (an empty answer): the server's CPU for any request at all, the floor of a read. */
  floor: ReadCostRow;
  /**
   * One name (the running requests, a gauge): prometheus_client's own app with the least a read
   * can ask, the floor of a filtered read. With the lean row it gives each further name's cost.
   * Absent from runs before it was measured.
   */
  oneName?: ReadCostRow;
}

/** The installed Debian package's version ("?" off Debian). */
function debianVersion(pkg: string): string {
  try {
    return execFileSync("dpkg-query", ["-W", "-f", "${Version}", pkg], { encoding: "utf8" }).trim() || "?";
  } catch {
    return "?";
  }
}

async function measure(server: PromVllm, what: string, p: string, reads: number): Promise<ReadCostRow> {
  // One warm-up read, outside the count: the first render allocates what later ones reuse.
  // Read as stepwatch reads (lib/net/http.ts: no Accept-Encoding, so the body is not gzipped).
  const read = () => httpRequest(server.url + p, { timeoutMs: 10_000, maxBytes: 16 << 20 });
  await read();
  const before = await server.stats();
  let bytes = 0;
  for (let i = 0; i < reads; i++) {
    const res = await read();
    if (res.outcome !== "ok") throw new Error(`${what}: ${res.outcome} ${res.status ?? ""} ${res.error ?? ""}`);
    bytes += res.bytes;
  }
  const after = await server.stats();
  const key = p.split("?")[0];
  // /health is not counted by the server (its body is empty): this side's count then.
  const sent = key === "/health" ? bytes : (after.paths[key]?.bytes ?? 0) - (before.paths[key]?.bytes ?? 0);
  // The server's count and ours must agree: the figure is the server's.
  if (sent !== bytes) throw new Error(`${what}: the server counted ${sent} bytes, this side ${bytes}`);
  const names = new URLSearchParams(p.split("?")[1] ?? "").getAll("name[]").length;
  return { what, path: key, names, reads, bytesPerRead: sent / reads, serverCpuMsPerRead: ((after.cpuSeconds - before.cpuSeconds) * 1000) / reads };
}

/**
 * The watcher's own reads of one backend polled every `pollMs` (a clock of their own, so the window
 * is `reads` polls long without waiting it out), through readBackend and a FilterMemory as a monitor
 * holds them: the server's bytes and CPU per read over the window, and how many asked the histograms.
 */
async function measureCadence(server: PromVllm, reads: number, pollMs: number, everyMs: number): Promise<ReadCostResult["cadence"]> {
  const memory = new FilterMemory();
  const t0 = Date.now();
  const read = (i: number) => readBackend({ url: server.url, engine: "vllm" }, { timeoutMs: 10_000, filterMemory: memory, histogramsEveryMs: everyMs, now: () => t0 + i * pollMs });
  await read(0); // the backend's first read (FilterMemory "try"), outside the count
  const before = await server.stats();
  let bytes = 0;
  for (let i = 1; i <= reads; i++) {
    const r = await read(i);
    if (!r.metrics) throw new Error(`as shipped: read ${i}: ${r.outcome} ${r.error ?? ""}`);
    bytes += r.bytes ?? 0;
  }
  const after = await server.stats();
  const sent = (after.paths["/metrics/"]?.bytes ?? 0) - (before.paths["/metrics/"]?.bytes ?? 0);
  if (sent !== bytes) throw new Error(`as shipped: the server counted ${sent} bytes, this side ${bytes}`);
  if ((after.paths["/metrics"]?.requests ?? 0) !== (before.paths["/metrics"]?.requests ?? 0)) throw new Error("as shipped: the full /metrics was read");
  const withHistograms = (after.paths["/metrics/"]?.withBuckets ?? 0) - (before.paths["/metrics/"]?.withBuckets ?? 0);
  return {
    what: `as shipped: a poll every ${pollMs / 1000} s, the histograms every ${everyMs / 1000} s (mean of the window)`,
    path: "/metrics/",
    names: 0,
    reads,
    bytesPerRead: sent / reads,
    serverCpuMsPerRead: ((after.cpuSeconds - before.cpuSeconds) * 1000) / reads,
    pollSeconds: pollMs / 1000,
    everySeconds: everyMs / 1000,
    withHistograms,
  };
}

export async function runReadCostBench(opts: { quick: boolean }): Promise<ReadCostResult> {
  // A multiple of 6: whole 30 s windows of 5 s polls.
  const reads = opts.quick ? 120 : 420;
  const filtered = vllmAdapter.reads?.filtered;
  if (!filtered?.lean) throw new Error("the vLLM adapter has no filtered read with a lean part");
  const server = await startPromVllm("single");
  try {
    const version = debianVersion("python3-prometheus-client");
    const full = await measure(server, "full GET /metrics", "/metrics", reads);
    const whole = await measure(server, "whole filter GET /metrics/?name[]=... (the histograms too)", filtered.path, reads);
    const lean = await measure(server, "lean filter (no latency histograms)", filtered.lean.path, reads);
    const cadence = await measureCadence(server, reads, 5000, LATENCY_EVERY_MS);
    const floor = await measure(server, "floor: GET /health, an empty answer (not a read)", "/health", reads);
    const oneName = await measure(server, "one name: GET /metrics/?name[]=vllm:num_requests_running", `/metrics/?name[]=${encodeURIComponent("vllm:num_requests_running")}`, reads);
    return { fixture: path.basename(VLLM_FIXTURE), prometheusClient: version, reads, full, filtered: whole, lean, cadence, floor, oneName };
  } finally {
    await server.close();
  }
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d }) : "n/a");

export function readCostSection(r: ReadCostResult, measured = ""): string {
  const row = (x: ReadCostRow) =>
    `| ${x.what} | ${x.names || "-"} | ${f(x.bytesPerRead / 1024)} KB | ${f(r.full.bytesPerRead / x.bytesPerRead)}x | ${f(x.serverCpuMsPerRead, 2)} ms | ${f(r.full.serverCpuMsPerRead / x.serverCpuMsPerRead)}x |`;
  return `## 7. What one read costs the model server (vLLM)

${measured}

The real prometheus_client ${r.prometheusClient} (Debian's), single-process, serving a registry rebuilt from a real
vLLM scrape (\`${r.fixture}\`) the way vLLM mounts it (\`tests/support/prom-vllm.py\`), read ${r.reads} times each way,
back to back (\`bench/read-cost.ts\`), as stepwatch reads them (\`lib/net/http.ts\`: no \`Accept-Encoding\`, so not gzipped;
Prometheus asks for gzip: fewer bytes, more server CPU, not measured here). Bytes and CPU are the server's own (its \`/stats\`: bytes sent,
\`time.process_time()\`). The first three rows are one GET each, the same every time; "as shipped" is the watcher's
own read (\`readBackend\` with a backend's \`FilterMemory\`) polling every ${f(r.cadence.pollSeconds, 0)} s on a clock of its own for
${f(r.cadence.reads, 0)} polls (${f((r.cadence.reads * r.cadence.pollSeconds) / 60, 0)} minutes of polls): the whole filter once per \`latencyEverySeconds\`
(${f(r.cadence.everySeconds, 0)} s; ${f(r.cadence.withHistograms, 0)} of its ${f(r.cadence.reads, 0)} reads, counted by the server), the lean filter in between; its figures are the window's means.

| read | names asked | bytes per read | less than full | server CPU per read | less than full |
|---|---|---|---|---|---|
${row(r.full)}
${row(r.filtered)}
${row(r.lean)}
| **${r.cadence.what}** | ${r.filtered.names} / ${r.lean.names} | ${f(r.cadence.bytesPerRead / 1024)} KB | ${f(r.full.bytesPerRead / r.cadence.bytesPerRead)}x | ${f(r.cadence.serverCpuMsPerRead, 2)} ms | ${f(r.full.serverCpuMsPerRead / r.cadence.serverCpuMsPerRead)}x |
| ${r.floor.what} | - | 0 KB | - | ${f(r.floor.serverCpuMsPerRead, 2)} ms | ${f(r.full.serverCpuMsPerRead / r.floor.serverCpuMsPerRead)}x |
${r.oneName ? `${row(r.oneName)}\n` : ""}
The floor is what the server spends on any request (its HTTP handling), whatever it renders: no filter
can take a read's server CPU below it, so no choice of names can make a read more than the floor's ratio cheaper in CPU.
${r.oneName ? namesWithin10x(r, r.oneName) : ""}`;
}

/**
 * What 10x less server CPU than the full read would leave a read: the one-name read is
 * prometheus_client's app asked the least it can be, and each name after it costs about
 * (lean - one name) / (lean's names - 1).
 */
function namesWithin10x(r: ReadCostResult, one: ReadCostRow): string {
  const budget = r.full.serverCpuMsPerRead / 10;
  const perName = (r.lean.serverCpuMsPerRead - one.serverCpuMsPerRead) / Math.max(1, r.lean.names - 1);
  const most = budget < one.serverCpuMsPerRead ? 0 : 1 + Math.floor((budget - one.serverCpuMsPerRead) / Math.max(perName, 1e-9));
  return `One name costs the server ${f(one.serverCpuMsPerRead, 2)} ms (prometheus_client's app and a render of one family), and each further name
about ${f(perName, 3)} ms ((lean - one name) / ${r.lean.names - 1}). 10x less than the full read is ${f(budget, 2)} ms: a read that asked at most
${most} name${most === 1 ? "" : "s"} every time, against the ${r.lean.names} the lean filter asks (running, waiting and its reasons, KV usage, sleep, steps, tokens,
finished requests, preemptions, process start: what a state is judged by).
`;
}

runWhenMain(__filename, () => runReadCostBench({ quick: process.argv.includes("--quick") }));
