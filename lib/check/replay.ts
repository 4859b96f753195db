/**
 * A replay: the stored readings of a period (the replay record, lib/core/replay.ts) judged again by
 * the same pure classifier, fed the way the watcher feeds it (its history window, ./history-window.ts),
 * with candidate thresholds; then every difference from what was recorded. And the advice drawn
 * from the same readings: the longest gaps without progress that ended in progress, the time from
 * a process's start to serving, the probe's answer times. Pure: rows in, a report out; no clock,
 * no I/O. Counters of two processes are never compared: the classifier splits processes itself
 * (currentProcess), and the gaps and start-ups below are measured inside one process only.
 */
import { classify, isAsleep, progressed, sameProcess, type ClassifyInput } from "./classify";
import { trimPlan } from "./history-window";
import { seenLate } from "./late";
import { rulesOf } from "../engines/registry";
import type { EngineSlice } from "../core/engine";
import { formatSeconds } from "../core/format";
import {
  MAX_CHANGES,
  type Advice,
  type AdvisedValue,
  type Episode,
  type EpisodeComparison,
  type HealthyGap,
  type ProcessSpan,
  type ReplayReport,
  type ReplayRow,
  type ReplayThresholds,
  type StateChange,
} from "../core/replay";
import type { BackendState } from "../core/states";
import { reasonText, type ProbeChoice, type Reading, type Reason, type Thresholds, type Verdict } from "../core/types";

export interface ReplayInput {
  backendId: string;
  from: number;
  to: number;
  /** The stored records of the period, oldest first. */
  rows: readonly ReplayRow[];
  /** The candidate thresholds (each already defaulted to the configured one by the caller). */
  candidate: ReplayThresholds;
  /** The configured thresholds: the ones a replay does not vary (idleProbeSeconds, recoveryTimeoutSeconds). */
  configured: Thresholds;
  probe?: ProbeChoice;
}

interface Judged {
  at: number;
  state: BackendState;
  recommended: boolean;
  reasons: Reason[];
}

/** Every stored reading, or one every `seconds` (a slower poll): a reading is kept once 90% of the interval has passed, as polls drift. */
export function subsample(rows: readonly ReplayRow[], seconds: number | null): ReplayRow[] {
  if (seconds === null) return [...rows];
  const out: ReplayRow[] = [];
  let last = -Infinity;
  for (const r of rows) {
    if (r.reading.at - last >= seconds * 900) {
      out.push(r);
      last = r.reading.at;
    }
  }
  return out;
}

export function replay(input: ReplayInput): ReplayReport {
  const c = input.candidate;
  const t: Thresholds = { ...input.configured, stuckAfterSeconds: c.stuckAfterSeconds, startupGraceSeconds: c.startupGraceSeconds };
  const kept = subsample(input.rows, c.pollIntervalSeconds);
  // A week is ~120k verdicts: each is folded into the episodes and the state changes as it comes,
  // and its reasons are kept only where one of those starts (the report shows no others).
  const replayedRuns = new EpisodeRuns();
  const changes = new ChangeRuns();
  let replayedStuck = 0;
  let before: BackendState | null = null;
  const base = { thresholds: t, probe: input.probe, ...(c.minStuckWindowSeconds !== null ? { minStuckWindowSeconds: c.minStuckWindowSeconds } : {}) };
  judgeRecord(
    kept.map((row) => row.reading),
    base,
    (i, v) => {
      const j: Judged = { at: kept[i].reading.at, state: v.state, recommended: v.restartRecommended, reasons: v.reasons };
      replayedRuns.add(j);
      changes.add(kept[i].state, j);
      if (v.state === "stuck" && before !== "stuck") replayedStuck++;
      before = v.state;
    },
  );
  const recordedRuns = new EpisodeRuns();
  let recordedStuck = 0;
  for (let i = 0; i < input.rows.length; i++) {
    const r = input.rows[i];
    // Only a recommendation starts an episode: the rest of the week's rows need no object.
    if (r.recommended) recordedRuns.add({ at: r.reading.at, state: r.state, recommended: true, reasons: [] });
    else recordedRuns.add(NOT_RECOMMENDED);
    if (r.state === "stuck" && input.rows[i - 1]?.state !== "stuck") recordedStuck++;
  }
  const comparisons = compare(recordedRuns.episodes, replayedRuns.episodes);
  const segments = processSegments(input.rows);
  const processes = processSpans(input.rows, segments);
  const gaps = healthyGaps(input.rows, segments);
  const longest = gaps[0] ?? null;
  const notes = replayNotes(input.rows, kept, c);
  const report: ReplayReport = {
    backendId: input.backendId,
    from: input.from,
    to: input.to,
    thresholds: c,
    readings: input.rows.length,
    judged: kept.length,
    processes,
    recorded: { recommendations: recordedRuns.episodes.length, stuck: recordedStuck },
    replayed: { recommendations: replayedRuns.episodes.length, stuck: replayedStuck },
    comparisons,
    changes: changes.changes,
    changesLeftOff: changes.leftOff,
    longestHealthyGap: longest,
    summary: "",
    notes,
  };
  report.summary = summarize(report);
  return report;
}

type JudgeOptions = Pick<ClassifyInput, "thresholds" | "probe" | "minStuckWindowSeconds">;

/**
 * Every reading of a record classified as the watcher fed it: each with the history window it
 * would have kept then (trimHistory, ./history-window.ts), `now` = the reading's time. The same as
 * `history = trimHistory([...history, r], r.at, t)` after each classify (what the watcher does,
 * lib/watcher/monitors.ts), without its copies: the window is two indices into the record and at
 * most one reading kept in front (trimPlan), and what classify would look for across the window
 * (the newest process's readings, a read seen late) is found from facts worked out once per
 * reading (PreparedWindow). tests/unit/replay.test.ts compares both ways, verdict by verdict.
 */
export function judgeRecord(readings: readonly Reading[], opts: JudgeOptions, onVerdict: (i: number, v: Verdict) => void): void {
  const n = readings.length;
  // Per reading: the first reading with metrics of its chain of same-process readings (-1 without
  // metrics), its place among the readings with metrics, the first reading with metrics from it
  // on, and how many reads were seen late before it.
  const procStart = new Int32Array(n);
  const metricsPos = new Int32Array(n);
  const nextMetrics = new Int32Array(n + 1);
  const lateBefore = new Int32Array(n + 1);
  const withMetrics: Reading[] = [];
  let prevM = -1;
  for (let g = 0; g < n; g++) {
    const m = readings[g].metrics;
    lateBefore[g + 1] = lateBefore[g] + (seenLate(readings[g]) ? 1 : 0);
    if (!m) {
      procStart[g] = -1;
      metricsPos[g] = -1;
      continue;
    }
    procStart[g] = prevM >= 0 && sameProcess(readings[prevM].metrics!, m) ? procStart[prevM] : g;
    metricsPos[g] = withMetrics.length;
    withMetrics.push(readings[g]);
    prevM = g;
  }
  nextMetrics[n] = n;
  for (let g = n - 1; g >= 0; g--) nextMetrics[g] = readings[g].metrics ? g : nextMetrics[g + 1];

  // The window before reading i: readings[front] (when front >= 0), then readings[lo .. i - 1];
  // `all` holds it, changed in place (classify keeps no reference to it: its basis is a copy).
  let lo = 0;
  let front = -1;
  const all: Reading[] = [];
  for (let i = 0; i < n; i++) {
    const r = readings[i];
    all.push(r);
    let segment: Reading[] = [];
    if (r.metrics) {
      // currentProcess(all): back from i along its chain, to the window's first reading with metrics at most ...
      const first = nextMetrics[lo];
      const from = Math.max(procStart[i], first);
      segment = withMetrics.slice(metricsPos[from], metricsPos[i] + 1);
      // ... and past it to the reading in front, compared as currentProcess compares neighbours.
      const f = front >= 0 ? readings[front].metrics : null;
      if (from === first && f && sameProcess(f, readings[first].metrics!)) segment.unshift(readings[front]);
    }
    const anyLate = lateBefore[i + 1] - lateBefore[lo] > 0 || (front >= 0 && seenLate(readings[front]));
    const input: ClassifyInput = { thresholds: opts.thresholds, probe: opts.probe, history: NO_HISTORY, reading: r, now: r.at, prepared: { all, segment, anyLate } };
    if (opts.minStuckWindowSeconds !== undefined) input.minStuckWindowSeconds = opts.minStuckWindowSeconds;
    onVerdict(i, classify(input));
    const plan = trimPlan(all, r.at, opts.thresholds);
    if (plan.from === 0) continue;
    const nextFront = plan.keep === null ? -1 : recordIndex(plan.keep, front, lo);
    if (plan.keep === null) all.splice(0, plan.from);
    else all.splice(0, plan.from, all[plan.keep]);
    lo = recordIndex(plan.from, front, lo);
    front = nextFront;
  }
}

const NO_HISTORY: Reading[] = [];

/** The record's index of the window's k-th reading (the window: readings[front] if front >= 0, then readings[lo ..]). */
function recordIndex(k: number, front: number, lo: number): number {
  if (front < 0) return lo + k;
  return k === 0 ? front : lo + k - 1;
}

const NOT_RECOMMENDED: Judged = { at: 0, state: "unknown", recommended: false, reasons: [] };

/** Runs of restart recommendations (a stretch of consecutive recommending verdicts is one), verdict by verdict. */
class EpisodeRuns {
  readonly episodes: Episode[] = [];
  private open: Episode | null = null;
  add(j: Judged): void {
    if (!j.recommended) {
      this.open = null;
      return;
    }
    if (this.open) this.open.to = j.at;
    else this.episodes.push((this.open = { from: j.at, to: j.at, state: j.state, reasons: j.reasons }));
  }
}

function compare(recorded: Episode[], replayed: Episode[]): EpisodeComparison[] {
  const overlaps = (a: Episode, b: Episode) => a.from <= b.to && b.from <= a.to;
  const out: EpisodeComparison[] = [];
  const used = new Set<Episode>();
  for (const r of recorded) {
    const match = replayed.find((p) => !used.has(p) && overlaps(p, r));
    if (!match) {
      out.push({
        change: "never",
        replayed: null,
        recorded: r,
        shiftSeconds: null,
        text: `${when(r.from)}: the recorded ${r.state} (restart recommended) would not have been: no recommendation while it lasted (${formatSeconds((r.to - r.from) / 1000)})`,
      });
      continue;
    }
    used.add(match);
    const shift = (match.from - r.from) / 1000;
    const change = Math.abs(shift) < 0.5 ? "same" : shift > 0 ? "later" : "earlier";
    const text =
      change === "same"
        ? `${when(r.from)}: ${match.state} (restart recommended) as recorded: ${reasonText(match.reasons)}`
        : `${when(match.from)}: ${match.state} ${formatSeconds(Math.abs(shift))} ${change} than recorded (${when(r.from)}): ${reasonText(match.reasons)}`;
    out.push({ change, replayed: match, recorded: r, shiftSeconds: shift, text });
  }
  for (const p of replayed) {
    if (used.has(p)) continue;
    out.push({
      change: "new",
      replayed: p,
      recorded: null,
      shiftSeconds: null,
      text: `${when(p.from)}: ${p.state} (restart recommended), not recorded: ${reasonText(p.reasons)}`,
    });
  }
  return out.sort((a, b) => (a.replayed ?? a.recorded)!.from - (b.replayed ?? b.recorded)!.from);
}

/** The stretches where the replayed state is not the recorded one, verdict by verdict; at most MAX_CHANGES. */
class ChangeRuns {
  readonly changes: StateChange[] = [];
  leftOff = 0;
  private open: StateChange | null = null;
  add(recorded: BackendState, j: Judged): void {
    const replayed = j.state;
    // A replay has no restart requests: "restarting" was the operator's, not the thresholds'.
    if (recorded === replayed || recorded === "restarting") {
      this.open = null;
      return;
    }
    if (this.open && this.open.recorded === recorded && this.open.replayed === replayed) {
      this.open.to = j.at;
      return;
    }
    this.open = { from: j.at, to: j.at, recorded, replayed, reasons: j.reasons };
    if (this.changes.length < MAX_CHANGES) this.changes.push(this.open);
    else this.leftOff++;
  }
}

type Segment = { rows: ReplayRow[]; downFrom: number | null };

/** Readings with metrics cut into processes (a new start time, or a counter that went down). */
function processSegments(rows: readonly ReplayRow[]): Segment[] {
  const out: Segment[] = [];
  let cur: ReplayRow[] = [];
  let downFrom: number | null = null;
  let pendingDown: number | null = null;
  for (const r of rows) {
    const m = r.reading.metrics;
    if (!m) {
      // Refused or unanswered reads between two processes: the next one's start-up began by then.
      if (pendingDown === null && (r.reading.outcome === "refused" || r.reading.outcome === "reset" || r.reading.outcome === "timeout" || r.reading.loading)) pendingDown = r.reading.at;
      continue;
    }
    const prev = cur.at(-1)?.reading.metrics;
    if (!prev || !sameProcess(prev, m)) {
      if (cur.length > 0) out.push({ rows: cur, downFrom });
      cur = [];
      downFrom = pendingDown;
    }
    pendingDown = null;
    cur.push(r);
  }
  if (cur.length > 0) out.push({ rows: cur, downFrom });
  return out;
}

function processSpans(rows: readonly ReplayRow[], segments: Segment[]): ProcessSpan[] {
  const first = rows[0]?.reading.at ?? 0;
  return segments.map((seg, i) => {
    const m = seg.rows[0].reading.metrics!;
    const token = m.processToken != null ? Number(m.processToken) : NaN;
    const startedAt = m.processStartTime !== null ? m.processStartTime * 1000 : Number.isFinite(token) ? token * 1000 : null;
    const serving = seg.rows.find((r) => r.state === "idle" || r.state === "busy");
    // A process that was already up when the record begins has no start-up to measure.
    const began = Math.min(startedAt ?? Infinity, seg.downFrom ?? Infinity, i > 0 ? seg.rows[0].reading.at : Infinity);
    const inPeriod = Number.isFinite(began) && began >= first - 1000;
    return {
      firstAt: seg.rows[0].reading.at,
      lastAt: seg.rows.at(-1)!.reading.at,
      startedAt,
      servingAt: serving?.reading.at ?? null,
      startupSeconds: serving && inPeriod ? Math.max(0, (serving.reading.at - began) / 1000) : null,
    };
  });
}

function hasWork(m: EngineSlice): boolean {
  return m.running > 0 || (m.waitingCapacity ?? m.waiting) > 0;
}

/**
 * Runs of reads with work and no progress, inside one process, that ended with progress: the
 * server was slow (a long prefill, a grammar compile), not hung. A run cut by a new process, by
 * the end of the record or by work that went away without progress (clients giving up) is not
 * counted: it may have been a hang. Longest first.
 */
export function healthyGaps(rows: readonly ReplayRow[], segments: Segment[] = processSegments(rows)): HealthyGap[] {
  const gaps: HealthyGap[] = [];
  for (const seg of segments) {
    const rs: Reading[] = [];
    for (const r of seg.rows) if (!isAsleep(r.reading)) rs.push(r.reading);
    let start: number | null = null;
    let running = 0;
    let waiting = 0;
    for (let i = 1; i < rs.length; i++) {
      const a = rs[i - 1].metrics!;
      const b = rs[i].metrics!;
      const moved = progressed(a, b);
      if (!moved && hasWork(a) && hasWork(b)) {
        if (start === null) {
          start = i - 1;
          running = a.running;
          waiting = a.waiting;
        }
        running = Math.max(running, b.running);
        waiting = Math.max(waiting, b.waiting);
        continue;
      }
      if (start !== null && moved) {
        const from = rs[start].at;
        const to = rs[i - 1].at;
        gaps.push({ from, to, seconds: (to - from) / 1000, upToSeconds: (rs[i].at - from) / 1000, engine: rs[i].engine ?? null, running, waiting });
      }
      start = null;
    }
  }
  return gaps.sort((x, y) => y.seconds - x.seconds || x.from - y.from);
}

function replayNotes(rows: readonly ReplayRow[], kept: readonly ReplayRow[], c: ReplayThresholds): string[] {
  const notes = ["A replay sends nothing: probes are those sent then (a slower poll keeps the probes of the reads it keeps), and no restart request is replayed (a recorded \"restarting\" is not compared)."];
  if (c.pollIntervalSeconds !== null && rows.length > 1) {
    const span = (rows.at(-1)!.reading.at - rows[0].reading.at) / 1000;
    const recorded = span / (rows.length - 1);
    if (c.pollIntervalSeconds < recorded * 0.9) notes.push(`the record is one reading every ${formatSeconds(recorded)} on average: a ${c.pollIntervalSeconds} s poll cannot be replayed faster than that, every reading was judged`);
  }
  if (kept.length < rows.length) notes.push(`${kept.length} of ${rows.length} readings judged (one every ${c.pollIntervalSeconds} s)`);
  return notes;
}

function summarize(r: ReplayReport): string {
  const n = (k: EpisodeComparison["change"]) => r.comparisons.filter((x) => x.change === k).length;
  const parts: string[] = [];
  const more = n("new");
  const never = n("never");
  const later = n("later");
  const earlier = n("earlier");
  if (more) parts.push(`${more} more restart recommendation${more === 1 ? "" : "s"}`);
  if (never) parts.push(`${never} recorded one${never === 1 ? "" : "s"} never made`);
  if (later) parts.push(`${later} later`);
  if (earlier) parts.push(`${earlier} earlier`);
  const what = parts.length ? parts.join(", ") : "no change in restart recommendations";
  const stuck = r.replayed.stuck - r.recorded.stuck;
  const stuckText = stuck !== 0 ? ` (${Math.abs(stuck)} ${stuck > 0 ? "more" : "fewer"} stuck verdict${Math.abs(stuck) === 1 ? "" : "s"})` : "";
  const gap = r.longestHealthyGap;
  const gapText = gap
    ? `; the longest healthy gap without progress was ${formatSeconds(gap.seconds)} at ${when(gap.from)}, with ${gap.running} running and ${gap.waiting} waiting`
    : "; no gap without progress ended in progress";
  return `with ${r.thresholds.stuckAfterSeconds} s: ${what}${stuckText}${gapText}`;
}

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
/** "14:02:05 UTC on Tuesday 2026-12-01": a replay is read days later, so the day is named. */
export function when(at: number): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return String(at);
  return `${d.toISOString().slice(11, 19)} UTC on ${DAYS[d.getUTCDay()]} ${d.toISOString().slice(0, 10)}`;
}

// ---- advice ----

export interface AdviceInput {
  backendId: string;
  from: number;
  to: number;
  rows: readonly ReplayRow[];
  /** The backend's URL (its port goes into the probe examples, read on 127.0.0.1 inside the pod). */
  url: string;
  current: Advice["current"];
}

/** Ascending, once for every percentile of it (a week is ~120k metrics latencies). */
function sorted(xs: number[]): Float64Array {
  return Float64Array.from(xs).sort();
}

function percentile(s: Float64Array, p: number): number | null {
  if (s.length === 0) return null;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

const up = (x: number, step: number) => Math.ceil(x / step) * step;

function loadBucket(running: number): string {
  if (running <= 1) return "0-1 running";
  if (running <= 4) return "2-4 running";
  if (running <= 16) return "5-16 running";
  return "17+ running";
}

/** Advice on stuckAfterSeconds, startupGraceSeconds and the probe timeout from what the record shows. Never applied. */
export function advise(input: AdviceInput): Advice {
  const rows = input.rows;
  const segments = processSegments(rows);
  const gaps = healthyGaps(rows, segments);
  const processes = processSpans(rows, segments);
  const engine = rows.find((r) => r.reading.engine)?.reading.engine ?? null;
  const poll = input.current.pollIntervalSeconds;
  const probeMs = sorted(rows.filter((r) => r.reading.probe?.ok && r.reading.probe.watcherLateMs === undefined).map((r) => r.reading.probe!.latencyMs));
  const metricsMs = sorted(rows.filter((r) => r.reading.metrics && r.reading.watcherLateMs === undefined).map((r) => r.reading.latencyMs));
  const notes: string[] = [];

  const longest = gaps[0];
  const minWindow = engine ? rulesOf(engine).minStuckWindowSeconds : 0;
  let stuck: AdvisedValue;
  if (longest) {
    // The gap may have lasted until the read that showed progress: the margin is taken over that.
    const seen = longest.upToSeconds;
    const value = Math.max(up(Math.max(seen * 1.5, seen + 2 * poll), 5), minWindow);
    stuck = {
      seconds: value,
      observedSeconds: seen,
      margin: `50% over the longest healthy gap (at least 2 poll intervals, ${2 * poll} s), rounded up to 5 s`,
      why: `the longest gap without progress that ended in progress was ${formatSeconds(longest.seconds)} (at most ${formatSeconds(seen)}) at ${when(longest.from)}, with ${longest.running} running and ${longest.waiting} waiting; a real hang is then called stuck about ${formatSeconds(value + poll)} after it starts`,
    };
  } else {
    stuck = { seconds: Math.max(input.current.stuckAfterSeconds, minWindow), observedSeconds: null, margin: "none needed", why: "no gap without progress ended in progress in this period: keep the configured value" };
  }
  if (minWindow > 0 && stuck.seconds === minWindow) notes.push(`${engine}'s own minimum stuck window (${minWindow} s) applies whatever stuckAfterSeconds says`);

  const startups = processes.map((p) => p.startupSeconds).filter((s): s is number => s !== null);
  const slowest = startups.length ? Math.max(...startups) : null;
  const grace: AdvisedValue =
    slowest !== null
      ? {
          seconds: Math.max(60, up(slowest * 1.5, 30)),
          observedSeconds: slowest,
          margin: "50% over the slowest start to serving, at least 60 s, rounded up to 30 s",
          why: `${startups.length} start${startups.length === 1 ? "" : "s"} seen; the slowest took ${formatSeconds(slowest)} from the process start (or the first refused read) to serving`,
        }
      : { seconds: input.current.startupGraceSeconds, observedSeconds: null, margin: "none", why: "no process start seen in this period: keep the configured value" };

  const probeMax = probeMs.length ? probeMs[probeMs.length - 1] : null;
  const probeTimeout: AdvisedValue =
    probeMax !== null
      ? {
          seconds: Math.max(5, Math.ceil((probeMax * 3) / 1000)),
          observedSeconds: probeMax / 1000,
          margin: "3x the slowest probe answer, at least 5 s",
          why: `${probeMs.length} probe${probeMs.length === 1 ? "" : "s"} answered; p50 ${percentile(probeMs, 50)} ms, p99 ${percentile(probeMs, 99)} ms, slowest ${probeMax} ms`,
        }
      : { seconds: input.current.probeTimeoutSeconds, observedSeconds: null, margin: "none", why: "no probe answered in this period: keep the configured value" };

  const byLoad = new Map<string, { count: number; longestSeconds: number }>();
  for (const g of gaps) {
    const k = loadBucket(g.running);
    const e = byLoad.get(k) ?? { count: 0, longestSeconds: 0 };
    e.count++;
    e.longestSeconds = Math.max(e.longestSeconds, g.seconds);
    byLoad.set(k, e);
  }
  const port = portOf(input.url);
  const readTimeout = Math.max(2, Math.ceil(((percentile(metricsMs, 99) ?? 1000) * 3) / 1000));
  const kubernetes = kubernetesYaml(input.backendId, engine, port, stuck.seconds, grace.seconds, probeTimeout.seconds, readTimeout, minWindow);
  const systemd = systemdNotes(input.backendId, port, stuck.seconds, grace.seconds, probeTimeout.seconds, readTimeout, minWindow);
  if (rows.length === 0) notes.push("no readings in this period: every value is the configured one");
  return {
    backendId: input.backendId,
    from: input.from,
    to: input.to,
    readings: rows.length,
    engine,
    healthyGaps: gaps.slice(0, 10),
    gapsByLoad: [...byLoad].map(([load, v]) => ({ load, ...v })).sort((a, b) => b.longestSeconds - a.longestSeconds),
    processes,
    probe: { count: probeMs.length, p50Ms: percentile(probeMs, 50), p99Ms: percentile(probeMs, 99), maxMs: probeMax },
    metrics: { p50Ms: percentile(metricsMs, 50), p99Ms: percentile(metricsMs, 99), maxMs: metricsMs.length ? metricsMs[metricsMs.length - 1] : null },
    current: input.current,
    recommended: { stuckAfterSeconds: stuck, startupGraceSeconds: grace, probeTimeoutSeconds: probeTimeout },
    config: { stuckAfterSeconds: stuck.seconds, startupGraceSeconds: grace.seconds, probeTimeoutSeconds: probeTimeout.seconds },
    kubernetes,
    systemd,
    notes: ["stepwatch never applies these: copy what fits into stepwatch.config.json (thresholds are fleet-wide) and your manifests.", ...notes],
  };
}

function portOf(url: string): number {
  try {
    const u = new URL(url);
    return u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
  } catch {
    return 8000;
  }
}

/** The CLI's stuck window is 2 x --wait (docs/check.md), at least the engine's own. */
function waitFor(stuckAfter: number, minWindow: number): number {
  return Math.ceil(Math.max(stuckAfter, minWindow) / 2);
}

function kubernetesYaml(id: string, engine: string | null, port: number, stuckAfter: number, grace: number, probeTimeout: number, readTimeout: number, minWindow: number): string {
  const wait = waitFor(stuckAfter, minWindow);
  const url = `http://127.0.0.1:${port}`;
  // One check: its window (2 x --wait), three reads at most --timeout each, a probe, node's start-up.
  const livenessTimeout = 2 * wait + 3 * readTimeout + probeTimeout + 10;
  const startupTimeout = 2 * 5 + 3 * readTimeout + probeTimeout + 10;
  const period = 10;
  return [
    `# ${id}${engine ? ` (${engine})` : ""}: advised by stepwatch from its record, never applied. The CLI is dist/stepwatch.cjs.`,
    `# startupProbe: exit 0 (serving) within startupGraceSeconds (${grace} s); 3 (starting, loading) keeps waiting.`,
    `startupProbe:`,
    `  exec:`,
    `    command: ["node", "/opt/stepwatch.cjs", "check", "${url}", "--wait", "5", "--timeout", "${readTimeout}", "--probe-timeout", "${probeTimeout}"]`,
    `  periodSeconds: ${period}`,
    `  timeoutSeconds: ${startupTimeout}`,
    `  failureThreshold: ${Math.max(1, Math.ceil(grace / period))}   # ${period} s x this >= ${grace} s`,
    `# livenessProbe: only 1 (stuck) and 2 (down) fail it; 3 (cannot judge) is no reason to restart.`,
    `livenessProbe:`,
    `  exec:`,
    `    command:`,
    `      - sh`,
    `      - -c`,
    `      - >-`,
    `        node /opt/stepwatch.cjs check ${url} --wait ${wait} --timeout ${readTimeout} --probe-timeout ${probeTimeout};`,
    `        rc=$?; if [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; then exit 1; fi; exit 0`,
    `  periodSeconds: 60`,
    `  timeoutSeconds: ${livenessTimeout}   # > 2 x --wait (${2 * wait} s) + 3 reads x --timeout + --probe-timeout + node's start-up`,
    `  failureThreshold: 1   # the check already waits ${2 * wait} s without progress before it says stuck`,
  ].join("\n");
}

function systemdNotes(id: string, port: number, stuckAfter: number, grace: number, probeTimeout: number, readTimeout: number, minWindow: number): string {
  const wait = waitFor(stuckAfter, minWindow);
  return [
    `# ${id}: advised by stepwatch from its record, never applied.`,
    `# The model server's unit: it refuses while it loads its weights, so give it the start-up seen.`,
    `[Service]`,
    `TimeoutStartSec=${grace}`,
    `Restart=on-failure   # a crash exits; a hang does not: that is what the check below is for`,
    ``,
    `# stepwatch-check-${id}.service, run by a .timer (OnUnitActiveSec=60); exit 1 stuck, 2 down, 3 cannot judge.`,
    `# Wire OnFailure= to your alerting, not to a restart: stepwatch restarts only when an operator confirms.`,
    `[Service]`,
    `Type=oneshot`,
    `ExecStart=/usr/bin/node /opt/stepwatch.cjs check http://127.0.0.1:${port} --wait ${wait} --timeout ${readTimeout} --probe-timeout ${probeTimeout}`,
    `SuccessExitStatus=3`,
    `TimeoutStartSec=${2 * wait + 3 * readTimeout + probeTimeout + 10}`,
  ].join("\n");
}

// ---- what may be asked ----

/** The most readings one replay judges (7 days at a 2 s poll): past it, ask a shorter period. */
export const MAX_REPLAY_READINGS = 350_000;
/** The longest threshold a replay takes (a day): longer is no threshold, and the history window would hold the whole record. */
export const MAX_REPLAY_SECONDS = 86_400;

/** A refused input, naming the parameter (the API's query name; the CLI maps it to its flag). */
export class ReplayInputError extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(`${param}: ${message}`);
  }
}

type Raw = string | null | undefined;

function secondsParam(param: string, raw: Raw, opts: { min: number; inclusive: boolean }): number | null {
  if (raw === null || raw === undefined || raw === "") return null;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new ReplayInputError(param, `must be a number of seconds, not "${raw.slice(0, 20)}"`);
  if (opts.inclusive ? n < opts.min : n <= opts.min) throw new ReplayInputError(param, `must be ${opts.inclusive ? "at least" : "more than"} ${opts.min} s, not ${n}`);
  if (n > MAX_REPLAY_SECONDS) throw new ReplayInputError(param, `must be at most ${MAX_REPLAY_SECONDS} s (a day), not ${n}`);
  return n;
}

/** The candidate thresholds from raw parameters, each absent one the configured value; a ReplayInputError naming the first bad one. */
export function candidateThresholds(
  raw: { stuckAfterSeconds?: Raw; startupGraceSeconds?: Raw; pollIntervalSeconds?: Raw; minStuckWindowSeconds?: Raw },
  configured: Thresholds,
): ReplayThresholds {
  const stuck = secondsParam("stuckAfterSeconds", raw.stuckAfterSeconds, { min: 0, inclusive: false });
  const grace = secondsParam("startupGraceSeconds", raw.startupGraceSeconds, { min: 0, inclusive: true });
  const poll = secondsParam("pollIntervalSeconds", raw.pollIntervalSeconds, { min: 0, inclusive: false });
  const min = secondsParam("minStuckWindowSeconds", raw.minStuckWindowSeconds, { min: 0, inclusive: true });
  return {
    stuckAfterSeconds: stuck ?? configured.stuckAfterSeconds,
    startupGraceSeconds: grace ?? configured.startupGraceSeconds ?? 0,
    pollIntervalSeconds: poll,
    minStuckWindowSeconds: min,
  };
}

/** A period's bounds: from before to, and at most `maxDays` (what the record keeps at most). */
export function checkPeriod(from: number, to: number, maxDays: number): void {
  if (!Number.isFinite(from) || from < 0) throw new ReplayInputError("from", "must be ms since epoch");
  if (!Number.isFinite(to) || to < 0) throw new ReplayInputError("to", "must be ms since epoch");
  if (from >= to) throw new ReplayInputError("from", "must be before to");
  if (to - from > maxDays * 86_400_000) throw new ReplayInputError("from", `the period may be at most ${maxDays} days`);
}

/** Refuses a period a replay cannot answer: no reading in it, or more than MAX_REPLAY_READINGS. */
export function checkRowCount(n: number, backendId: string, span: { from: number; to: number } | null): void {
  if (n === 0) {
    const held = span ? ` (the record holds ${when(span.from)} to ${when(span.to)})` : " (the record holds none for it yet: readings are kept from the first poll after history.replayDays took effect)";
    throw new ReplayInputError("from", `no readings of ${backendId} in this period${held}`);
  }
  if (n > MAX_REPLAY_READINGS) throw new ReplayInputError("from", `${n} readings in this period, more than one replay takes (${MAX_REPLAY_READINGS}): ask a shorter period`);
}
