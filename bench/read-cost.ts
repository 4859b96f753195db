/**
 * Benchmark: what one read costs the model server (issue 30: "at least 10x less bytes and server
 * CPU for vLLM"). The real prometheus_client (tests/support/prom-vllm.py, single-process, a registry
 * rebuilt from a real vLLM 0.29 scrape) is read N times each way, back to back in one run:
 * - the full `GET /metrics` (what every read cost before, and what Prometheus scrapes);
 * - the filtered `GET /metrics/?name[]=...` stepwatch sends (the vLLM adapter's own path,
 *   lib/engines/vllm.ts: VLLM_SAMPLES, the latency histograms' buckets included);
 * - for comparison only, the same filter without the `_bucket` samples: what a read would cost if
 *   the latency histograms' buckets were not asked on every read (the adapter does not do this:
 *   the latency percentiles need them).
 * The bytes and the CPU are the server's own (its GET /stats: bytes sent per path and
 * time.process_time()), not estimated from this side.
 *
 * `npx tsx bench/read-cost.ts [--quick]` prints the result as JSON; `npm run bench -- --only reads`
 * puts it in bench/results.json and RESULTS.md.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { httpRequest } from "../lib/net/http";
import { vllmAdapter, VLLM_SAMPLES } from "../lib/engines/vllm";
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
  filtered: ReadCostRow;
  /** Not what stepwatch sends: the filter without the histograms' buckets, for "what would reach 10x". */
  withoutBuckets: ReadCostRow;
  /** GET /health (an empty answer): the server's CPU for any request at all, the floor of a read. */
  floor: ReadCostRow;
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

export async function runReadCostBench(opts: { quick: boolean }): Promise<ReadCostResult> {
  const reads = opts.quick ? 100 : 400;
  const filteredPath = vllmAdapter.reads?.filtered?.path;
  if (!filteredPath) throw new Error("the vLLM adapter has no filtered read");
  const noBuckets = `/metrics/?${[...VLLM_SAMPLES]
    .filter((n) => !n.endsWith("_bucket"))
    .map((n) => `name[]=${encodeURIComponent(n)}`)
    .join("&")}`;
  const server = await startPromVllm("single");
  try {
    const version = debianVersion("python3-prometheus-client");
    const full = await measure(server, "full GET /metrics", "/metrics", reads);
    const filtered = await measure(server, "filtered GET /metrics/?name[]=... (stepwatch)", filteredPath, reads);
    const withoutBuckets = await measure(server, "filtered, without the histograms' _bucket samples (not sent)", noBuckets, reads);
    const floor = await measure(server, "floor: GET /health, an empty answer (not a read)", "/health", reads);
    return { fixture: path.basename(VLLM_FIXTURE), prometheusClient: version, reads, full, filtered, withoutBuckets, floor };
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
\`time.process_time()\`). The last row is not what stepwatch sends: it is the filter without the latency
histograms' \`_bucket\` samples, to show what not asking the buckets on every read would save.

| read | names asked | bytes per read | less than full | server CPU per read | less than full |
|---|---|---|---|---|---|
${row(r.full)}
${row(r.filtered)}
${row(r.withoutBuckets)}
| ${r.floor.what} | - | 0 KB | - | ${f(r.floor.serverCpuMsPerRead, 2)} ms | - |

The floor is what the server spends on any request (its HTTP handling), whatever it renders: no filter
can take a read's server CPU below it.
`;
}

runWhenMain(__filename, () => runReadCostBench({ quick: process.argv.includes("--quick") }));
