/**
 * The words of a replay (a stored period of readings re-judged with other thresholds) and of the
 * advice drawn from it: the record kept per reading, the report, the advice. Here because four
 * layers speak them: db/ stores the record, lib/check/replay.ts makes the report, the CLI prints it
 * and lib/api answers it (its DTOs are these types). Pure.
 */
import { capList, capText } from "./caps";
import type { BackendState } from "./states";
import type { Reading, Reason } from "./types";

/** How many days of replay records are kept per backend by default (config `history.replayDays`). */
export const DEFAULT_REPLAY_DAYS = 7;
/** The most `history.replayDays` may say: a record past it would be a second sample table. */
export const MAX_REPLAY_DAYS = 31;

/**
 * The part of a reading the classifier reads (lib/check/classify.ts) and nothing else: no byte
 * counts, no latency histograms (vLLM's cumulative buckets are most of a stored reading), no model
 * list in the metrics (the classifier names models only from /v1/models, kept to five names and a
 * count). Lists and texts are capped (lib/core/caps.ts) like everything kept from a backend, so one
 * record has a bound whatever the backend sends.
 */
export function replayRecord(r: Reading): Reading {
  const { bytes: _bytes, latency: _latency, ...rest } = r;
  const out: Reading = { ...rest, latencyMs: Math.round(r.latencyMs) };
  if (r.error !== undefined) out.error = capText(r.error);
  if (r.metrics) out.metrics = { ...r.metrics, models: [] };
  if (r.models) out.models = { ...r.models, ids: capList(r.models.ids, 5) };
  if (r.probe?.error !== undefined) out.probe = { ...r.probe, error: capText(r.probe.error) };
  return out;
}

/**
 * A reading's stored text, written once per read: the sample's `reading` column (what the watcher
 * seeds its history from after a restart, decodeReading) and the replay row's (decodeRecord: its
 * replayRecord) are this one string. The reading's JSON with its field names shortened (a week of
 * 1000 backends is ~120 million replay rows, and a vLLM reading's names were two thirds of its
 * bytes), the adapter's evidence and cadence words as letters, and what is never stored left out
 * (NOT_STORED). Names this table does not know are kept as they are (no short name is a field name),
 * so a field added to Reading later is stored, longer, rather than lost, and a sample written before
 * the names were shortened (the whole reading's JSON) reads back as it was.
 * decodeReading(encodeRecord(r), r.at) deep-equals r less NOT_STORED; decodeRecord(encodeRecord(r),
 * r.at) deep-equals replayRecord(r).
 */
const SHORT: Record<string, string> = {
  latencyMs: "l", outcome: "o", status: "s", error: "E", engine: "e", asleep: "z", loading: "L", noMetrics: "N",
  health: "h", models: "O", ids: "i", probe: "q", watcherLateMs: "t", metrics: "m", bytes: "B",
  // ProbeResult
  ok: "K", at: "A", kind: "d", fallbackFrom: "f", cannotSucceed: "C",
  // EngineMetrics / EngineSlice
  running: "r", waiting: "w", waitingCapacity: "W", steps: "S", promptTokens: "P", generationTokens: "G",
  finishedRequests: "F", kvCacheUsage: "k", preemptions: "x", throughput: "T", slotsPerStep: "b",
  processStartTime: "p", processToken: "n", engines: "g", sleepLevel: "Z", evidence: "v", cadence: "c",
};
const LONG: Record<string, string> = Object.fromEntries(Object.entries(SHORT).map(([k, v]) => [v, k]));
const WORDS: Record<string, string> = {
  steps: "s", promptTokens: "p", generationTokens: "g", finishedRequests: "f", throughput: "t",
  step: "S", "scheduler-log": "L", "request-end": "R", "scrape-window": "W",
};
const UNWORD: Record<string, string> = Object.fromEntries(Object.entries(WORDS).map(([k, v]) => [v, k]));

/**
 * A reading's fields that are never stored with it: `at` has its own column; vLLM's cumulative
 * histograms stay in memory for the next read's deltas (the sample keeps their figures, most of a
 * stored reading otherwise); the raw body is kept apart, for evidence (lib/watcher/kept-bodies.ts).
 */
const NOT_STORED = new Set(["at", "latency", "rawBody"]);

/** Objects whose keys are data (an engine id), not field names: their values are renamed, their keys kept. */
const KEYED = new Set(["engines"]);

function rename(x: unknown, names: Record<string, string>, keyed: boolean): unknown {
  if (Array.isArray(x)) return x.map((v) => rename(v, names, false));
  if (x === null || typeof x !== "object") return x;
  const out: Record<string, unknown> = {};
  for (const k in x) {
    const v = (x as Record<string, unknown>)[k];
    if (keyed) {
      out[k] = rename(v, names, false);
      continue;
    }
    const long = names === SHORT ? k : (LONG[k] ?? k);
    out[names[k] ?? k] = rename(v, names, KEYED.has(long));
  }
  return out;
}

export function encodeRecord(r: Reading): string {
  const out: Record<string, unknown> = {};
  for (const k in r) {
    const v = (r as unknown as Record<string, unknown>)[k];
    if (v === undefined || NOT_STORED.has(k)) continue;
    out[SHORT[k] ?? k] = k === "metrics" && v !== null ? encodeMetrics(v as NonNullable<Reading["metrics"]>) : rename(v, SHORT, false);
  }
  return JSON.stringify(out);
}

function encodeMetrics(m: NonNullable<Reading["metrics"]>): unknown {
  return rename(
    {
      ...m,
      // Letters only when every word has one: an adapter's new word is kept as it is.
      evidence: m.evidence?.every((e) => WORDS[e]) ? m.evidence.map((e) => WORDS[e]).join("") : m.evidence,
      cadence: m.cadence && Object.entries(m.cadence).every(([k, v]) => WORDS[k] && WORDS[v!]) ? Object.entries(m.cadence).map(([k, v]) => `${WORDS[k]}${WORDS[v!]}`).join(",") : m.cadence,
    },
    SHORT,
    false,
  );
}

/** The reading as stored with its sample (encodeRecord's text), `at` from its column. */
export function decodeReading(text: string, at: number): Reading {
  const r = rename(JSON.parse(text), LONG, false) as Reading;
  const m = r.metrics as (Record<string, unknown> & { evidence?: unknown; cadence?: unknown }) | null;
  if (m) {
    if (typeof m.evidence === "string") m.evidence = [...m.evidence].map((c) => UNWORD[c] ?? c);
    if (typeof m.cadence === "string") {
      m.cadence = Object.fromEntries(m.cadence.split(",").filter(Boolean).map((p) => [UNWORD[p[0]] ?? p[0], UNWORD[p.slice(1)] ?? p.slice(1)]));
    }
  }
  r.at = at;
  return r;
}

/** The replay record of a stored reading (encodeRecord's text; a replay row written before it was shared holds the record itself). */
export function decodeRecord(text: string, at: number): Reading {
  return replayRecord(decodeReading(text, at));
}

/**
 * A chunk of the record: consecutive records of one backend in one JSON text (stored deflated,
 * db/queries/replay.ts). Each record is written as what changed since the one before it in the
 * chunk (a busy server's reading differs from the last in a few counters and the latency; the
 * engine, the start time, the evidence words, /health and most gauges repeat), so a chunk is a
 * few bytes a reading once deflated, and reads back with one JSON.parse. Entries:
 * `[ms since the last (the first: since firstAt), state (0: as the entry before), recommended 0|1,
 * changed fields, changed metrics fields, fields gone, metrics fields gone]`, trailing empty ones
 * left off (0). The first entry is the whole record; the fields named in the others are shortened
 * as in encodeRecord (SHORT: the text JSON.parse reads back is most of a read), their values kept as
 * they are; a name SHORT does not know is kept, so a field added to Reading later is stored too.
 * decodeChunk(encodeChunk(rows), rows[0].reading.at) deep-equals the rows' replayRecord.
 */
type ChunkEntry = [number, BackendState | 0, 0 | 1, Record<string, unknown> | 0, Record<string, unknown> | 0, string[] | 0, string[] | 0];
type Fields = Record<string, unknown>;

const same = (a: unknown, b: unknown) => a === b || (typeof a === "object" && a !== null && typeof b === "object" && b !== null && JSON.stringify(a) === JSON.stringify(b));

/** What changed from `prev` to `cur` (undefined is absent, as JSON has it), named short. */
function diff(prev: Fields, cur: Fields, skip: string | null): { set: Fields | 0; gone: string[] | 0 } {
  let set: Fields | 0 = 0;
  let gone: string[] | 0 = 0;
  for (const k of Object.keys(cur)) {
    if (k === skip || cur[k] === undefined || same(prev[k], cur[k])) continue;
    (set ||= {})[SHORT[k] ?? k] = cur[k];
  }
  for (const k of Object.keys(prev)) if (k !== skip && prev[k] !== undefined && cur[k] === undefined) (gone ||= []).push(SHORT[k] ?? k);
  return { set, gone };
}

export function encodeChunk(rows: readonly ReplayRow[]): string {
  const entries: ChunkEntry[] = [];
  let last = rows[0]?.reading.at ?? 0;
  let prev: Fields | null = null;
  let state: BackendState | null = null;
  for (const row of rows) {
    const { at, ...cur } = replayRecord(row.reading) as Reading & Fields;
    const head: [number, BackendState | 0, 0 | 1] = [at - last, row.state === state ? 0 : row.state, row.recommended ? 1 : 0];
    last = at;
    state = row.state;
    const pm = prev?.metrics as Fields | null | undefined;
    const cm = cur.metrics as Fields | null | undefined;
    let e: ChunkEntry;
    if (prev === null) e = [...head, cur, 0, 0, 0];
    else if (pm && cm) {
      const top = diff(prev, cur, "metrics");
      const m = diff(pm, cm, null);
      e = [...head, top.set, m.set, top.gone, m.gone];
    } else {
      // Metrics appear, go or are null on one side: the field is written whole.
      const top = diff(prev, cur, null);
      if (!same(pm, cm) && cm !== undefined) (top.set ||= {})[SHORT.metrics] = cm;
      e = [...head, top.set, 0, top.gone, 0];
    }
    while (e.length > 3 && e[e.length - 1] === 0) e.pop();
    entries.push(e);
    prev = cur;
  }
  return JSON.stringify(entries);
}

/** A copy of `o` without the fields named short (no `delete`: objects keep their fast shape). */
function without(o: Fields, gone: readonly string[]): Fields {
  const out: Fields = {};
  for (const k in o) if (!gone.includes(SHORT[k] ?? k)) out[k] = o[k];
  return out;
}

/** `o` with the fields named short in `set` given their values, in a new object. */
function withSet(o: Fields, set: Fields | 0): Fields {
  const out: Fields = { ...o };
  if (set) for (const k in set) out[LONG[k] ?? k] = set[k];
  return out;
}

/**
 * The rows of a chunk. Fields that did not change are shared with the reading before (the metrics,
 * /health, the evidence words: a reading is never changed once stored, and the classifier is
 * pure); each reading is built from the one before, so a chunk's readings share one shape.
 */
export function decodeChunk(text: string, firstAt: number): ReplayRow[] {
  const entries = JSON.parse(text) as ChunkEntry[];
  const out: ReplayRow[] = new Array(entries.length);
  let at = firstAt;
  let prev: Fields | null = null;
  let state: BackendState = "unknown";
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e[1] !== 0) state = e[1];
    const set = e[3];
    const mset = e[4];
    const gone = e[5];
    const mgone = e[6];
    at += e[0];
    let r: Fields;
    if (prev === null) r = { ...(set || {}) };
    else {
      r = withSet(prev, set);
      if (gone) r = without(r, gone);
      if (mset || mgone) {
        let m = withSet(prev.metrics as Fields, mset);
        if (mgone) m = without(m, mgone);
        r.metrics = m;
      }
    }
    r.at = at;
    prev = r;
    out[i] = { reading: r as unknown as Reading, state, recommended: e[2] === 1 };
  }
  return out;
}

/** One stored record: the reading, and what the watcher decided from it then. */
export interface ReplayRow {
  reading: Reading;
  /** The state the watcher recorded for this reading. */
  state: BackendState;
  /** Whether that verdict recommended a restart (a down inside startupGraceSeconds did not). */
  recommended: boolean;
}

/** The thresholds a replay is run with; each one not given is the backend's configured value. */
export interface ReplayThresholds {
  stuckAfterSeconds: number;
  startupGraceSeconds: number;
  /** Judge only a reading every this many seconds (a slower poll), or every stored one (null). */
  pollIntervalSeconds: number | null;
  /** The engine's minimum stuck window, in place of its adapter's (null: the adapter's). */
  minStuckWindowSeconds: number | null;
}

/** A run of restart recommendations: from the first reading that recommended one to the last. */
export interface Episode {
  from: number;
  to: number;
  state: BackendState;
  reasons: Reason[];
}

/** How one recommendation changes with the candidate thresholds. */
export type EpisodeChange = "new" | "never" | "earlier" | "later" | "same";

export interface EpisodeComparison {
  change: EpisodeChange;
  /** The replayed recommendation (null for "never"). */
  replayed: Episode | null;
  /** The recorded one (null for "new"). */
  recorded: Episode | null;
  /** replayed.from - recorded.from, seconds, when both exist. */
  shiftSeconds: number | null;
  /** In words, with the time and the reason. */
  text: string;
}

/** A stretch where the replayed state is not the one recorded. */
export interface StateChange {
  from: number;
  to: number;
  recorded: BackendState;
  replayed: BackendState;
  reasons: Reason[];
}

/** A run of reads with work and no progress that ended in progress, in one process. */
export interface HealthyGap {
  /** The first read of the run (the figures it held stayed the same until `to`). */
  from: number;
  /** The last read without progress. */
  to: number;
  /** to - from: what the classifier measured as "0 new steps in N s" at its longest. */
  seconds: number;
  /** Until the read that showed progress again: the gap is at most this long. */
  upToSeconds: number;
  engine: string | null;
  running: number;
  waiting: number;
}

/** A process seen in the period: when it started (if exposed), when it first served. */
export interface ProcessSpan {
  firstAt: number;
  lastAt: number;
  startedAt: number | null;
  /** The first read that showed it serving (progress or an answered probe); null if it never did. */
  servingAt: number | null;
  /** From the start (or the first refused read before it) to serving, seconds. */
  startupSeconds: number | null;
}

export interface ReplayReport {
  backendId: string;
  from: number;
  to: number;
  thresholds: ReplayThresholds;
  /** Stored readings in the period, and how many were judged (fewer with a slower poll). */
  readings: number;
  judged: number;
  /** Processes in the period, oldest first: counters of two are never compared. */
  processes: ProcessSpan[];
  recorded: { recommendations: number; stuck: number };
  replayed: { recommendations: number; stuck: number };
  comparisons: EpisodeComparison[];
  /** State differences, oldest first, at most MAX_CHANGES (then `changesLeftOff`). */
  changes: StateChange[];
  changesLeftOff: number;
  /** The longest healthy gap without progress (null when there was none). */
  longestHealthyGap: HealthyGap | null;
  /** One sentence: what these thresholds would have changed. */
  summary: string;
  /** What a replay cannot tell (restart requests, probes sent then): said, not hidden. */
  notes: string[];
}

export const MAX_CHANGES = 500;

/** A recommended value, what it is drawn from, and its margin. */
export interface AdvisedValue {
  seconds: number;
  /** The observed figure it rests on (seconds), or null when the period showed none. */
  observedSeconds: number | null;
  margin: string;
  why: string;
}

export interface Advice {
  backendId: string;
  from: number;
  to: number;
  readings: number;
  engine: string | null;
  /** The longest healthy gaps, longest first (at most 10), and the longest by load. */
  healthyGaps: HealthyGap[];
  gapsByLoad: Array<{ load: string; count: number; longestSeconds: number }>;
  processes: ProcessSpan[];
  probe: { count: number; p50Ms: number | null; p99Ms: number | null; maxMs: number | null };
  metrics: { p50Ms: number | null; p99Ms: number | null; maxMs: number | null };
  current: { stuckAfterSeconds: number; startupGraceSeconds: number; probeTimeoutSeconds: number; pollIntervalSeconds: number };
  recommended: { stuckAfterSeconds: AdvisedValue; startupGraceSeconds: AdvisedValue; probeTimeoutSeconds: AdvisedValue };
  /** The config lines to set (never applied by stepwatch). */
  config: Record<string, number>;
  kubernetes: string;
  systemd: string;
  notes: string[];
}
