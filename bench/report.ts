/**
 * bench/RESULTS.md from bench/results.json: pure (results in, markdown out), so the wording of
 * each goal's verdict lives in one place. A section that failed or did not run says so.
 */
import type { CostResult } from "./cost";
import type { DashboardResult } from "./dashboard";
import type { IncidentResult } from "./incident";
import type { LoadResult } from "./load";
import type { ScaleResult } from "./scale";
import type { ScaleRun } from "./scale-worker";
import type { StorageResult } from "./storage";

type Maybe<T> = T | { error: string } | undefined;

/** The measured sections of results.json, in report order. */
export const SECTION_KEYS = ["incident", "cost", "scale", "storage", "dashboard", "load"] as const;
export type SectionKey = (typeof SECTION_KEYS)[number];

/** Which run (and code) a section's numbers came from: a partial re-run keeps older sections. */
export interface SectionRun {
  startedAt: string;
  command: string;
  /** Short commit hash, "+changes" when the measured code differed from it. */
  commit: string;
  loadAverageAtStart?: number[];
  loadAverageAtEnd?: number[];
  /** What a reader should know about that run's code (written by hand in results.json). */
  note?: string;
}

export interface BenchResults {
  command: string;
  quick: boolean;
  startedAt: string;
  wallSeconds?: number;
  machine: {
    cpus: number;
    cpuModel: string;
    memoryGb: number;
    node: string;
    platform: string;
    loadAverageAtStart?: number[];
    loadAverageAtEnd?: number[];
  };
  incident?: Maybe<IncidentResult>;
  cost?: Maybe<CostResult>;
  scale?: Maybe<ScaleResult>;
  storage?: Maybe<StorageResult>;
  dashboard?: Maybe<DashboardResult>;
  load?: Maybe<LoadResult>;
  sections?: Partial<Record<SectionKey, SectionRun>>;
}

function ok<T>(x: Maybe<T>): T | null {
  return x && !(typeof x === "object" && x !== null && "error" in x) ? (x as T) : null;
}

function why<T>(x: Maybe<T>): string {
  if (x === undefined) return "not run";
  if (typeof x === "object" && x !== null && "error" in x) return `failed: ${(x as { error: string }).error.split("\n")[0]}`;
  return "";
}

const n = (x: number, d = 0) => (Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d }) : "n/a");
const kb = (b: number) => `${n(b / 1024, 1)} KB`;
const mb = (b: number) => `${n(b / 1e6, 2)} MB`;
const sec = (ms: number | null | undefined) => (ms === null || ms === undefined ? "not detected" : `${n(ms / 1000, 0)} s`);

export interface Goal {
  goal: string;
  measured: string;
  /** null: could not be measured in this run. */
  met: boolean | null;
  note: string;
}

export function goals(r: BenchResults): Goal[] {
  const inc = ok(r.incident);
  const cost = ok(r.cost);
  const scale = ok(r.scale);
  const st = ok(r.storage);
  const dash = ok(r.dashboard);
  const out: Goal[] = [];

  // 1. Zero slot-taking requests to a busy server.
  if (inc && cost) {
    const busy = inc.day.stepwatch.probesToBusyServer + cost.busy.stepwatch.slotRequestsToBusyServer;
    out.push({
      goal: "Zero slot-taking requests to a busy server",
      measured: `stepwatch ${busy} (replay: ${inc.day.stepwatch.probesToBusyServer} of ${inc.day.stepwatch.probes} probes; real HTTP: ${cost.busy.stepwatch.slotRequestsToBusyServer} in ${cost.busy.stepwatch.checks} checks); old watchdog ${inc.day.old.chatRequestsToBusyServer} of ${inc.day.old.chatRequests} chat requests`,
      met: busy === 0,
      note: busy === 0 ? "Probes were sent only with nothing running or waiting." : "A probe reached a busy server: see lib/check/classify.ts shouldProbe.",
    });
  } else out.push({ goal: "Zero slot-taking requests to a busy server", measured: why(r.incident) || why(r.cost), met: null, note: "" });

  // 2. Zero false restarts.
  if (inc) {
    const recs = inc.day.stepwatch.restartRecommendations;
    out.push({
      goal: "Zero false restarts in the replay (vs the old watchdog)",
      measured: `stepwatch ${recs} restart recommendations; old watchdogs ${inc.day.old.restarts} restarts, ${n(inc.day.old.downtimeMinutes)} min down`,
      met: recs === 0,
      note: recs === 0 ? "The server was never hung during the replayed day, so every old restart was a false one." : `stepwatch recommended a restart of a healthy server: ${inc.day.stepwatch.recommendationStates.join(" | ")}`,
    });
    const d = inc.hang.stepwatch.detectionMs;
    out.push({
      goal: "A real hang detected within stuckAfterSeconds + 2 intervals",
      measured: `stepwatch ${sec(d)} (limit ${sec(inc.hang.goalMs)}); old watchdog ${sec(inc.hang.old.detectionMs ?? null)}`,
      met: d !== null && d !== undefined && d <= inc.hang.goalMs,
      note: d !== null && d !== undefined && d <= inc.hang.goalMs ? "" : "The classifier did not call the hang stuck in time: see the reasons in results.json.",
    });
  } else {
    out.push({ goal: "Zero false restarts in the replay", measured: why(r.incident), met: null, note: "" });
    out.push({ goal: "A real hang detected within stuckAfterSeconds + 2 intervals", measured: why(r.incident), met: null, note: "" });
  }

  // 4. 1000 backends at 5 s.
  const big = scale?.runs.find((x): x is ScaleRun => !("error" in x) && x.backends === 1000 && x.intervalSeconds === 5);
  if (big) {
    const lagOk = big.pollLagMs.p99 < 250;
    const cpuOk = big.cpuCores < 0.25;
    const perRead = (big.cpuCores * big.measureSeconds * 1000) / Math.max(1, big.reads);
    const notes: string[] = [];
    if (!cpuOk)
      notes.push(
        `CPU: ${n(perRead, 2)} ms of watcher CPU (user + system) per read. A CPU profile of the watcher at this size (\`node --cpu-prof\` on bench/scale-worker.ts, 1000 backends at 5 s, 20 s after the warm-up; one-off, 2026-11-30, commit 12ebe7f) puts about 38% of its busy time in connections (undici 30%, node:net 8%): the simulator, like vLLM's uvicorn by default, keeps an idle connection 5 s and undici gives an idle socket the server's hint less 2 s, so with reads 5 s apart nearly every read opens a new TCP connection, and undici builds two Error objects (idle timeout, client destroyed) for each one it drops; about 22% in the Prometheus parser and the vLLM extraction (every line of the ~${cost ? kb(cost.metricsBodyBytes.oneEngine) : "35 KB"} exposition, histogram buckets included, for a dozen series); about 11% in drizzle and SQLite (SQL built on every poll, the sample inserts); 7% in garbage collection. Spreading the reads over the interval removed the lag, not the work, which is the same per read. Fix: parse only the families stepwatch reads (a prefix check per line before any label parsing); prepared statements instead of a drizzle query per poll; and for the connections, either backends that keep idle connections longer than the interval plus 2 s (uvicorn --timeout-keep-alive) or an interval under 3 s; or accept ~${n(big.cpuCores, 2)} cores for 1000 backends.`,
      );
    if (!lagOk)
      notes.push(
        `Lag: reads are spread over the interval (lib/watcher offsetMs), so a late read waits behind work on the event loop: see the event-loop delay column. Fix: the CPU items above, which shorten that work.`,
      );
    out.push({
      goal: "1000 backends at 5 s: p99 poll lag < 250 ms and < 1/4 core",
      measured: `p99 lag ${n(big.pollLagMs.p99)} ms, CPU ${n(big.cpuCores, 2)} cores, RSS ${n(big.rssMb.max)} MB`,
      met: lagOk && cpuOk,
      note: notes.join(" "),
    });
  } else out.push({ goal: "1000 backends at 5 s: p99 poll lag < 250 ms and < 1/4 core", measured: why(r.scale) || "the 1000-backend run failed", met: null, note: "" });

  // 5. /api/fleet p99.
  const load = ok(r.load);
  if (dash) {
    const p99 = dash.fleet.fiftyClients.p99Ms;
    const met = p99 < 20;
    out.push({
      goal: "GET /api/fleet p99 < 20 ms at 100 backends (50 concurrent clients)",
      measured: `p99 ${n(p99, 1)} ms under 50 clients (${n(dash.fleet.fiftyClients.requestsPerSecond)} req/s); 1 client p99 ${n(dash.fleet.oneClient.p99Ms, 1)} ms`,
      met,
      note: met
        ? ""
        : `The 50 clients send back to back, with no pause (${n(dash.fleet.fiftyClients.requestsPerSecond)} req/s, as many as ~${n(Math.round((dash.fleet.fiftyClients.requestsPerSecond * 2) / 100) * 100)} dashboards refreshing every 2 s), so a request waits for the ones before it in one Node process: each answer (${kb(dash.fleet.fiftyClients.responseBytes)} of JSON) costs ~${n(1000 / Math.max(1, dash.fleet.fiftyClients.requestsPerSecond), 2)} ms of server time, so 50 in line take ~${n((50 * 1000) / Math.max(1, dash.fleet.fiftyClients.requestsPerSecond))} ms, and the p99 adds the moments when the app's own watcher or GC holds the loop. The JSON is already built once per 250 ms for all clients (lib/api/fleet.ts getFleetJson); what is left per request is Next's routing and encoding and writing the answer. One client's p99 is ${n(dash.fleet.oneClient.p99Ms, 1)} ms, and 200 dashboards at their real pace (section 5) see ${load ? `p99 ${n(load.loaded.latencyMs.p99, 1)} ms` : "the load section's latency"}. Fix, for p99 under 20 ms with 50 in line (under ~0.4 ms each): answer from a pre-encoded Buffer (the cached string is encoded to UTF-8 again on every request), give the snapshot an ETag so a dashboard that already has it gets an empty 304, and leave the sparkline points out of the list answer.`,
    });
  } else out.push({ goal: "GET /api/fleet p99 < 20 ms at 100 backends", measured: why(r.dashboard), met: null, note: "" });

  // 6. DB size.
  if (st) {
    const met = st.rollupBytesPerBackendPerDay < 2e6;
    out.push({
      goal: "Under 2 MB of SQLite per backend per day (after rollup)",
      measured: `${mb(st.rollupBytesPerBackendPerDay)} per day once rolled up; ${mb(st.rawBytesPerBackendPerDay)} per day while raw (the last ${48} h)`,
      met,
      note:
        st.rawBytesPerBackendPerDay > 2e6
          ? `Raw samples cost ${n(st.rawBytesPerSample)} B each (with indexes), mostly the Reading kept as JSON so the classifier can be re-fed after a restart; they are kept 48 h, so a backend's raw window holds ~${mb((st.rawBytesPerBackendPerDay * 48) / 24)}. If that matters: store the Reading JSON only for the last few minutes the classifier needs (the columns already hold what the charts read), or shorten retention.rawHours.`
          : "",
    });
  } else out.push({ goal: "Under 2 MB of SQLite per backend per day", measured: why(r.storage), met: null, note: "" });

  // 7. Load: 200 dashboards while the watcher works.
  const loadGoal = `No error with ${load?.clients ?? 200} clients polling /api/fleet every 2 s (100 backends watched); poll lag p99 < 250 ms meanwhile`;
  if (load) out.push(loadGoalOf(load, loadGoal));
  else out.push({ goal: loadGoal, measured: why(r.load), met: null, note: "" });
  return out;
}

function loadGoalOf(l: LoadResult, goal: string): Goal {
  const L = l.loaded;
  const errorsOk = L.errors === 0;
  const lagOk = L.pollLagMs.p99 < 250;
  const notes: string[] = [];
  if (!errorsOk)
    notes.push(
      `Errors: ${Object.entries(L.errorKinds)
        .map(([k, v]) => `${n(v)} ${k}`)
        .join(", ")}. A request past ${10} s counts as an error; next start answers every client from one event loop, so a backlog there shows up as timeouts first.`,
    );
  if (!lagOk)
    notes.push(
      `Lag: the watcher runs on the same event loop as the route handlers in next-server; with ${n(L.requestsPerSecond)} req/s (app CPU ${L.appCpuCores === null ? "n/a" : `${n(L.appCpuCores, 2)} cores`}, simulators ${L.simulatorCpuCores === null ? "n/a" : `${n(L.simulatorCpuCores, 2)}`}, clients ${n(L.clientsCpuCores, 2)} on ${2} cores) a read's timer waits behind requests being answered; quiet, the p99 is ${n(l.quiet.pollLagMs.p99)} ms. Fix: run the watcher in a worker thread (its own event loop; the fleet snapshot posted to the main thread), or answer /api/fleet from a pre-serialized buffer so each request costs only the write.`,
    );
  return {
    goal,
    measured: `${n(L.requests)} requests in ${n(L.seconds)} s, ${n(L.errors)} errors; latency p50 ${n(L.latencyMs.p50, 1)} / p99 ${n(L.latencyMs.p99, 1)} ms; poll lag p99 ${n(L.pollLagMs.p99)} ms (quiet ${n(l.quiet.pollLagMs.p99)} ms), max ${n(L.pollLagMs.max)} ms`,
    met: errorsOk && lagOk,
    note: notes.join(" "),
  };
}

const verdict = (g: Goal) => (g.met === null ? "not measured" : g.met ? "**met**" : "**missed**");

function incidentSection(inc: IncidentResult): string {
  const o = inc.day.old;
  const s = inc.day.stepwatch;
  const p = inc.params;
  const rows = [
    ["requests that took or waited for a slot", `${n(o.chatRequests)} chat requests (${n(o.chatRequestsToBusyServer)} to a busy server, ${n(o.chatRequestsThatWaitedForASlot)} queued for a slot)`, `${n(s.slotRequests)} one-token probes, ${n(s.probesToBusyServer)} to a busy server`],
    ["failed checks", n(o.failedChecks), "none (reads are never refused)"],
    ["restarts", `${n(o.restarts)} (${Object.entries(o.restartsBy).map(([k, v]) => `${v} by ${k}`).join(", ") || "none"})`, `${n(s.restartRecommendations)} recommended (none without an operator)`],
    ["minutes of model downtime", n(o.downtimeMinutes), n(s.downtimeMinutes)],
    ["batch requests failed (HTTP 500 on restart)", n(o.batch.failed), n(s.batch.failed)],
    ["batch requests completed", n(o.batch.completed), n(s.batch.completed)],
    ["other traffic", "-", `${n(s.reads)} reads of /metrics, ${mb(s.bytesRead)} in all (${kb(s.bytesRead / Math.max(1, s.reads))} each)`],
    [
      "real hang: detected after",
      `${sec(inc.hang.old.detectionMs ?? null)} (its restart)`,
      `${sec(inc.hang.stepwatch.detectionMs ?? null)} (first "stuck"; limit ${sec(inc.hang.goalMs)})`,
    ],
  ];
  return `## 1. The incident, replayed (${inc.simulatedHours} simulated hours in ${n(inc.wallMs / 1000, 1)} s)

| | old watchdogs | stepwatch |
|---|---|---|
${rows.map((r) => `| ${r.join(" | ")} |`).join("\n")}

Setup: one simulated vLLM engine with ${p.engine.maxNumSeqs} slots (${p.engine.singleRequestTokensPerSecond} tok/s alone,
${p.engine.totalTokensPerSecondAtLimit} tok/s in total at the limit). A seeded batch job (the same in both worlds) keeps
${p.batch.concurrency[0]} to ${p.batch.concurrency[1]} long requests in flight (prompts ${p.batch.promptTokens.join("-")} tokens, ${p.batch.maxTokens.join("-")} output
tokens, so minutes each) in stretches of ${p.batch.activeHours.join("-")} h with ${p.batch.idleMinutes.join("-")} min idle gaps: ${n(inc.scheduleSummary.busyMinutes)} busy
minutes, ${n(inc.scheduleSummary.minutesAtOrAboveSlots)} of them with every slot taken, ${n(inc.scheduleSummary.idleMinutes)} idle. It retries ${p.batch.retryAfterSeconds} s after
a failure. Old watchdog #1: a chat request (${p.oldWatchdog.maxTokens} tokens) every ${p.oldWatchdog.intervalSeconds / 60} min, ${p.oldWatchdog.timeoutSeconds} s to answer,
restart after ${p.oldWatchdog.failuresToRestart} failures in a row (connection refused counts). Old watchdog #2: every
${p.errorWatchdog.intervalSeconds / 60} min, restart if it saw ${p.errorWatchdog.errorsToRestart}+ HTTP 500s in the last ${p.errorWatchdog.windowSeconds / 60} min. A restart answers every
in-flight request with 500 and refuses connections for ${p.restartDownSeconds / 60} min (weights reloading). stepwatch polls
every ${p.stepwatch.pollIntervalSeconds} s with stuckAfterSeconds ${p.stepwatch.stuckAfterSeconds}. The hang: ${p.hang.concurrency} batch requests running, the engine
stops stepping at minute ${p.hang.atMinutes}.

What was real and what was simulated:
- **Real stepwatch code**: the watcher loop (\`lib/watcher\` startWatcher, on an injected virtual
  LoopClock), \`observe\` -> \`readBackend\`/\`probeBackend\` -> \`lib/net/http.ts\` (undici) ->
  \`parseVllmMetrics\` -> \`classify\`, and its SQLite store (a temp file); restart
  recommendations are counted from the transitions it stored.
- **Real simulator code**: the engine model and the \`/metrics\` text (\`lib/sim/model.ts\`,
  \`lib/sim/metrics.ts\`), rendered at each read.
- **Simulated**: the clock (virtual; clients act every simulated second), the socket (an undici
  MockAgent answers stepwatch's requests in-process instead of TCP: at 1,000x time compression
  the simulator's 50 ms HTTP tick would be 50 s of engine time), and the clients: the batch job
  and both old watchdogs act on the engine model directly; they are models of the incident's
  scripts, not stepwatch code. A probe that would have had to wait for a slot would be answered
  504 at once (it never happened).
`;
}

function costSection(c: CostResult): string {
  const row = (name: string, k: CostResult["busy"]["stepwatch"]) =>
    `| ${name} | ${n(k.httpRequestsPerCheck, 2)} | ${kb(k.bytesReadPerCheck)} | ${n(k.slotRequestsPerCheck, 2)} | ${n(k.wallMsPerCheck, 1)} | ${n(k.cpuMsPerCheck, 2)} | ${k.outcome} |`;
  return `## 2. Cost of one check (real HTTP against the simulator)

Server: ${c.server.engines} engine, ${c.server.maxNumSeqs} slots; "busy" = ${c.server.busyLoad} long requests (every slot taken, one waiting).
Counts are the simulator's own log of what it received. The simulator runs ${c.timeScale}x engine time, so the
old watchdog's 45 s deadline is ${45 / c.timeScale} s of wall time. The simulator runs in the checking process here, so the
CPU column includes rendering \`/metrics\` (and, for the old watchdog, 4.5 s of the engine serving its load); the
watcher's own CPU per read is in section 3, where the simulators run in another process.

| check | HTTP requests | bytes read | requests taking a slot | wall ms | CPU ms (checker + simulator, one process) | verdict / outcome |
|---|---|---|---|---|---|---|
${row("stepwatch, busy server (per check)", c.busy.stepwatch)}
${row("old watchdog, busy server", c.busy.oldWatchdog)}
${row("stepwatch, idle server, first check (probes)", c.idle.stepwatchFirst)}
${row(`stepwatch, idle server, ${c.idle.stepwatchSteady.checks} checks 5 s apart (per check)`, c.idle.stepwatchSteady)}
${row("old watchdog, idle server", c.idle.oldWatchdog)}

\`/metrics\` of the simulator: ${kb(c.metricsBodyBytes.oneEngine)} (1 engine), ${kb(c.metricsBodyBytes.eightEngines)} (8 data-parallel engines).
Parse time (bench/parse.ts) of a real vLLM 0.29 scrape expanded to 8 engines (${kb(c.parse.bytes)}, ${n(c.parse.samples)} samples):
ours ${n(c.parse.ours.medianMs, 2)} ms, parse-prometheus-text-format ${n(c.parse.other.medianMs, 2)} ms: **ours is ${n(c.parse.ratio, 2)}x faster**.
On junk input it stays linear: ${mb(c.parse.junk.smallBytes)} in ${n(c.parse.junk.smallMs, 1)} ms, ${mb(c.parse.junk.largeBytes)} in ${n(c.parse.junk.largeMs, 1)} ms.
`;
}

function scaleSection(s: ScaleResult): string {
  const rows = s.runs.map((r) =>
    "error" in r
      ? `| ${r.backends} | ${r.intervalSeconds} s | failed: ${r.error.split("\n")[0]} | | | | | |`
      : `| ${r.backends} | ${r.intervalSeconds} s | ${n(r.reads)} / ${n(r.expectedReads)} | ${n(r.cpuCores, 3)} | ${n(r.rssMb.max)} | ${n(r.pollLagMs.p50)} / ${n(r.pollLagMs.p99)} | ${n(r.readLatencyMs.p50)} / ${n(r.readLatencyMs.p99)} | ${n(r.eventLoopDelayMs.p99, 1)} |`,
  );
  return `## 3. Scale of one watcher

${s.simulatorProcess}; each row is a fresh watcher process (\`bench/scale-worker.ts\`: the real
\`startWatcher\` with a temp SQLite file, polling the first N simulators), measured after a warm-up.
Poll lag = how late a read starts against its slot (runEvery's schedule), from a thin wrapper
around the LoopClock and \`observe\`. The simulators are idle, so each backend is also probed once
per idleProbeSeconds (60 s). Both processes share the 2 cores: at 1 s x 1000 the simulator process
is saturated, which shows up as read latency, and reads that take longer than the interval make
runEvery skip slots (fewer reads done than due) rather than pile up.

| backends | interval | reads (done / due) | CPU (cores) | RSS max MB | poll lag p50 / p99 ms | read latency p50 / p99 ms | event-loop delay p99 ms |
|---|---|---|---|---|---|---|---|
${rows.join("\n")}
`;
}

function storageSection(st: StorageResult): string {
  const h = st.history;
  return `## 3b. SQLite per backend per day

From the replay's own database (the real watcher's rows: ${n(st.samples)} samples of one backend, ${st.pollIntervalSeconds} s apart,
${st.sourceHours} h), sized with SQLite's dbstat (tables and their indexes), scaled to a day:

| | bytes per backend per day |
|---|---|
| raw samples (kept retention.rawHours = 48 h), ${n(st.rawBytesPerSample)} B per sample | ${mb(st.rawBytesPerBackendPerDay)} |
| raw samples at a 1 s interval | ${mb(st.rawBytesPerBackendPerDayAt1s)} |
| per-minute rollups after the real retention job (kept 90 days) | ${mb(st.rollupBytesPerBackendPerDay)} |
| state transitions (kept forever) | ${mb(st.transitionsBytesPerDay)} |
| steady state per backend (48 h raw + 90 days of rollups) | ${mb(st.steadyStateBytesPerBackend)} in all |

## 4b. History query (7 days of one backend)

${n(h.rows.raw)} raw rows (last 48 h) + ${n(h.rows.rollupMinutes)} minute rollups, the real \`historyOf\` (what
\`GET /api/backends/{id}/history\` returns), in-process:

| range | points | p50 ms | p99 ms |
|---|---|---|---|
| 7 days | ${n(h.sevenDaysMs.points)} | ${n(h.sevenDaysMs.p50, 2)} | ${n(h.sevenDaysMs.p99, 2)} |
| 24 hours | ${n(h.oneDayMs.points)} | ${n(h.oneDayMs.p50, 2)} | ${n(h.oneDayMs.p99, 2)} |
| 1 hour | ${n(h.oneHourMs.points)} | ${n(h.oneHourMs.p50, 2)} | ${n(h.oneHourMs.p99, 2)} |
`;
}

function dashboardSection(d: DashboardResult): string {
  const f = d.fleet;
  const l = (name: string, x: DashboardResult["fleet"]["oneClient"]) =>
    `| ${name} | ${x.clients} | ${n(x.requests)} in ${x.seconds} s | ${n(x.requestsPerSecond)} | ${n(x.p50Ms, 1)} | ${n(x.p99Ms, 1)} | ${n(x.maxMs, 1)} | ${x.errors} | ${kb(x.responseBytes)} |`;
  const page =
    "error" in d.page
      ? `Fleet page in Chromium: failed: ${d.page.error}`
      : `Fleet page in Chromium ${d.page.chromium} (Playwright, headless): navigation to all ${d.backends} cards in the DOM
**${n(d.page.cold.allCardsMs)} ms** cold (first load of the browser), **${n(d.page.warm.allCardsMsP50)} ms** warm (p50 of ${d.page.warm.runs}, max ${n(d.page.warm.allCardsMsMax)});
load event ${n(d.page.cold.loadMs)} ms cold / ${n(d.page.warm.loadMsP50)} ms warm; ${kb(d.page.cold.transferBytes)} transferred cold.`;
  return `## 4. Dashboard (\`next start\`, production build: ${d.build})

The server's own watcher polls ${d.backends} simulated backends every 5 s while it answers.

| request | clients | requests | req/s | p50 ms | p99 ms | max ms | errors | answer |
|---|---|---|---|---|---|---|---|---|
${l("GET /api/fleet", f.oneClient)}
${l("GET /api/fleet", f.fiftyClients)}
${l(`GET /api/backends/b000/history, 7 days (${d.history.sevenDays.points} points)`, d.history.sevenDays)}
${l(`GET /api/backends/b000/history, 1 hour (${d.history.oneHour.points} points)`, d.history.oneHour)}

${page}

next-server RSS at the end: ${d.nextServerRssMb === null ? "n/a" : `${n(d.nextServerRssMb)} MB`}.
`;
}

function loadSection(l: LoadResult): string {
  const q = l.quiet;
  const L = l.loaded;
  const cores = (x: number | null) => (x === null ? "n/a" : n(x, 3));
  const row = (name: string, p: LoadResult["quiet"], clients: string) =>
    `| ${name} | ${clients} | ${n(p.seconds, 0)} s | ${n(p.reads)} / ${n(p.readsDue)} | ${n(p.pollLagMs.p50)} / ${n(p.pollLagMs.p95)} / ${n(p.pollLagMs.p99)} / ${n(p.pollLagMs.max)} | ${n(p.readingAgeMs.p50)} / ${n(p.readingAgeMs.p95)} / ${n(p.readingAgeMs.max)} | ${cores(p.appCpuCores)} | ${cores(p.simulatorCpuCores)} |`;
  return `## 5. Load: ${l.clients} dashboards while the watcher works (\`next start\`, production build: ${l.build})

The app's watcher polls ${l.backends} simulated backends (one simulator child process) every ${l.pollIntervalSeconds} s. First a quiet phase (no
clients) as the comparison, then ${l.clients} clients each GET \`/api/fleet\` and wait ${l.clientIntervalSeconds} s after the answer (what the
dashboard's SWR refreshInterval does), their first requests spread over ${l.clientIntervalSeconds} s, each on its own keep-alive connection.
Poll lag is measured from outside: \`lastReadAt\` is when a read started, a backend's reads are due exactly one
interval apart (runEvery's grid), and a sampler reads the fleet 4 times a second, so every read is seen; a read's lag is
how far past the grid it started, relative to that backend's most punctual read (bench/load.ts \`scheduleLags\`).
Reading age = generatedAt - lastReadAt over every backend of every sample (at most one interval plus the lag when all is well).

| phase | clients | length | reads seen / due | poll lag p50 / p95 / p99 / max ms | reading age p50 / p95 / max ms | app CPU (cores) | simulator CPU |
|---|---|---|---|---|---|---|---|
${row("quiet", q, "0")}
${row("loaded", L, String(l.clients))}

Under load: **${n(L.requests)} requests** (${n(L.requestsPerSecond, 1)} req/s), **${n(L.errors)} errors**${
    L.errors ? ` (${Object.entries(L.errorKinds).map(([k, v]) => `${n(v)} ${k}`).join(", ")})` : ""
  }; latency p50 ${n(L.latencyMs.p50, 1)} / p95 ${n(L.latencyMs.p95, 1)} / p99 ${n(L.latencyMs.p99, 1)} / max ${n(L.latencyMs.max, 1)} ms;
answers of ${kb(L.responseBytes)}. The clients' own process used ${n(L.clientsCpuCores, 2)} cores (it shares the ${2} cores with the app and the simulators).
next-server RSS at the end: ${l.appRssMb === null ? "n/a" : `${n(l.appRssMb)} MB`}.
`;
}

function provenance(r: BenchResults): string {
  const sections = r.sections ?? {};
  const rows = SECTION_KEYS.filter((k) => r[k] !== undefined).map((k) => {
    const s = sections[k];
    return s
      ? `| ${k} | \`${s.command}\` | ${s.startedAt} | ${s.commit}${s.note ? `: ${s.note}` : ""} | ${s.loadAverageAtStart?.join(" / ") ?? "n/a"} -> ${s.loadAverageAtEnd?.join(" / ") ?? "n/a"} |`
      : `| ${k} | \`${r.command}\` | ${r.startedAt} | not recorded | |`;
  });
  return `| section | command | run started | commit measured | load average 1/5/15 min, start -> end |
|---|---|---|---|---|
${rows.join("\n")}`;
}

export function renderReport(r: BenchResults): string {
  const g = goals(r);
  const inc = ok(r.incident);
  const cost = ok(r.cost);
  const scale = ok(r.scale);
  const st = ok(r.storage);
  const dash = ok(r.dashboard);
  const parts = [
    `# stepwatch benchmarks

Reproduce: \`npm run bench\` (the full set, about 8 minutes here) or \`npm run bench -- --quick\` (fewer and
shorter runs, under 2 minutes plus a \`next build\` when .next is missing or stale); \`npm run bench -- --only scale,load\`
re-measures some sections and keeps the others. Latest run: \`${r.command}\`, ${r.startedAt}${r.wallSeconds !== undefined ? `, ${r.wallSeconds} s` : ""}${r.quick ? ", **quick mode** (fewer and shorter runs)" : ""}.
Machine: ${r.machine.cpus} cores (${r.machine.cpuModel}), ${r.machine.memoryGb} GB, Node ${r.machine.node}, ${r.machine.platform}.
Anything else running shares the 2 cores, and the timings move with it: the load average says how much there was.
Where each section's numbers come from:

${provenance(r)}

All traffic went to servers the benchmark started on 127.0.0.1. Raw numbers: \`bench/results.json\`.
Tests never assert these timings; this file reports them.

## Goals

| goal | measured | verdict |
|---|---|---|
${g.map((x) => `| ${x.goal} | ${x.measured} | ${verdict(x)} |`).join("\n")}
${g
  .filter((x) => x.met === false && x.note)
  .map((x) => `\n**${x.goal}: why missed, and the fix.** ${x.note}`)
  .join("\n")}
`,
    inc ? incidentSection(inc) : `## 1. The incident, replayed\n\n${why(r.incident)}\n`,
    cost ? costSection(cost) : `## 2. Cost of one check\n\n${why(r.cost)}\n`,
    scale ? scaleSection(scale) : `## 3. Scale of one watcher\n\n${why(r.scale)}\n`,
    st ? storageSection(st) : `## 3b. SQLite per backend per day\n\n${why(r.storage)}\n`,
    dash ? dashboardSection(dash) : `## 4. Dashboard\n\n${why(r.dashboard)}\n`,
    ok(r.load) ? loadSection(ok(r.load)!) : `## 5. Load: 200 dashboards while the watcher works\n\n${why(r.load)}\n`,
  ];
  return parts.join("\n");
}
