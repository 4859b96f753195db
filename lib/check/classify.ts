/**
 * The classifier: readings in, a verdict out. Pure: no I/O, no clock of its own (`now` is passed
 * in), no mutable counters. Every debounce ("two waits", "two refused reads", "probe failed twice",
 * "refused for startupGraceSeconds") is computed from the readings handed in, so a restart of
 * stepwatch that reloads its history decides exactly as before. The rules are the state table of
 * docs/states.md plus the real-server cases of docs/engines.md; each one that fires leaves a reason:
 * its rule id (`RULES`, lib/core/types.ts, named in docs/states.md) and words a person can read. It is engine-blind except for what an adapter states (lib/engines/adapter.ts
 * rules, and each reading's `evidence`).
 */
import { formatFigure, formatMinutes, formatSeconds, formatShare } from "../core/format";
import { rulesOf } from "../engines/registry";
import type { EngineUpdates } from "../engines/adapter";
import { ENGINE_LABELS, PROGRESS_COUNTERS, type EngineMetrics, type ProgressCounter, type EngineSlice, type EvidenceFigure } from "../core/engine";
import { countOf, namesOf } from "../core/caps";
import { lateReason, seenLate } from "./late";
import { STATE_INFO, restartRecommended, type BackendState } from "../core/states";
import { DEFAULT_THRESHOLDS, type PendingRestart, type ProbeChoice, type Rates, type Reading, type Thresholds, type Verdict, reason, reasonText, type Reason } from "../core/types";

export interface ClassifyInput {
  /** Earlier readings of this backend, oldest first, not including `reading`. */
  history: Reading[];
  reading: Reading;
  thresholds: Thresholds;
  now: number;
  pendingRestart?: PendingRestart | null;
  /** The backend's `probe` setting (default "auto"); "none": idle is judged from metrics alone. */
  probe?: ProbeChoice;
  /**
   * The engine's minimum stuck window in place of its adapter's: only a replay asks (lib/check/replay.ts,
   * "what if SGLang's 150 s were 90 s"); the watcher and the CLI leave it to the adapter.
   */
  minStuckWindowSeconds?: number;
  /**
   * The window already laid out by a caller that keeps it incrementally (a replay: lib/check/replay.ts
   * judges ~120k readings of a week, and finding these again from the window on every one was most
   * of its time). It must be exactly what classify would find itself; tests/unit/replay.test.ts
   * compares every verdict of a recorded run both ways. `history` is then not read.
   */
  prepared?: PreparedWindow;
}

/** What classify finds in its window before judging: the caller's copy of it, for a replay. */
export interface PreparedWindow {
  /** history then reading: [...history, reading] (not changed by classify). */
  all: Reading[];
  /** currentProcess(all). */
  segment: Reading[];
  /** all.some(seenLate). */
  anyLate: boolean;
}

type Judgement = { state: BackendState; reasons: Reason[]; restartRecommended?: boolean; configProblem?: string };

export function classify(input: ClassifyInput): Verdict {
  const p = input.prepared;
  const all = p ? p.all : [...input.history, input.reading];
  // The newest process's readings, found once: the rates and the judgement read the same ones.
  const segment = p ? p.segment : currentProcess(all);
  const rates = ratesOfSegment(segment);
  // A read this process saw late is evidence of nothing (lib/check/late.ts): judged without it, a
  // late newest read leaves the verdict of the reads before it, with the reason first.
  const judged = (p ? p.anyLate : anyLate(all)) ? all.filter((r) => !seenLate(r)) : all; // no copy per poll when none is
  let core: Judgement =
    judged.length > 0 ? judge(judged, input.thresholds, input.probe ?? "auto", input.minStuckWindowSeconds, judged === all ? segment : undefined) : { state: "unknown", reasons: [] };
  if (seenLate(input.reading)) core = { ...core, reasons: [lateReason(input.reading), ...core.reasons] };
  const pending = input.pendingRestart;
  if (!pending) return verdict(core, rates, all);

  const since = secondsBetween(pending.requestedAt, input.now);
  const newProcess = newProcessSince(all, pending);
  if (newProcess && (core.state === "idle" || core.state === "busy")) {
    return {
      ...verdict(core, rates, all),
      recovered: true,
      reasons: [reason("restart-recovered", `restart recovered: a new process is serving ${since} after the restart was asked for`), ...core.reasons],
    };
  }
  const waiting = reason(
    "restart-waiting",
    newProcess ? `restart asked for ${since} ago: a new process is up, not yet shown serving` : `restart asked for ${since} ago: waiting for a new process`,
  );
  return verdict({ state: "restarting", reasons: [waiting, ...core.reasons] }, rates, all);
}

/** all.some(seenLate), looking further only at a reading that carries a late mark at all (most carry none). */
function anyLate(all: Reading[]): boolean {
  for (let i = 0; i < all.length; i++) {
    const r = all[i];
    if (r.watcherLateMs === undefined && (r.probe == null || r.probe.watcherLateMs === undefined)) continue;
    if (seenLate(r)) return true;
  }
  return false;
}

/**
 * Whether this read should be followed by the tiny probe. Only ever with nothing running and
 * nothing waiting: a probe sent to a server with work would queue behind the very load it is
 * judging (the incident). Never to a sleeping server (a completion pends until it wakes), never
 * where the engine or the config says probes are off. Otherwise only when the idle state needs
 * (re)confirming.
 */
export function shouldProbe(input: ClassifyInput): boolean {
  const cur = input.reading;
  const m = cur.metrics;
  if (!m || m.running > 0 || m.waiting > 0) return false;
  if (isAsleep(cur)) return false;
  if ((input.probe ?? "auto") === "none" || rulesOf(cur.engine).probe === "never") return false;
  // The loop's own answer to /metrics proves it turns, and a probe would restart its sleep countdown.
  if (rulesOf(cur.engine).idleProvenByMetrics) return false;
  // A read this process saw late: its probe would likely be seen late too, and would add to the load.
  if (seenLate(cur)) return false;
  const all = [...input.history, cur];
  if (input.pendingRestart && !newProcessSince(all, input.pendingRestart)) return false;

  const earlier = currentProcess(all).slice(0, -1);
  const probes = earlier.filter((r) => r.probe);
  const last = probes.at(-1);
  if (!last?.probe) return true; // this process has never answered a probe
  const age = input.now - last.probe.at;
  // A probe seen late said nothing, but it was sent: asked again at the idle pace, not at once.
  if (last.probe.watcherLateMs !== undefined) return age >= input.thresholds.idleProbeSeconds * 1000;
  const failedInARow = trailingFailedProbes(probes);
  // One failure is re-checked at once ("two consecutive reads"); after that, a stuck idle engine
  // is asked again only every idleProbeSeconds, not hammered on every poll. A probe that cannot
  // succeed (401/403, no such endpoint) is not a failure: asked again every idleProbeSeconds.
  if (failedInARow === 1) return true;
  return age >= input.thresholds.idleProbeSeconds * 1000;
}

/** Sleeping: any engine with vLLM's awake = 0, or llama.cpp's /props is_sleeping. */
export function isAsleep(r: Reading): boolean {
  if (r.asleep) return true;
  const m = r.metrics;
  if (!m) return false;
  if (m.asleep) return true;
  for (const id in m.engines) if (m.engines[id].asleep === true) return true;
  return false;
}

/** `known`: currentProcess(all), when the caller has it already. */
function judge(all: Reading[], t: Thresholds, probe: ProbeChoice, minWindowOverride?: number, known?: Reading[]): Judgement {
  const cur = all[all.length - 1];
  // vLLM sleep mode (checked on 0.29: engine_sleep_state) and llama.cpp --sleep-idle-seconds: put to
  // sleep on purpose; /health answers and the gauges read 0, but a completion pends until it wakes.
  if (isAsleep(cur)) return judgeAsleep(cur);
  if (!cur.metrics) return judgeFailedRead(all, t);

  const segment = known ?? currentProcess(all);
  // The newest reading with metrics among all but the last segment.length (not "before the
  // segment": readings without metrics inside it shift this; kept as the watcher has always judged).
  const previousProcess = lastWithMetrics(all, all.length - segment.length);
  // Until the new process shows it serves (progress or an answered probe), it is "starting".
  const unproven = previousProcess !== undefined && !servedInSegment(segment);
  const restartNote =
    previousProcess && segment.length === 1 ? [reason("new-process", describeRestart(previousProcess.metrics!, cur.metrics))] : [];
  const m = cur.metrics;

  if (m.running === 0 && m.waiting === 0) return judgeNoWork(segment, unproven, restartNote, t, probe, cur);

  const prev = segment.at(-2);
  if (m.running === 0 && capacityWaiting(m) === 0) {
    // vLLM 0.29 num_requests_waiting_by_reason: every waiting request is deferred (a grammar compile,
    // KV from a remote prefill, a streaming client's next chunk). No progress is expected from the
    // engine; it is not idle either (a probe would queue), so: busy, never stuck, never probed.
    return {
      state: "busy",
      reasons: [...restartNote, reason("deferred-only", `0 running, ${formatFigure(m.waiting)} waiting, all deferred (waiting on a grammar, a KV transfer or a streaming client, not on the engine): no progress expected`)],
    };
  }
  if (unproven && !(prev && progressed(prev.metrics!, m))) {
    return { state: "starting", reasons: [...restartNote, reason("starting-no-progress", `${load(m)}; no progress yet from the new process`)] };
  }
  if (!prev) return { state: "unknown", reasons: [reason("first-read", `first read: ${load(m)}; progress needs a second read`)] };

  const minWindow = minWindowOverride ?? rulesOf(cur.engine).minStuckWindowSeconds;
  const ids = Object.keys(m.engines ?? {});
  if (ids.length < 2) {
    const j = judgeSlice(segment, null, t, minWindow);
    if (j.state === "none") return { state: "unknown", reasons: [...restartNote, reason("no-judgeable-figure", `${load(m)}: no figure the engine can be judged by`)] };
    return { state: j.state, reasons: [...restartNote, ...j.reasons] };
  }
  return judgeEngines(segment, ids.sort(numericOrder), t, minWindow, restartNote);
}

function judgeAsleep(cur: Reading): Judgement {
  const m = cur.metrics;
  const level = m?.sleepLevel ? ` (sleep level ${m.sleepLevel}: ${m.sleepLevel === 1 ? "weights offloaded to CPU" : "weights discarded"})` : "";
  const asleep = Object.entries(m?.engines ?? {}).filter(([, e]) => e.asleep);
  const which = asleep.length > 0 ? `engine ${asleep.map(([id]) => id).join(", ")} of ${Object.keys(m!.engines!).length} asleep` : "asleep";
  const name = cur.engine ? ENGINE_LABELS[cur.engine] : "the server";
  return {
    state: "sleeping",
    reasons: [reason("sleeping", `${name} ${which}${level}: put to sleep on purpose, so it is never probed (a request would wait until it is woken) and never called stuck`)],
  };
}

/** Waiting that is the engine's to schedule: vLLM's capacity waiting, or all of it where the engine does not say. */
function capacityWaiting(m: EngineSlice): number {
  return m.waitingCapacity ?? m.waiting;
}
function hasWork(m: EngineSlice): boolean {
  return m.running > 0 || capacityWaiting(m) > 0;
}

type SliceVerdict = { state: "busy" | "stalled" | "stuck" | "unknown" | "none"; reasons: Reason[]; waits: number; line: string };

/** The figures of one engine core (`id`) or of the whole server (null) in a reading. */
function sliceOf(r: Reading, id: string | null): EngineSlice | null {
  const m = r.metrics;
  if (!m) return null;
  if (id === null) return m;
  return m.engines?.[id] ?? null;
}

/**
 * The work-in-flight judgement of one engine core (or of the whole server): progress since the
 * last read is busy; no progress across two waits and the window is stuck.
 */
function judgeSlice(segment: Reading[], id: string | null, t: Thresholds, minWindow: number): SliceVerdict {
  const cur = segment[segment.length - 1];
  const m = sliceOf(cur, id);
  const evidence = cur.metrics!.evidence;
  if (!m || !hasWork(m)) return { state: "none", reasons: [], waits: 0, line: "" };
  const prev = segment.at(-2);
  const pm = prev ? sliceOf(prev, id) : null;
  if (pm && progressed(pm, m)) {
    return { state: "busy", reasons: [reason("progress", `${load(m)}; ${describeProgress(pm, m, (cur.at - prev!.at) / 1000)}`)], waits: 0, line: load(m) };
  }
  const slices = segment.map((r) => sliceOf(r, id));
  const base = flatBase(slices);
  const waits = segment.length - 1 - base;
  const flatFor = (cur.at - segment[base].at) / 1000;
  const window = slices.slice(base) as EngineSlice[];
  const quiet = quietSeconds(window, cur.metrics!, rulesOf(cur.engine).updates);
  const expected = (what: string) =>
    reason("no-change-expected", `${load(m)}; ${what}, none expected yet: ${quiet.why} (at ${LOWEST_HEALTHY_STEPS_PER_SECOND} step/s, ${formatSeconds(quiet.seconds)})`);
  if (waits === 0) {
    if (quiet.seconds > 0) return { state: "busy", reasons: [expected("work arrived since the last read")], waits, line: load(m) };
    // Work arrived after an idle read: the first wait that counts towards "stuck" starts now.
    return { state: "stalled", reasons: [reason("work-arrived", `${load(m)}: work arrived since the last read, no progress yet`)], waits, line: load(m) };
  }
  if (!flatIsEvidence(window, evidence)) {
    // "No progress" would be a guess, and a restart needs evidence: garbage metrics are never "stuck".
    return {
      state: "unknown",
      reasons: [reason("progress-unreadable", `${load(m)}; progress cannot be read: ${describeEvidence(evidence)} not readable at both ends of the last ${formatSeconds(flatFor)}`)],
      waits,
      line: load(m),
    };
  }
  if (flatFor < quiet.seconds) {
    return { state: "busy", reasons: [expected(`no change in ${formatSeconds(flatFor)} across ${waits + 1} reads`)], waits, line: load(m) };
  }
  const line = `${load(m)}, 0 new steps in ${formatSeconds(flatFor)} across ${waits + 1} reads`;
  const evidenceLine = reason("no-progress", `${line}; ${describeFlat(m, window)}`);
  const queuedOnly = m.running === 0 ? [reason("queued-not-scheduled", "queued requests are not being scheduled (a known vLLM hang pattern, not idle)")] : [];
  const need = Math.max(t.stuckAfterSeconds, minWindow, Math.ceil(quiet.seconds));
  const longer =
    need > t.stuckAfterSeconds
      ? quiet.seconds > minWindow
        ? ` (${quiet.why}: at least ${need} s)`
        : ` (this engine refreshes its figures slowly: at least ${minWindow} s)`
      : "";
  if (waits >= 2 && flatFor >= need) {
    return { state: "stuck", reasons: [evidenceLine, ...queuedOnly, reason("no-progress-stuck", `no progress across ${waits} waits and at least ${need} s${longer}`)], waits, line };
  }
  return { state: "stalled", reasons: [evidenceLine, ...queuedOnly, reason("no-progress-stalled", `would be called stuck after 2 waits and ${need} s without progress${longer}`)], waits, line };
}

/** The slowest step rate a healthy engine with work is taken to keep (docs/engines.md "Cadence"). */
export const LOWEST_HEALTHY_STEPS_PER_SECOND = 1;

/**
 * How long an engine with work may show no change before its flat figures say anything: the time
 * the engine needs, at LOWEST_HEALTHY_STEPS_PER_SECOND, before a change would show at all. Two
 * causes, stated by the adapter: figures written only when the scheduler logs (SGLang: every 40
 * decode steps, unless a per-step counter is among the evidence), and values printed with few
 * significant digits (llama.cpp: 6, so past 10^6 n_decode_total moves in printed steps of 10, past
 * 10^8 of 1000). Inside it a flat read is "no change expected yet" (busy), and "stuck" waits for it too.
 */
function quietSeconds(window: EngineSlice[], m: EngineMetrics, updates: EngineUpdates | undefined): { seconds: number; why: string } {
  const evidence = m.evidence ?? DEFAULT_EVIDENCE;
  const last = window[window.length - 1];
  let steps = 0;
  let why = "";
  const perStep = evidence.some((k) => last[k] != null && (m.cadence?.[k] ?? "step") === "step");
  if (updates?.schedulerLogSteps && !perStep) {
    steps = updates.schedulerLogSteps;
    why = `its figures are written only when its scheduler logs, every ${updates.schedulerLogSteps} decode steps`;
  }
  const digits = updates?.printedDigits;
  if (digits) {
    for (const k of evidence) {
      const v = k === "throughput" ? null : last[k];
      if (v == null || v < 10 ** digits) continue;
      const step = 10 ** (Math.floor(Math.log10(v)) - digits + 1);
      if (step > steps) {
        steps = step;
        why = `it prints ${digits} significant digits, so at ${v.toPrecision(digits)} ${describeEvidence([k]).replace(/ is$/, "")} move in printed steps of ${formatFigure(step)}`;
      }
    }
  }
  return { seconds: steps / LOWEST_HEALTHY_STEPS_PER_SECOND, why };
}

/**
 * Walk back over the reads that all had work and showed no progress across them; the index the
 * flat run is measured from. The whole window is compared, not neighbours only: a scrape that hid a
 * family (null) must not turn "steps 10 -> (hidden) -> 20" into two flat waits.
 */
function flatBase(slices: Array<EngineSlice | null>): number {
  let base = slices.length - 1;
  while (base > 0) {
    const earlier = slices[base - 1];
    if (!earlier || !hasWork(earlier)) break;
    if (progressIn(slices.slice(base - 1) as EngineSlice[])) break;
    base--;
  }
  return base;
}

/**
 * The reading a hang in progress is measured from (the first of the reads with work and no
 * progress since, on the whole server or on any one engine: the earliest), or null when the newest
 * read shows no such run. The watcher keeps it when it trims its history, so "0 new steps in N s"
 * keeps growing with the hang past the window.
 */
export function flatRunStart(all: Reading[]): Reading | null {
  if (noFlatRun(all)) return null;
  return flatRunStartOf(all);
}

/**
 * The common case in a few reads rather than the whole window (the watcher trims its history after
 * every read, a replay after each of ~120k): the newest read shows progress since the one before
 * it, or no work, on the server and on every engine. flatBase then stops at once for each, and
 * flatRunStartOf would answer null. False when that cannot be told from the two newest reads.
 */
function noFlatRun(all: Reading[]): boolean {
  const cur = all[all.length - 1];
  const m = cur?.metrics;
  if (!m) return false;
  let prev: Reading | undefined;
  for (let i = all.length - 2; i >= 0 && !prev; i--) if (all[i].metrics) prev = all[i];
  // A new process (or none before): the segment is this read alone.
  if (!prev || !sameProcess(prev.metrics!, m)) return true;
  for (const id of [null, ...Object.keys(m.engines ?? {})]) {
    const last = sliceOf(cur, id);
    if (!last || !hasWork(last)) continue;
    const earlier = sliceOf(prev, id);
    // progressed(a, b) is progressIn([a, b]): flatBase's first step.
    if (earlier && hasWork(earlier) && !progressed(earlier, last)) return false;
  }
  return true;
}

/** flatRunStart without the shortcut (tests hold that both agree). */
export function flatRunStartOf(all: Reading[]): Reading | null {
  const segment = currentProcess(all);
  const m = segment.at(-1)?.metrics;
  if (!m || (m.running === 0 && m.waiting === 0)) return null;
  let earliest = segment.length - 1;
  for (const id of [null, ...Object.keys(m.engines ?? {})]) {
    const slices = segment.map((r) => sliceOf(r, id));
    const last = slices[slices.length - 1];
    if (!last || !hasWork(last)) continue;
    earliest = Math.min(earliest, flatBase(slices));
  }
  return earliest < segment.length - 1 ? segment[earliest] : null;
}

/**
 * Data parallel (vLLM's `engine` label, checked on 0.29): each engine core is judged on its own,
 * because one engine that holds requests and never steps hides behind the others' progress in the
 * sums. Any engine stuck makes the server stuck, and the reason names it.
 */
function judgeEngines(segment: Reading[], ids: string[], t: Thresholds, minWindow: number, restartNote: Reason[]): Judgement {
  const m = segment[segment.length - 1].metrics!;
  const n = ids.length;
  const judged = ids.map((id) => ({ id, v: judgeSlice(segment, id, t, minWindow) }));
  const name = (id: string) => `engine ${id} of ${n}`;
  const total = reason("dp-total", `${load(m)} over ${n} engines`);
  const stuck = judged.filter((j) => j.v.state === "stuck");
  if (stuck.length > 0) {
    return {
      state: "stuck",
      reasons: [...restartNote, ...stuck.map((j) => reason("dp-stuck", `${name(j.id)}: ${j.v.line}`)), ...stuck[0].v.reasons.slice(1), total],
    };
  }
  // An engine flat for a wait or more is worth watching even while the others progress; one whose
  // work only just arrived is not.
  const watching = judged.filter((j) => (j.v.state === "stalled" && j.v.waits > 0) || j.v.state === "unknown");
  const busy = judged.filter((j) => j.v.state === "busy");
  if (watching.length > 0) {
    const state = watching.some((j) => j.v.state === "stalled") ? "stalled" : "unknown";
    return {
      state,
      reasons: [
        ...restartNote,
        ...watching.map((j) => reason(j.v.state === "stalled" ? "dp-stalled" : "dp-unreadable", `${name(j.id)}: ${reasonText(j.v.reasons)}`)),
        ...busy.map((j) => reason("dp-progress", `${name(j.id)}: ${j.v.reasons[0].text}`)),
        total,
      ],
    };
  }
  if (busy.length > 0) return { state: "busy", reasons: [...restartNote, reason("dp-all-progress", `${total.text}; ${busy.map((j) => `${name(j.id)}: ${j.v.reasons[0].text}`).join("; ")}`)] };
  const arrived = judged.filter((j) => j.v.state === "stalled");
  if (arrived.length > 0) return { state: "stalled", reasons: [...restartNote, ...arrived.map((j) => reason("dp-work-arrived", `${name(j.id)}: ${j.v.reasons[0].text}`))] };
  // Work only in the sums (an engine set that changed between reads): judge the sums.
  const whole = judgeSlice(segment, null, t, minWindow);
  if (whole.state === "none") return { state: "unknown", reasons: [...restartNote, reason("no-judgeable-figure", `${load(m)}: no figure the engine can be judged by`)] };
  return { state: whole.state, reasons: [...restartNote, ...whole.reasons] };
}

function judgeNoWork(segment: Reading[], unproven: boolean, restartNote: Reason[], t: Thresholds, probe: ProbeChoice, cur: Reading): Judgement {
  if (probe === "none") {
    return {
      state: "idle",
      reasons: [...restartNote, reason("probe-none", "0 running, 0 waiting; probe: none in the config, so idle is judged from the metrics alone")],
    };
  }
  const probed = segment.filter((r) => r.probe);
  const last = probed.at(-1)?.probe;
  if (!last && cur.engine && rulesOf(cur.engine).idleProvenByMetrics) {
    return {
      state: "idle",
      reasons: [
        ...restartNote,
        reason(
          "idle-loop-answered",
          `0 running, 0 waiting; ${ENGINE_LABELS[cur.engine]}'s engine loop answered /metrics itself, so it turns; not probed (a request would restart its idle-sleep countdown and keep a server configured to sleep awake)`,
        ),
      ],
    };
  }
  if (!last) {
    const notProbed = reason("not-probed", "nothing running or waiting; not yet probed");
    if (unproven) return { state: "starting", reasons: [...restartNote, notProbed] };
    return { state: "unknown", reasons: [notProbed] };
  }
  const fallback = last.fallbackFrom ? ` (${last.kind}: ${last.fallbackFrom} answered 404/405)` : "";
  if (last.ok) {
    const ago = cur.probe ? "" : ` ${formatSeconds((cur.at - last.at) / 1000)} ago`;
    return { state: "idle", reasons: [...restartNote, reason("probe-answered", `0 running, 0 waiting; the probe answered${ago} in ${last.latencyMs} ms${fallback}`)] };
  }
  if (last.cannotSucceed === "auth") {
    // /metrics needs no key, /v1/* does (vLLM --api-key): the engine is not at fault.
    const problem = `the probe needs the API key: ${last.status ?? 401}`;
    return { state: "unknown", configProblem: problem, reasons: [...restartNote, reason("probe-auth", `0 running, 0 waiting; ${problem} (set apiKey for this backend); never called stuck for it`)] };
  }
  if (last.cannotSucceed === "no-endpoint") {
    const problem = `no probe endpoint answers (${last.error ?? `HTTP ${last.status}`}): set probe in the config ("none" judges idle from metrics alone)`;
    return { state: "unknown", configProblem: problem, reasons: [...restartNote, reason("probe-no-endpoint", `0 running, 0 waiting; ${problem}`)] };
  }
  const failed = trailingFailedProbes(probed);
  const why = last.error ?? (last.status ? `HTTP ${last.status}` : "no answer");
  const up = (cur.at - segment[0].at) / 1000;
  if (unproven && !(failed >= 2 && up >= t.stuckAfterSeconds)) {
    // A fresh process may refuse work while it warms up; give it stuckAfterSeconds.
    return { state: "starting", reasons: [...restartNote, reason("starting-probe-failed", `nothing running or waiting; the probe failed (${why}) ${failed} time${failed === 1 ? "" : "s"} since the new process came up`)] };
  }
  if (failed >= 2) {
    return {
      state: "stuck",
      reasons: [...restartNote, reason("probe-failed-stuck", `0 running, 0 waiting, but the probe failed on ${failed} consecutive reads (last: ${why})`)],
    };
  }
  return { state: "stalled", reasons: [...restartNote, reason("probe-failed-once", `0 running, 0 waiting, but the probe failed once (${why}); re-probing`)] };
}

const CONNECTION_FAILURES = new Set(["refused", "reset"]);

function judgeFailedRead(all: Reading[], t: Thresholds): Judgement {
  const cur = all[all.length - 1];
  if (cur.loading) {
    return { state: "starting", reasons: [reason("loading", `${cur.error ?? "loading the model"}: it answers but is not ready yet (not down)`)] };
  }
  if (cur.noMetrics) return judgeNoMetrics(cur);
  if (cur.outcome === "http-error" && (cur.status === 401 || cur.status === 403)) {
    // The read itself was refused (llama.cpp --api-key guards /metrics and /props too; a proxy in
    // front of any engine may): the key is missing or wrong, on whichever engine. Not the engine's fault.
    const problem = `/metrics answered HTTP ${cur.status}: the server needs an API key (set apiKey for this backend)`;
    return { state: "unknown", configProblem: problem, reasons: [reason("metrics-auth", `${problem}; never called stuck or down for it`)] };
  }

  // The unanswered reads at the end of the history.
  let i = all.length - 1;
  while (i >= 0 && !all[i].metrics && !all[i].noMetrics && !all[i].loading && !isAsleep(all[i]) && (isConnectionFailure(all[i]) || all[i].outcome === "timeout")) i--;
  const streak = all.slice(i + 1);
  let refusedInARow = 0;
  for (let k = streak.length - 1; k >= 0 && isConnectionFailure(streak[k]); k--) refusedInARow++;

  if (refusedInARow >= 2) {
    // Down is a fact. A restart recommendation needs more: vLLM does not listen while it loads its
    // weights (minutes), so a server restarted by systemd or after a crash refuses exactly like a
    // dead one, and confirming a restart then starts the load over (checked on vLLM 0.29).
    const span = (cur.at - streak[streak.length - refusedInARow].at) / 1000;
    const grace = t.startupGraceSeconds ?? DEFAULT_THRESHOLDS.startupGraceSeconds ?? 600;
    const fact = reason("down-refused", `${cur.error ?? cur.outcome} on /metrics and /health on ${refusedInARow} consecutive reads over ${formatSeconds(span)}`);
    if (!restartRecommended("down", { refusedSeconds: span, startupGraceSeconds: grace })) {
      return {
        state: "down",
        restartRecommended: false,
        reasons: [reason("down-grace", `down for ${formatMinutes(span)}; may be loading weights; restart recommended after ${formatMinutes(grace)}`), fact],
      };
    }
    return { state: "down", reasons: [reason("down-past-grace", `down for ${formatMinutes(span)} (refused for longer than startupGraceSeconds, ${grace} s): restart recommended`), fact] };
  }
  // A /metrics that times out while /health answers is a slow API server (a huge tokenization, a
  // blocked event loop), not a dead one. Only timeouts with /health failing too count towards down.
  let d = streak.length;
  while (d > 0 && (isConnectionFailure(streak[d - 1]) || (streak[d - 1].outcome === "timeout" && healthFailed(streak[d - 1])))) d--;
  const dead = streak.slice(d);
  if (dead.length >= 2 && dead.some((r) => r.outcome === "timeout")) {
    const span = (cur.at - dead[0].at) / 1000;
    if (span >= t.stuckAfterSeconds) {
      return {
        state: "down",
        reasons: [reason("down-timeout", `no answer from /metrics and /health on ${dead.length} reads in a row for ${formatSeconds(span)} (over ${t.stuckAfterSeconds} s)`)],
      };
    }
  }
  // llama.cpp serves /metrics from its engine loop: timeouts there while /health answers are a
  // blocked loop (a device call that never returns), judged like "no progress" across two waits.
  if (rulesOf(cur.engine).metricsOnEngineLoop && cur.outcome === "timeout" && cur.health?.outcome === "ok") {
    let k = all.length - 1;
    while (k >= 0 && all[k].outcome === "timeout" && all[k].health?.outcome === "ok" && !all[k].metrics) k--;
    const blocked = all.slice(k + 1);
    const span = (cur.at - blocked[0].at) / 1000;
    const fact = reason(
      "loop-blocked",
      `${ENGINE_LABELS[cur.engine!]} answers /health but not /metrics (a task on its engine loop) on ${blocked.length} read${blocked.length === 1 ? "" : "s"} over ${formatSeconds(span)}: the loop is blocked`,
    );
    if (blocked.length >= 3 && span >= t.stuckAfterSeconds) {
      return { state: "stuck", reasons: [fact, reason("loop-blocked-stuck", `no answer from the engine loop across ${blocked.length - 1} waits and at least ${t.stuckAfterSeconds} s`)] };
    }
    return { state: "stalled", reasons: [fact, reason("loop-blocked-stalled", `would be called stuck after 2 waits and ${t.stuckAfterSeconds} s`)] };
  }
  const what = describeFailure(cur);
  if (streak.length >= 1 && isConnectionFailure(cur)) {
    return { state: "unknown", reasons: [reason("one-failed-read", `${what}; one failed read is not "down"`)] };
  }
  if (cur.outcome === "timeout") {
    const slow = cur.health?.outcome === "ok" ? "/health answers 200: a slow API server, not a dead one" : "a slow answer from a loaded API server is not a dead one";
    return {
      state: "unknown",
      reasons: [reason("metrics-timeout", `${what} (${streak.length} read${streak.length === 1 ? "" : "s"} in a row); ${slow}`)],
    };
  }
  return { state: "unknown", reasons: [reason("cannot-judge", `${what}; cannot judge from this read`)] };
}

function judgeNoMetrics(cur: Reading): Judgement {
  const alive = cur.models?.outcome === "ok";
  // The list is capped where it was read (lib/core/caps.ts): count what it stands for.
  const n = countOf(cur.models?.ids ?? []);
  const models = `${n} model${n === 1 ? "" : "s"}${n > 0 ? ` (${namesOf(cur.models!.ids).slice(0, 5).join(", ")}${n > 5 ? ", …" : ""})` : ""}`;
  if (cur.engine === "ollama") {
    if (!alive) return { state: "unknown", reasons: [reason("no-metrics-unreachable", `Ollama: /api/version failed (${cur.error ?? cur.models?.outcome ?? "not asked"})`)] };
    return { state: "no-metrics", reasons: [
        reason("no-metrics", `${cur.error ?? "Ollama"}: Ollama exposes no load metrics: liveness only, never probed, never called stuck`),
        reason("no-metrics-alive", `alive: /api/version answers; loaded: ${models}`),
      ], };
  }
  if (alive) {
    return {
      state: "no-metrics",
      reasons: [
        reason("no-metrics", `/metrics is not readable as an engine's (${cur.error ?? "no known engine's series"}); load cannot be judged, so it is never called stuck`),
        reason("no-metrics-alive", `alive: /v1/models answers with ${models}`),
      ],
    };
  }
  return { state: "unknown", reasons: [reason("no-metrics-unreachable", `${cur.error ?? "/metrics is not an engine's"} and /v1/models failed (${cur.models?.outcome ?? "not asked"})`)] };
}

function isConnectionFailure(r: Reading): boolean {
  if (!CONNECTION_FAILURES.has(r.outcome)) return false;
  // /health is asked too: a refused /metrics with a live /health is not a dead server.
  return !r.health || r.health.outcome !== "ok";
}

/** /health was asked and did not answer 2xx (a reading without it says nothing). */
function healthFailed(r: Reading): boolean {
  return r.health !== undefined && r.health.outcome !== "ok";
}

function describeFailure(r: Reading): string {
  const base = r.error ?? r.outcome;
  if (r.health) return `/metrics: ${base}; /health: ${r.health.outcome}${r.health.status ? ` (HTTP ${r.health.status})` : ""}`;
  return `/metrics: ${base}`;
}

/** The readings with metrics of the process that produced the newest one, oldest first. */
export function currentProcess(all: Reading[]): Reading[] {
  const n = all.length;
  if (n === 0 || !all[n - 1].metrics) return [];
  // One walk back over the readings with metrics, then one copy of the segment found.
  let start = n - 1;
  for (let i = n - 2; i >= 0; i--) {
    const m = all[i].metrics;
    if (!m) continue;
    if (!sameProcess(m, all[start].metrics!)) break;
    start = i;
  }
  const out: Reading[] = [];
  for (let i = start; i < n; i++) if (all[i].metrics) out.push(all[i]);
  return out;
}

/**
 * Two readings come from one process when their start times agree (or llama.cpp's start token);
 * without either (vLLM with several API servers, SGLang, TGI) a counter that went down, in the
 * sums or in any one engine, is the only restart signal.
 */
export function sameProcess(a: EngineMetrics, b: EngineMetrics): boolean {
  if (a.processStartTime !== null && b.processStartTime !== null) {
    return Math.abs(a.processStartTime - b.processStartTime) < 1e-3;
  }
  if (a.processToken && b.processToken) return a.processToken === b.processToken;
  if (countersWentDown(a, b)) return false;
  for (const [id, e] of Object.entries(b.engines ?? {})) {
    const before = a.engines?.[id];
    if (before && countersWentDown(before, e)) return false;
  }
  return true;
}

function countersWentDown(a: EngineSlice, b: EngineSlice): boolean {
  for (const k of COUNTERS) if (a[k] !== null && b[k] !== null && (b[k] as number) < (a[k] as number)) return true;
  return false;
}

const COUNTERS = PROGRESS_COUNTERS;

/** A KV-cache change counts only when no request was preempted in between (preemption churn, vLLM #25538). */
function kvMoved(a: EngineSlice, b: EngineSlice): boolean {
  if (a.kvCacheUsage === null || b.kvCacheUsage === null || Math.abs(b.kvCacheUsage - a.kvCacheUsage) <= 1e-9) return false;
  const churn = a.preemptions != null && b.preemptions != null && b.preemptions > a.preemptions;
  return !churn;
}

/** A throughput gauge that is positive and changed (an unchanged one is the stale gauge of an engine that stopped logging). */
function throughputMoved(a: EngineSlice, b: EngineSlice): boolean {
  return a.throughput != null && b.throughput != null && b.throughput > 0 && Math.abs(b.throughput - a.throughput) > 1e-9;
}

/**
 * Progress is any sign of engine work: a step, prompt or generation tokens, a request that finished
 * by itself (aborted and errored ones are left out by the adapter: clients giving up on a wedged
 * engine must not make it look alive), a KV-cache change without preemptions (a long chunked
 * prefill moves only the KV cache for tens of seconds), or a live throughput gauge.
 */
export function progressed(a: EngineSlice, b: EngineSlice): boolean {
  // A loop, not .some with a closure: this runs several times per classify.
  for (const k of COUNTERS) if (a[k] !== null && b[k] !== null && (b[k] as number) > (a[k] as number)) return true;
  return kvMoved(a, b) || throughputMoved(a, b);
}

/**
 * Progress anywhere across `rs` (one process, oldest first): a counter whose readable values rise
 * from the first to the last reading that has it, or a KV-cache / throughput change between two
 * readings. Readings where a family was unusable (null) are skipped, not taken as "no change".
 */
function progressIn(rs: EngineSlice[]): boolean {
  for (const k of COUNTERS) {
    const vs = rs.map((r) => r[k]).filter((v): v is number => v !== null);
    if (vs.length >= 2 && vs[vs.length - 1] > vs[0]) return true;
  }
  for (let i = 1; i < rs.length; i++) if (kvMoved(rs[i - 1], rs[i]) || throughputMoved(rs[i - 1], rs[i])) return true;
  return false;
}

const DEFAULT_EVIDENCE: EvidenceFigure[] = ["steps", "promptTokens", "generationTokens"];

/**
 * Whether a window without progress is evidence of a hang: every figure readable anywhere in it is
 * readable at both of its ends (a family hidden at one end may have moved), and one of the figures
 * the adapter named as evidence is among them (finished requests and KV use can stay flat for
 * minutes of healthy decoding; llama.cpp's token counters move only when a request ends).
 */
function flatIsEvidence(window: EngineSlice[], evidence: EvidenceFigure[] = DEFAULT_EVIDENCE): boolean {
  const first = window[0];
  const last = window[window.length - 1];
  const figure = (s: EngineSlice, k: EvidenceFigure | (typeof COUNTERS)[number] | "kvCacheUsage") => (s[k] ?? null) as number | null;
  for (const k of [...COUNTERS, "kvCacheUsage" as const, ...evidence]) {
    const seen = window.some((r) => figure(r, k) !== null);
    if (seen && (figure(first, k) === null || figure(last, k) === null)) return false;
  }
  return evidence.some((k) => figure(first, k) !== null && figure(last, k) !== null);
}

function servedInSegment(segment: Reading[]): boolean {
  for (let i = 1; i < segment.length; i++) if (progressed(segment[i - 1].metrics!, segment[i].metrics!)) return true;
  return segment.some((r) => r.probe?.ok);
}

/** Has a process other than the one seen when the restart was asked for shown up since? */
function newProcessSince(all: Reading[], pending: PendingRestart): boolean {
  let before: EngineMetrics | null = null;
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

/** Failed probes in a row at the end, not counting those that could never have succeeded (nor, ending the count, one seen late). */
function trailingFailedProbes(probed: Reading[]): number {
  let n = 0;
  const failed = (p: Reading["probe"]) => p && !p.ok && !p.cannotSucceed && p.watcherLateMs === undefined;
  for (let i = probed.length - 1; i >= 0 && failed(probed[i].probe); i--) n++;
  return n;
}

/** The newest reading with metrics among the first `end` of `rs` (no copy of them). */
function lastWithMetrics(rs: Reading[], end: number): Reading | undefined {
  for (let i = end - 1; i >= 0; i--) if (rs[i].metrics) return rs[i];
  return undefined;
}

/**
 * The rates shown. A figure the engine moves on every step is the rate between the two newest
 * readings of one process. One it moves only when a request ends or its scheduler logs
 * (EngineMetrics.cadence) would read 0 between those and spike after: it is shown as the average
 * over the last RATE_WINDOW_SECONDS instead, or, where the adapter says so (llama.cpp), generation
 * tokens/s is the live step rate × busy slots per step. Null where a counter is missing.
 */
export function ratesOf(all: Reading[]): Rates {
  return ratesOfSegment(currentProcess(all));
}

/** ratesOf over the newest process's readings (currentProcess), found by the caller. */
function ratesOfSegment(seg: Reading[]): Rates {
  if (seg.length < 2) return { stepsPerSecond: null, generationTokensPerSecond: null, promptTokensPerSecond: null };
  const a = seg[seg.length - 2];
  const b = seg[seg.length - 1];
  const m = b.metrics!;
  // Module-level helpers rather than closures: this runs on every classify, a replay's ~120k times.
  const steps = rateOf(seg, a, b, "steps");
  let generation: number | null;
  if (!liveFigure(m, "generationTokens") && rulesOf(b.engine).updates?.generationFromSteps && liveFigure(m, "steps") && steps !== null) {
    // Each busy slot decodes one token per step; without the engine's own average, the running requests.
    const slots = m.slotsPerStep != null && m.slotsPerStep > 0 ? m.slotsPerStep : (a.metrics!.running + m.running) / 2;
    generation = steps * slots;
  } else generation = rateOf(seg, a, b, "generationTokens");
  return { stepsPerSecond: steps, generationTokensPerSecond: generation, promptTokensPerSecond: rateOf(seg, a, b, "promptTokens") };
}

/** A figure the engine moves on every step: its rate is read between the two newest readings. */
function liveFigure(m: EngineMetrics, k: ProgressCounter): boolean {
  return (m.cadence?.[k] ?? "step") === "step";
}

/** k's rate from x to b, per second (null where it cannot be read). */
function rateBetween(x: Reading, b: Reading, k: ProgressCounter): number | null {
  const dt = (b.at - x.at) / 1000;
  const from = x.metrics![k];
  const to = b.metrics![k];
  if (dt <= 0 || from === null || to === null || to < from) return null;
  return (to - from) / dt;
}

function rateOf(seg: Reading[], a: Reading, b: Reading, k: ProgressCounter): number | null {
  if (liveFigure(b.metrics!, k)) return rateBetween(a, b, k);
  const since = b.at - RATE_WINDOW_SECONDS * 1000;
  let first = a;
  for (const r of seg) {
    if (r.at >= since && r.metrics![k] !== null && r !== b) {
      first = r;
      break;
    }
  }
  return rateBetween(first, b, k);
}

/** The window a figure that moves only per request or per scheduler log is averaged over for the rates shown. */
export const RATE_WINDOW_SECONDS = 60;

function verdict(j: Judgement, rates: Rates, basis: Reading[]): Verdict {
  const health = STATE_INFO[j.state].health;
  return {
    state: j.state,
    health,
    healthy: health === "yes",
    restartRecommended: j.restartRecommended ?? restartRecommended(j.state),
    reasons: j.reasons,
    ...(j.configProblem ? { configProblem: j.configProblem } : {}),
    rates,
    basis: basis.slice(-3),
  };
}

function describeRestart(before: EngineMetrics, after: EngineMetrics): string {
  if (before.processStartTime !== null && after.processStartTime !== null) {
    return `new process since the last read (start time ${isoSeconds(before.processStartTime)} -> ${isoSeconds(after.processStartTime)}); counters of two processes are not compared`;
  }
  if (before.processToken && after.processToken) {
    return `new process since the last read (Process-Start-Time-Unix ${before.processToken} -> ${after.processToken}); counters of two processes are not compared`;
  }
  return "new process since the last read (a counter went down; no start time exposed); counters of two processes are not compared";
}

function counterDelta(x: EngineSlice, y: EngineSlice, k: ProgressCounter): number {
  return x[k] !== null && y[k] !== null ? (y[k] as number) - (x[k] as number) : 0;
}

function describeProgress(x: EngineSlice, y: EngineSlice, seconds: number): string {
  const parts: string[] = [];
  const steps = counterDelta(x, y, "steps");
  const generation = counterDelta(x, y, "generationTokens");
  const prompt = counterDelta(x, y, "promptTokens");
  const finished = counterDelta(x, y, "finishedRequests");
  if (steps > 0) parts.push(`+${formatFigure(steps)} steps`);
  if (generation > 0) parts.push(`+${formatFigure(generation)} generation tokens`);
  if (prompt > 0) parts.push(`+${formatFigure(prompt)} prompt tokens`);
  if (finished > 0) parts.push(`+${formatFigure(finished)} finished`);
  if (parts.length === 0 && throughputMoved(x, y)) parts.push(`throughput ${formatFigure(x.throughput!)} -> ${formatFigure(y.throughput!)} tokens/s`);
  if (parts.length === 0 && x.kvCacheUsage !== null && y.kvCacheUsage !== null) {
    parts.push(`KV cache ${formatShare(x.kvCacheUsage)} -> ${formatShare(y.kvCacheUsage)} (prefill in progress)`);
  }
  return `${parts.join(", ")} in ${formatSeconds(seconds)}`;
}

function describeFlat(m: EngineSlice, window: EngineSlice[]): string {
  const kv = m.kvCacheUsage === null ? "" : `, KV cache unchanged at ${formatShare(m.kvCacheUsage)}`;
  const first = window[0];
  const churn =
    first.preemptions != null && m.preemptions != null && m.preemptions > first.preemptions
      ? `; ${formatFigure(m.preemptions - first.preemptions)} preemptions meanwhile (KV-cache churn is not progress)`
      : "";
  const moved = first.kvCacheUsage !== null && m.kvCacheUsage !== null && Math.abs(first.kvCacheUsage - m.kvCacheUsage) > 1e-9;
  const kvText = churn && moved ? `, KV cache ${formatShare(first.kvCacheUsage!)} -> ${formatShare(m.kvCacheUsage!)}` : kv;
  const stale = m.throughput != null && m.throughput > 0 ? `, throughput gauge stuck at ${formatFigure(m.throughput)} tokens/s` : "";
  return `no new tokens or finished requests${kvText}${stale}${churn}`;
}

function describeEvidence(evidence: EvidenceFigure[] = DEFAULT_EVIDENCE): string {
  const names: Record<EvidenceFigure, string> = { steps: "engine steps", promptTokens: "prompt tokens", generationTokens: "generation tokens", throughput: "the throughput gauge" };
  return evidence.map((e) => names[e]).join(" and ") + (evidence.length === 1 ? " is" : " are");
}

function load(m: EngineSlice): string {
  const deferred = m.waitingCapacity != null && m.waiting > m.waitingCapacity ? ` (${formatFigure(m.waiting - m.waitingCapacity)} deferred)` : "";
  return `${formatFigure(m.running)} running, ${formatFigure(m.waiting)} waiting${deferred}`;
}

function numericOrder(a: string, b: string): number {
  const x = Number(a);
  const y = Number(b);
  return Number.isFinite(x) && Number.isFinite(y) ? x - y : a.localeCompare(b);
}

function secondsBetween(from: number, to: number): string {
  return formatSeconds(Math.max(0, (to - from) / 1000));
}

function isoSeconds(unix: number): string {
  // A scraped start time may be any positive float (1e300): past Date's range, print the number
  // rather than throw (the classifier never throws).
  const d = new Date(unix * 1000);
  return Number.isNaN(d.getTime()) ? `${unix} s` : d.toISOString().replace(".000Z", "Z");
}
