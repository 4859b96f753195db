/**
 * The history's wire form: columns, not rows. Seven days of one backend are ~1,440 points of 20
 * figures; as an array of objects every point repeats every key (325 KB of JSON). Here each figure
 * is one array (null for a figure the backend never had in the range: a whole latency column of a
 * llama.cpp server is one `null`), states are runs ([first point, state], a state changes rarely),
 * and values carry three significant digits (what the dashboard shows; integers stay exact).
 * The CSV export reads the same columns unrounded (`exact`).
 */
import type { BackendState } from "../check/states";
import type { Figures } from "../check/types";
import { LATENCY_FIELDS, type LatencySample } from "../metrics/vllm-latency";
import type { HistoryColumns, HistoryFigure, HistoryPoint } from "./types";

export const HISTORY_FIGURES = [
  "running",
  "waiting",
  "stepsPerSecond",
  "generationTokensPerSecond",
  "promptTokensPerSecond",
  "kvCacheUsage",
  ...LATENCY_FIELDS,
] as const satisfies ReadonlyArray<keyof Figures | keyof LatencySample>;

/** Three significant digits (rates, fractions, means), integers as they are; 0, null and non-finite unchanged. */
export function threeDigits(x: number | null): number | null {
  if (x === null || x === 0 || !Number.isFinite(x) || Number.isInteger(x)) return x;
  return Number(x.toPrecision(3));
}

type Row = { at: number; state: BackendState } & Partial<Record<HistoryFigure, number | null>>;

/** Points (in time order) as columns; `exact` keeps every digit (the CSV). */
export function toColumns(points: readonly Row[], exact = false): HistoryColumns {
  const n = points.length;
  const at = new Array<number>(n);
  const state: Array<[number, BackendState]> = [];
  for (let i = 0; i < n; i++) {
    const p = points[i];
    at[i] = p.at;
    if (i === 0 || p.state !== points[i - 1].state) state.push([i, p.state]);
  }
  const cols = { at, state } as HistoryColumns;
  for (const f of HISTORY_FIGURES) {
    let any = false;
    const col = new Array<number | null>(n);
    for (let i = 0; i < n; i++) {
      const v = points[i][f] ?? null;
      if (v !== null) any = true;
      col[i] = exact ? v : threeDigits(v);
    }
    cols[f] = any ? col : null;
  }
  return cols;
}

/** Columns back to points (the CSV, and clients that want rows). */
export function toRows(c: HistoryColumns): HistoryPoint[] {
  const rows: HistoryPoint[] = [];
  let run = 0;
  for (let i = 0; i < c.at.length; i++) {
    while (run + 1 < c.state.length && c.state[run + 1][0] <= i) run++;
    const p = { at: c.at[i], state: c.state[run]?.[1] ?? "unknown" } as HistoryPoint;
    for (const f of HISTORY_FIGURES) (p as unknown as Record<string, number | null>)[f] = c[f]?.[i] ?? null;
    rows.push(p);
  }
  return rows;
}
