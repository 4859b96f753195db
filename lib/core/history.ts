/**
 * The history's wire form: columns, not rows. Seven days of one backend are ~1,000 points of 20
 * figures; as an array of objects every point repeats every key (325 KB of JSON). Here each figure
 * is its spans of values ([first point, values...], lib/api/types.ts HistorySpans), null for a
 * figure no point of the range has: a point without the figure costs nothing, where a dense column
 * spent a `null` on it (a week whose last minute has vLLM's latency figures was 116 KB, 14 columns
 * of 1,008 nulls and one value; as spans it is ~45 KB). States are runs ([first point, state], a
 * state changes rarely), and values carry three significant digits (what the dashboard shows;
 * integers stay exact). The CSV export reads the same columns unrounded (`exact`).
 */
import type { BackendState } from "./states";
import type { Figures, Reason } from "./types";
import { LATENCY_FIELDS, type LatencySample } from "./latency";

/** A point of a backend's history; the vLLM latency figures are absent or null where not exposed. */
export interface HistoryPoint extends Figures, Partial<LatencySample> {
  at: number;
  state: BackendState;
}

/** A figure of a history point (lib/core/history.ts HISTORY_FIGURES). */
export type HistoryFigure = keyof Figures | keyof LatencySample;

/**
 * A figure's values as spans (lib/core/history.ts): [first point index, values of that point and the
 * ones after it], in order, not overlapping; a point in no span has no value. `[[0, [1, 2, 3]]]` is
 * three points with values; `[[0, [1]], [2, [3]]]` the same with the middle one missing.
 */
export type HistorySpans = Array<[number, number[]]>;

/**
 * The points as columns (lib/core/history.ts): `at[i]` is point i's time (ms); each figure its
 * spans of values, or null when no point of the range has it; `state` as runs, [first point
 * index, state] (point i has the state of the last run starting at or before i).
 */
export type HistoryColumns = { at: number[]; state: Array<[number, BackendState]> } & Record<HistoryFigure, HistorySpans | null>;

/** A state change of a backend or proxy, with the reasons (the transitions table). */
export interface Transition {
  at: number;
  from: string | null;
  to: string;
  reasons: Reason[];
}

export const HISTORY_FIGURES = [
  "running",
  "waiting",
  "stepsPerSecond",
  "generationTokensPerSecond",
  "promptTokensPerSecond",
  "kvCacheUsage",
  ...LATENCY_FIELDS,
] as const satisfies ReadonlyArray<keyof Figures | keyof LatencySample>;

/**
 * A figure's snake_case name (ttftP50 -> ttft_p50, kvCacheUsage -> kv_cache_usage): its column in
 * `samples` (db/schema.ts, the SQL in db/queries/history.ts) and its header in the CSV export, so
 * a figure added to HISTORY_FIGURES is stored, rolled up and exported under one name.
 */
export const figureColumn = (f: HistoryFigure): string => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Exact powers of ten, 10^0 .. 10^22 (each a double with no rounding). */
const POW10 = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));

/**
 * Three significant digits (rates, fractions, means), integers as they are; 0, null and non-finite
 * unchanged. Always the number `Number(x.toPrecision(3))` is; computed without building a string
 * (a week of history is 20,000 values, and toPrecision alone took half of the answer's time): the
 * value scaled by an exact power of ten is rounded, and a scaled value within a hair of a tie, or a
 * magnitude the scaling cannot hold exactly, goes through toPrecision itself.
 */
export function threeDigits(x: number | null): number | null {
  if (x === null || x === 0 || !Number.isFinite(x) || Number.isInteger(x)) return x;
  const a = Math.abs(x);
  if (a >= 1e-15 && a < 1e15) {
    const k = 2 - Math.floor(Math.log10(a)); // digits to the right of the point to keep (-12 .. 17)
    const scaled = k >= 0 ? a * POW10[k] : a / POW10[-k];
    const frac = scaled - Math.floor(scaled);
    // 99.95 .. 1000.5: the digits are the integer part (1000 when it rounds up to the next power).
    if (scaled >= 99.5 && scaled < 1000.5 && Math.abs(frac - 0.5) > 1e-6) {
      const n = Math.round(scaled);
      // n / 10^k and n * 10^-k are correctly rounded (n and the power are exact): the double nearest the decimal.
      const r = k >= 0 ? n / POW10[k] : n * POW10[-k];
      return x < 0 ? -r : r;
    }
  }
  return Number(x.toPrecision(3));
}

type Row = { at: number; state: BackendState } & Partial<Record<HistoryFigure, number | null>>;

/**
 * Columns from `n` points in any shape: point i's time, state and the value of HISTORY_FIGURES[k],
 * every digit kept (roundColumns makes what the dashboard is sent). db/queries/history.ts builds the
 * history from SQLite's rows as arrays (an object per row with 20 keys cost 5x the query itself).
 */
export function columnsFrom(
  n: number,
  point: { at(i: number): number; state(i: number): BackendState; value(i: number, k: number): number | null },
): HistoryColumns {
  const at = new Array<number>(n);
  const state: Array<[number, BackendState]> = [];
  for (let i = 0; i < n; i++) {
    at[i] = point.at(i);
    const s = point.state(i);
    if (i === 0 || s !== state[state.length - 1][1]) state.push([i, s]);
  }
  const cols = { at, state } as HistoryColumns;
  HISTORY_FIGURES.forEach((f, k) => {
    const spans: HistorySpans = [];
    let open: number[] | null = null; // the values of the span point i-1 is in, if it had one
    for (let i = 0; i < n; i++) {
      const v = point.value(i, k);
      if (v === null) open = null;
      else if (open) open.push(v);
      else spans.push([i, (open = [v])]);
    }
    cols[f] = spans.length ? spans : null;
  });
  return cols;
}

/** Points (in time order) as columns; `exact` keeps every digit (the CSV). */
export function toColumns(points: readonly Row[], exact = false): HistoryColumns {
  const c = columnsFrom(points.length, { at: (i) => points[i].at, state: (i) => points[i].state, value: (i, k) => points[i][HISTORY_FIGURES[k]] ?? null });
  return exact ? c : roundColumns(c);
}

/** The same columns with three significant digits (what the dashboard is sent). */
export function roundColumns(c: HistoryColumns): HistoryColumns {
  const out = { at: c.at, state: c.state } as HistoryColumns;
  for (const f of HISTORY_FIGURES) out[f] = c[f]?.map(([first, values]) => [first, values.map(threeDigits) as number[]]) ?? null;
  return out;
}

/**
 * A figure's spans as one value per point (null where it has none), for `n` points. Refuses spans
 * that overlap, go backwards or past `n`: a reader that drew them would put values on wrong times.
 */
export function spanValues(spans: HistorySpans | null, n: number): Array<number | null> {
  const out = new Array<number | null>(n).fill(null);
  let next = 0;
  for (const [first, values] of spans ?? []) {
    if (!Number.isInteger(first) || first < next || first + values.length > n) {
      throw new RangeError(`history spans: a span at ${first} of ${values.length} values does not fit after point ${next} of ${n}`);
    }
    for (let j = 0; j < values.length; j++) out[first + j] = values[j];
    next = first + values.length;
  }
  return out;
}

/** Columns back to points (the CSV, and clients that want rows). */
export function toRows(c: HistoryColumns): HistoryPoint[] {
  const n = c.at.length;
  const figures = HISTORY_FIGURES.map((f) => spanValues(c[f], n));
  const rows: HistoryPoint[] = [];
  let run = 0;
  for (let i = 0; i < n; i++) {
    while (run + 1 < c.state.length && c.state[run + 1][0] <= i) run++;
    const p = { at: c.at[i], state: c.state[run]?.[1] ?? "unknown" } as HistoryPoint;
    HISTORY_FIGURES.forEach((f, k) => ((p as unknown as Record<string, number | null>)[f] = figures[k][i]));
    rows.push(p);
  }
  return rows;
}
