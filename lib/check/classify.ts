/**
 * The classifier: readings in, a verdict out. Pure: no I/O, no clock of its own (`now` is passed
 * in), no mutable counters. Every debounce ("two waits", "two refused reads", "probe failed twice")
 * is computed from the readings handed in, so a restart of stepwatch that reloads its history
 * decides exactly as before. The rules are the state table of docs/states.md; each one that fires leaves a
 * reason a person can read.
 */
import { countOf } from "./caps";
import { STATE_INFO, restartRecommended, type BackendState } from "./states";
import type { VllmMetrics } from "../metrics/vllm";
import type { PendingRestart, Rates, Reading, Thresholds, Verdict } from "./types";

export interface ClassifyInput {
  /** Earlier readings of this backend, oldest first, not including `reading`. */
  history: Reading[];
  reading: Reading;
  thresholds: Thresholds;
  now: number;
  pendingRestart?: PendingRestart | null;
}

type Judgement = { state: BackendState; reasons: string[] };

export function classify(input: ClassifyInput): Verdict {
  const all = [...input.history, input.reading];
  const rates = ratesOf(all);
  const core = judge(all, input.thresholds);
  const pending = input.pendingRestart;
  if (!pending) return verdict(core, rates, all);

  const since = secondsBetween(pending.requestedAt, input.now);
  const newProcess = newProcessSince(all, pending);
  if (newProcess && (core.state === "idle" || core.state === "busy")) {
    return {
      ...verdict(core, rates, all),
      recovered: true,
      reasons: [`restart recovered: a new process is serving ${since} after the restart was asked for`, ...core.reasons],
    };
  }
  const waiting = newProcess
    ? `restart asked for ${since} ago: a new process is up, not yet shown serving`
    : `restart asked for ${since} ago: waiting for a new process`;
  return verdict({ state: "restarting", reasons: [waiting, ...core.reasons] }, rates, all);
}

/**
 * Whether this read should be followed by the tiny probe. Only ever with nothing running and
 * nothing waiting: a probe sent to a server with work would queue behind the very load it is
 * judging (the incident). Otherwise only when the idle state needs (re)confirming.
 */
export function shouldProbe(input: ClassifyInput): boolean {
  const cur = input.reading;
  const m = cur.metrics;
  if (!m || m.running > 0 || m.waiting > 0) return false;
  const all = [...input.history, cur];
  if (input.pendingRestart && !newProcessSince(all, input.pendingRestart)) return false;

  const earlier = currentProcess(all).slice(0, -1);
  const probes = earlier.filter((r) => r.probe);
  const last = probes.at(-1);
  if (!last?.probe) return true; // this process has never answered a probe
  const failedInARow = trailingFailedProbes(probes);
  const age = input.now - last.probe.at;
  // One failure is re-checked at once ("two consecutive reads"); after that, a stuck idle engine
  // is asked again only every idleProbeSeconds, not hammered on every poll.
  if (failedInARow === 1) return true;
  return age >= input.thresholds.idleProbeSeconds * 1000;
}

function judge(all: Reading[], t: Thresholds): Judgement {
  const cur = all[all.length - 1];
  if (!cur.metrics) return judgeFailedRead(all, t);

  const segment = currentProcess(all);
  const previousProcess = lastWithMetrics(all.slice(0, all.length - segment.length));
  // Until the new process shows it serves (progress or an answered probe), it is "starting".
  const unproven = previousProcess !== undefined && !servedInSegment(segment);
  const restartNote =
    previousProcess && segment.length === 1 ? [describeRestart(previousProcess.metrics!, cur.metrics)] : [];
  const m = cur.metrics;

  if (m.running === 0 && m.waiting === 0) return judgeNoWork(segment, unproven, restartNote, t);

  const prev = segment.at(-2);
  if (prev && progressed(prev.metrics!, m)) {
    return { state: "busy", reasons: [...restartNote, `${load(m)}; ${describeProgress(prev, cur)}`] };
  }
  if (unproven) {
    return { state: "starting", reasons: [...restartNote, `${load(m)}; no progress yet from the new process`] };
  }
  if (!prev) return { state: "unknown", reasons: [`first read: ${load(m)}; progress needs a second read`] };

  const base = flatBase(segment);
  const waits = segment.length - 1 - base;
  const flatFor = (cur.at - segment[base].at) / 1000;
  if (waits === 0) {
    // Work arrived after an idle read: the first wait that counts towards "stuck" starts now.
    return { state: "stalled", reasons: [`${load(m)}: work arrived since the last read, no progress yet`] };
  }
  if (!flatIsEvidence(segment.slice(base))) {
    // "No progress" would be a guess, and a restart needs evidence: garbage metrics are never "stuck".
    return {
      state: "unknown",
      reasons: [`${load(m)}; progress cannot be read: engine steps and tokens are not readable at both ends of the last ${fmtSeconds(flatFor)}`],
    };
  }
  const evidence = `${load(m)}, 0 new steps in ${fmtSeconds(flatFor)} across ${waits + 1} reads; ${describeFlat(m)}`;
  const queuedOnly = m.running === 0 ? ["queued requests are not being scheduled (a known vLLM hang pattern, not idle)"] : [];
  if (waits >= 2 && flatFor >= t.stuckAfterSeconds) {
    return { state: "stuck", reasons: [evidence, ...queuedOnly, `no progress across ${waits} waits and at least ${t.stuckAfterSeconds} s`] };
  }
  const need = `would be called stuck after 2 waits and ${t.stuckAfterSeconds} s without progress`;
  return { state: "stalled", reasons: [evidence, ...queuedOnly, need] };
}

/**
 * Walk back over the reads that all had work and showed no progress across them; the index in
 * `segment` the flat run is measured from. The whole window is compared, not neighbours only: a
 * scrape that hid a family (null) must not turn "steps 10 -> (hidden) -> 20" into two flat waits.
 */
function flatBase(segment: Reading[]): number {
  let base = segment.length - 1;
  while (base > 0) {
    const earlier = segment[base - 1].metrics!;
    if (!(earlier.running > 0 || earlier.waiting > 0)) break;
    if (progressIn(segment.slice(base - 1))) break;
    base--;
  }
  return base;
}

/**
 * The reading a hang in progress is measured from (the first of the reads with work and no
 * progress since), or null when the newest read shows no such run. The watcher keeps it when it
 * trims its history, so "0 new steps in N s" keeps growing with the hang past the window.
 */
export function flatRunStart(all: Reading[]): Reading | null {
  const segment = currentProcess(all);
  const m = segment.at(-1)?.metrics;
  if (!m || (m.running === 0 && m.waiting === 0)) return null;
  const base = flatBase(segment);
  return base < segment.length - 1 ? segment[base] : null;
}

function judgeNoWork(segment: Reading[], unproven: boolean, restartNote: string[], t: Thresholds): Judgement {
  const cur = segment[segment.length - 1];
  const probed = segment.filter((r) => r.probe);
  const last = probed.at(-1)?.probe;
  if (!last) {
    if (unproven) return { state: "starting", reasons: [...restartNote, "nothing running or waiting; not yet probed"] };
    return { state: "unknown", reasons: ["nothing running or waiting; not yet probed"] };
  }
  if (last.ok) {
    const ago = cur.probe ? "" : ` ${fmtSeconds((cur.at - last.at) / 1000)} ago`;
    return { state: "idle", reasons: [...restartNote, `0 running, 0 waiting; the probe answered${ago} in ${last.latencyMs} ms`] };
  }
  const failed = trailingFailedProbes(probed);
  const why = last.error ?? (last.status ? `HTTP ${last.status}` : "no answer");
  const up = (cur.at - segment[0].at) / 1000;
  if (unproven && !(failed >= 2 && up >= t.stuckAfterSeconds)) {
    // A fresh process may refuse work while it warms up; give it stuckAfterSeconds.
    return { state: "starting", reasons: [...restartNote, `nothing running or waiting; the probe failed (${why}) ${failed} time${failed === 1 ? "" : "s"} since the new process came up`] };
  }
  if (failed >= 2) {
    return {
      state: "stuck",
      reasons: [...restartNote, `0 running, 0 waiting, but the probe failed on ${failed} consecutive reads (last: ${why})`],
    };
  }
  return { state: "stalled", reasons: [...restartNote, `0 running, 0 waiting, but the probe failed once (${why}); re-probing`] };
}

const CONNECTION_FAILURES = new Set(["refused", "reset"]);

function judgeFailedRead(all: Reading[], t: Thresholds): Judgement {
  const cur = all[all.length - 1];
  if (cur.noMetrics) {
    if (cur.models?.outcome === "ok") {
      const n = countOf(cur.models.ids);
      return {
        state: "no-metrics",
        reasons: [
          `/metrics is not vLLM's (${cur.error ?? "no vLLM series"}); load cannot be judged, so it is never called stuck`,
          `alive: /v1/models answers with ${n} model${n === 1 ? "" : "s"}`,
        ],
      };
    }
    return { state: "unknown", reasons: [`/metrics is not vLLM's and /v1/models failed (${cur.models?.outcome ?? "not asked"})`] };
  }

  // The unanswered reads at the end of the history.
  let i = all.length - 1;
  while (i >= 0 && !all[i].metrics && !all[i].noMetrics && (isConnectionFailure(all[i]) || all[i].outcome === "timeout")) i--;
  const streak = all.slice(i + 1);
  let refusedInARow = 0;
  for (let k = streak.length - 1; k >= 0 && isConnectionFailure(streak[k]); k--) refusedInARow++;

  if (refusedInARow >= 2) {
    const span = (cur.at - streak[streak.length - refusedInARow].at) / 1000;
    return {
      state: "down",
      reasons: [`${cur.error ?? cur.outcome} on /metrics and /health on ${refusedInARow} consecutive reads over ${fmtSeconds(span)}`],
    };
  }
  if (streak.length > 0 && streak.some((r) => r.outcome === "timeout")) {
    const span = (cur.at - streak[0].at) / 1000;
    if (streak.length >= 2 && span >= t.stuckAfterSeconds) {
      return { state: "down", reasons: [`no answer from /metrics on ${streak.length} reads in a row for ${fmtSeconds(span)} (over ${t.stuckAfterSeconds} s)`] };
    }
  }
  const what = describeFailure(cur);
  if (streak.length >= 1 && isConnectionFailure(cur)) {
    return { state: "unknown", reasons: [`${what}; one failed read is not "down"`] };
  }
  if (cur.outcome === "timeout") {
    return {
      state: "unknown",
      reasons: [`${what} (${streak.length} read${streak.length === 1 ? "" : "s"} in a row); a slow answer from a loaded API server is not a dead one`],
    };
  }
  return { state: "unknown", reasons: [`${what}; cannot judge from this read`] };
}

function isConnectionFailure(r: Reading): boolean {
  if (!CONNECTION_FAILURES.has(r.outcome)) return false;
  // /health is asked too: a refused /metrics with a live /health is not a dead server.
  return !r.health || r.health.outcome !== "ok";
}

function describeFailure(r: Reading): string {
  const base = r.error ?? r.outcome;
  if (r.health) return `/metrics: ${base}; /health: ${r.health.outcome}${r.health.status ? ` (HTTP ${r.health.status})` : ""}`;
  return `/metrics: ${base}`;
}

/** The readings with metrics of the process that produced the newest one, oldest first. */
export function currentProcess(all: Reading[]): Reading[] {
  const withMetrics = all.filter((r) => r.metrics);
  if (withMetrics.length === 0 || !all[all.length - 1].metrics) return [];
  let start = withMetrics.length - 1;
  while (start > 0 && sameProcess(withMetrics[start - 1].metrics!, withMetrics[start].metrics!)) start--;
  return withMetrics.slice(start);
}

/**
 * Two readings come from one process when their start times agree; without a start time (vLLM
 * with several API server processes) a counter that went down is the only restart signal.
 */
export function sameProcess(a: VllmMetrics, b: VllmMetrics): boolean {
  if (a.processStartTime !== null && b.processStartTime !== null) {
    return Math.abs(a.processStartTime - b.processStartTime) < 1e-3;
  }
  return !countersWentDown(a, b);
}

function countersWentDown(a: VllmMetrics, b: VllmMetrics): boolean {
  return COUNTERS.some((k) => a[k] !== null && b[k] !== null && (b[k] as number) < (a[k] as number));
}

const COUNTERS = ["steps", "promptTokens", "generationTokens", "finishedRequests"] as const;

/**
 * Progress is any sign of engine work: a step, prompt or generation tokens, a finished request, or
 * a KV-cache change (a long chunked prefill moves only the KV cache for tens of seconds).
 */
export function progressed(a: VllmMetrics, b: VllmMetrics): boolean {
  if (COUNTERS.some((k) => a[k] !== null && b[k] !== null && (b[k] as number) > (a[k] as number))) return true;
  return a.kvCacheUsage !== null && b.kvCacheUsage !== null && Math.abs(b.kvCacheUsage - a.kvCacheUsage) > 1e-9;
}

/**
 * Progress anywhere across `rs` (one process, oldest first): a counter whose readable values rise
 * from the first to the last reading that has it, or a KV-cache figure that changes. Readings
 * where a family was unusable (null) are skipped, not taken as "no change".
 */
function progressIn(rs: Reading[]): boolean {
  for (const k of COUNTERS) {
    const vs = rs.map((r) => r.metrics![k]).filter((v): v is number => v !== null);
    if (vs.length >= 2 && vs[vs.length - 1] > vs[0]) return true;
  }
  const kv = rs.map((r) => r.metrics!.kvCacheUsage).filter((v): v is number => v !== null);
  return kv.some((v, i) => i > 0 && Math.abs(v - kv[i - 1]) > 1e-9);
}

/**
 * Whether a window without progress is evidence of a hang: every figure readable anywhere in it is
 * readable at both of its ends (a family hidden at one end may have moved), and engine steps or
 * tokens are among them (finished requests and KV use can stay flat for minutes of healthy decoding).
 */
function flatIsEvidence(window: Reading[]): boolean {
  const first = window[0].metrics!;
  const last = window[window.length - 1].metrics!;
  for (const k of [...COUNTERS, "kvCacheUsage" as const]) {
    const seen = window.some((r) => r.metrics![k] !== null);
    if (seen && (first[k] === null || last[k] === null)) return false;
  }
  return (["steps", "promptTokens", "generationTokens"] as const).some((k) => first[k] !== null && last[k] !== null);
}

function servedInSegment(segment: Reading[]): boolean {
  for (let i = 1; i < segment.length; i++) if (progressed(segment[i - 1].metrics!, segment[i].metrics!)) return true;
  return segment.some((r) => r.probe?.ok);
}

/** Has a process other than the one seen when the restart was asked for shown up since? */
function newProcessSince(all: Reading[], pending: PendingRestart): boolean {
  let before: VllmMetrics | null = null;
  for (const r of all) {
    if (!r.metrics) continue;
    if (r.at < pending.requestedAt) {
      before = r.metrics;
      continue;
    }
    if (pending.processStartTime !== null && r.metrics.processStartTime !== null) {
      if (Math.abs(r.metrics.processStartTime - pending.processStartTime) >= 1e-3) return true;
    } else if (before && !sameProcess(before, r.metrics)) {
      return true;
    }
    before = r.metrics;
  }
  return false;
}

function trailingFailedProbes(probed: Reading[]): number {
  let n = 0;
  for (let i = probed.length - 1; i >= 0 && probed[i].probe && !probed[i].probe!.ok; i--) n++;
  return n;
}

function lastWithMetrics(rs: Reading[]): Reading | undefined {
  for (let i = rs.length - 1; i >= 0; i--) if (rs[i].metrics) return rs[i];
  return undefined;
}

/** Rates between the two newest readings of one process; null where a counter is missing. */
export function ratesOf(all: Reading[]): Rates {
  const seg = currentProcess(all);
  const none: Rates = { stepsPerSecond: null, generationTokensPerSecond: null, promptTokensPerSecond: null };
  if (seg.length < 2) return none;
  const a = seg[seg.length - 2];
  const b = seg[seg.length - 1];
  const dt = (b.at - a.at) / 1000;
  if (dt <= 0) return none;
  const rate = (k: "steps" | "generationTokens" | "promptTokens") => {
    const x = a.metrics![k];
    const y = b.metrics![k];
    if (x === null || y === null || y < x) return null;
    return (y - x) / dt;
  };
  return { stepsPerSecond: rate("steps"), generationTokensPerSecond: rate("generationTokens"), promptTokensPerSecond: rate("promptTokens") };
}

function verdict(j: Judgement, rates: Rates, basis: Reading[]): Verdict {
  const health = STATE_INFO[j.state].health;
  return {
    state: j.state,
    health,
    healthy: health === "yes",
    restartRecommended: restartRecommended(j.state),
    reasons: j.reasons,
    rates,
    basis: basis.slice(-3),
  };
}

function describeRestart(before: VllmMetrics, after: VllmMetrics): string {
  if (before.processStartTime !== null && after.processStartTime !== null) {
    return `new process since the last read (start time ${isoSeconds(before.processStartTime)} -> ${isoSeconds(after.processStartTime)}); counters of two processes are not compared`;
  }
  return "new process since the last read (a counter went down; no start time exposed); counters of two processes are not compared";
}

function describeProgress(a: Reading, b: Reading): string {
  const x = a.metrics!;
  const y = b.metrics!;
  const parts: string[] = [];
  const d = (k: (typeof COUNTERS)[number]) => (x[k] !== null && y[k] !== null ? (y[k] as number) - (x[k] as number) : 0);
  if (d("steps") > 0) parts.push(`+${fmt(d("steps"))} steps`);
  if (d("generationTokens") > 0) parts.push(`+${fmt(d("generationTokens"))} generation tokens`);
  if (d("promptTokens") > 0) parts.push(`+${fmt(d("promptTokens"))} prompt tokens`);
  if (d("finishedRequests") > 0) parts.push(`+${fmt(d("finishedRequests"))} finished`);
  if (parts.length === 0 && x.kvCacheUsage !== null && y.kvCacheUsage !== null) {
    parts.push(`KV cache ${pct(x.kvCacheUsage)} -> ${pct(y.kvCacheUsage)} (prefill in progress)`);
  }
  return `${parts.join(", ")} in ${fmtSeconds((b.at - a.at) / 1000)}`;
}

function describeFlat(m: VllmMetrics): string {
  const kv = m.kvCacheUsage === null ? "" : `, KV cache unchanged at ${pct(m.kvCacheUsage)}`;
  return `no new tokens or finished requests${kv}`;
}

function load(m: VllmMetrics): string {
  return `${fmt(m.running)} running, ${fmt(m.waiting)} waiting`;
}

function secondsBetween(from: number, to: number): string {
  return fmtSeconds(Math.max(0, (to - from) / 1000));
}

export function fmtSeconds(s: number): string {
  if (s < 10) return `${Math.round(s * 10) / 10} s`;
  if (s < 120) return `${Math.round(s)} s`;
  return `${Math.round(s)} s (${Math.round(s / 60)} min)`;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

function isoSeconds(unix: number): string {
  // A scraped start time may be any positive float (1e300): past Date's range, print the number
  // rather than throw (the classifier never throws).
  const d = new Date(unix * 1000);
  return Number.isNaN(d.getTime()) ? `${unix} s` : d.toISOString().replace(".000Z", "Z");
}
