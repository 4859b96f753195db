/**
 * Chart data shaping for uPlot, pure and tested. uPlot wants "aligned data": one x array in
 * seconds and one y array per series, same length, null for "no value" (drawn as a gap).
 * The server sends points in ms; this turns them into series, breaks lines where readings are
 * missing (a down backend or a stopped watcher must not look like a straight line), and turns
 * transitions and restarts into time-axis markers.
 */
import { HISTORY_FIGURES, spanValues } from "../core/history";
import type { RestartEventDTO, SparkPoint, TransitionDTO } from "../api/types";
import type { HistoryColumns, HistoryFigure } from "../core/history";
import type { BackendState } from "../core/states";
import { BACKEND_STATES } from "../core/states";
import { LATENCY_FIELDS, type LatencySample } from "../core/latency";
import { reasonText } from "../core/types";

export const RANGES = [
  { key: "15m", label: "15 min", ms: 15 * 60_000 },
  { key: "1h", label: "1 h", ms: 3600_000 },
  { key: "24h", label: "24 h", ms: 24 * 3600_000 },
  { key: "7d", label: "7 d", ms: 7 * 24 * 3600_000 },
] as const;
export type RangeKey = (typeof RANGES)[number]["key"];
export const DEFAULT_RANGE: RangeKey = "1h";

/** The fleet-wide history page's windows (the uptime windows too). */
export const HISTORY_RANGES = [
  { key: "24h", label: "24 h", ms: 24 * 3600_000 },
  { key: "7d", label: "7 d", ms: 7 * 24 * 3600_000 },
  { key: "30d", label: "30 d", ms: 30 * 24 * 3600_000 },
] as const;
export type HistoryRangeKey = (typeof HISTORY_RANGES)[number]["key"];

export function parseRange(v: string | null | undefined): RangeKey {
  return RANGES.find((r) => r.key === v)?.key ?? DEFAULT_RANGE;
}

/** `?from=&to=` (ms since epoch) as a fixed window, or null when absent or not a valid window. */
export function parseWindow(from: string | null | undefined, to: string | null | undefined): { from: number; to: number } | null {
  if (!from || !to || !/^\d+$/.test(from) || !/^\d+$/.test(to)) return null;
  const f = Number(from);
  const t = Number(to);
  return Number.isSafeInteger(f) && Number.isSafeInteger(t) && f < t ? { from: f, to: t } : null;
}

export function rangeMs(key: RangeKey): number {
  return RANGES.find((r) => r.key === key)!.ms;
}

export type Series = Array<number | null>;

export interface HistorySeries {
  /** Seconds since epoch (uPlot's time unit). */
  x: number[];
  running: Series;
  waiting: Series;
  stepsPerSecond: Series;
  generationTokensPerSecond: Series;
  promptTokensPerSecond: Series;
  /** Percent (0..100), so the axis reads like the fleet card. */
  kvCachePercent: Series;
  /** vLLM's latency p50/p95 (seconds) and rates, one series per field. */
  latency: Record<keyof LatencySample, Series>;
}

/** The usual spacing of the points: the median gap, robust to a few long outages. */
export function typicalStepMs(ats: number[]): number | null {
  if (ats.length < 2) return null;
  const gaps = ats
    .slice(1)
    .map((a, i) => a - ats[i])
    .filter((g) => g > 0)
    .sort((a, b) => a - b);
  return gaps.length ? gaps[Math.floor(gaps.length / 2)] : null;
}

/**
 * The history's columns to series. Where two neighbours are more than `gapFactor` times the usual
 * spacing apart, a null point is inserted between them so the line breaks there. A null column
 * (no point had the figure) is a series of nulls. Spans that do not fit the points throw
 * (lib/core/history.ts spanValues).
 */
export function toHistorySeries(c: HistoryColumns, gapFactor = 3): HistorySeries {
  const n = c.at.length;
  // The server sends points in time order; sort an index only if they are not.
  let order: number[] | null = null;
  for (let i = 1; i < n; i++) {
    if (c.at[i] < c.at[i - 1]) {
      order = [...c.at.keys()].sort((a, b) => c.at[a] - c.at[b]);
      break;
    }
  }
  const idx = (k: number) => (order ? order[k] : k);
  const ats = order ? order.map((i) => c.at[i]) : c.at;
  const step = typicalStepMs(ats);
  const out: HistorySeries = {
    x: [],
    running: [],
    waiting: [],
    stepsPerSecond: [],
    generationTokensPerSecond: [],
    promptTokensPerSecond: [],
    kvCachePercent: [],
    latency: Object.fromEntries(LATENCY_FIELDS.map((f) => [f, []])) as unknown as Record<keyof LatencySample, Series>,
  };
  const values = Object.fromEntries(HISTORY_FIGURES.map((f) => [f, spanValues(c[f], n)])) as Record<HistoryFigure, Array<number | null>>;
  const v = (f: HistoryFigure, i: number | null) => (i === null ? null : values[f][i]);
  const push = (at: number, i: number | null) => {
    out.x.push(at / 1000);
    out.running.push(v("running", i));
    out.waiting.push(v("waiting", i));
    out.stepsPerSecond.push(v("stepsPerSecond", i));
    out.generationTokensPerSecond.push(v("generationTokensPerSecond", i));
    out.promptTokensPerSecond.push(v("promptTokensPerSecond", i));
    const kv = v("kvCacheUsage", i);
    out.kvCachePercent.push(kv === null ? null : kv * 100);
    for (const f of LATENCY_FIELDS) out.latency[f].push(v(f, i));
  };
  for (let k = 0; k < n; k++) {
    if (k > 0 && step !== null && ats[k] - ats[k - 1] > gapFactor * step) push(ats[k - 1] + step, null);
    push(ats[k], idx(k));
  }
  return out;
}

export interface Marker {
  /** Seconds since epoch. */
  x: number;
  kind: "restart" | "state";
  /** Short text drawn next to the line and shown in the legend list. */
  label: string;
  /** For state markers, the state entered (its tone colours the line). */
  state?: BackendState;
  /** What it was, for the hover: the reasons of a state change; who restarted, why, and how it ended. */
  detail: string;
}

/** Restarts and state changes inside [from, to] (ms), as vertical-line markers. */
export function toMarkers(transitions: TransitionDTO[], restarts: RestartEventDTO[], from: number, to: number): Marker[] {
  const inRange = (at: number) => at >= from && at <= to;
  const isState = (s: string): s is BackendState => (BACKEND_STATES as readonly string[]).includes(s);
  const ms: Marker[] = [];
  for (const t of transitions) {
    if (!inRange(t.at) || !isState(t.to)) continue;
    const from = t.from ?? "start";
    ms.push({ x: t.at / 1000, kind: "state", label: t.to, state: t.to, detail: `${from} → ${t.to}${t.reasons.length ? `: ${reasonText(t.reasons)}` : ""}` });
  }
  for (const r of restarts) {
    if (!inRange(r.requestedAt)) continue;
    const why = [r.note ? `note: ${r.note}` : null, `${r.stateAtRequest} at the request`, r.evidence.reasons[0]?.text ?? null].filter(Boolean).join("; ");
    const outcome = r.outcome === null ? "pending" : r.outcome;
    ms.push({ x: r.requestedAt / 1000, kind: "restart", label: `restart by ${r.requestedBy}`, detail: `asked by ${r.requestedBy} (${r.action}); ${why}; outcome: ${outcome}` });
  }
  return ms.sort((a, b) => a.x - b.x);
}

/** The marker within `maxPx` of the cursor (the nearest), for the hover; `toPx` maps seconds to pixels. */
export function markerNear(markers: Marker[], cursorPx: number, toPx: (x: number) => number, maxPx: number): Marker | null {
  let best: Marker | null = null;
  let bestD = Infinity;
  for (const m of markers) {
    const d = Math.abs(toPx(m.x) - cursorPx);
    if (d <= maxPx && d < bestD) {
      best = m;
      bestD = d;
    }
  }
  return best;
}

/**
 * A series in words, for a chart's text alternative: "running: now 2, peak 4, mean 1.5" (the last
 * value, the largest, the mean of the values shown); "no data" when there are none.
 */
export function seriesText(label: string, values: Series, format: (v: number) => string): string {
  const finite = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (finite.length === 0) return `${label}: no data`;
  const last = [...values].reverse().find((v): v is number => v !== null && Number.isFinite(v))!;
  const peak = Math.max(...finite);
  const mean = finite.reduce((a, b) => a + b, 0) / finite.length;
  return `${label}: now ${format(last)}, peak ${format(peak)}, mean ${format(mean)}`;
}

/** A whole chart in words: its title, the span it covers, each series, and how many events are marked. */
export function chartText(title: string, x: number[], series: Array<{ label: string; values: Series; format: (v: number) => string }>, markers = 0): string {
  const span = x.length > 1 ? ` over ${Math.round((x[x.length - 1] - x[0]) / 60)} min` : "";
  const parts = series.map((s) => seriesText(s.label, s.values, s.format));
  return `${title}${span}. ${parts.join(". ")}.${markers ? ` ${markers} marked event${markers === 1 ? "" : "s"} (listed under State changes and Restarts).` : ""}`;
}

/** The fleet card sparkline in words. */
export function sparklineText(id: string, data: [number[], Series, Series]): string {
  const f = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
  return chartText(`${id}: running requests and generation tokens per second`, data[0], [
    { label: "running requests", values: data[1], format: f },
    { label: "generation tokens/s", values: data[2], format: f },
  ]);
}

/** The fleet card sparkline: running requests and generation tokens/s over the last minutes. */
export function toSparkline(recent: readonly SparkPoint[]): [number[], Series, Series] {
  const sorted = [...recent].sort((a, b) => a[0] - b[0]);
  return [sorted.map((p) => p[0] / 1000), sorted.map((p) => p[1]), sorted.map((p) => p[2])];
}

/** Whether any value of these series is a number (a chart with none is not drawn). */
export function hasData(series: Series[]): boolean {
  return series.some((s) => s.some((v) => v !== null && Number.isFinite(v)));
}

/** The largest finite value of some series (for a shared y scale), at least `floor`. */
export function seriesMax(series: Series[], floor = 1): number {
  let m = floor;
  for (const s of series) for (const v of s) if (v !== null && Number.isFinite(v) && v > m) m = v;
  return m;
}

/**
 * The indices of values with no value on either side (null or the series' end): uPlot draws a
 * line between two points, so with points hidden such a value is drawn as nothing at all. A TTFT
 * or queue-time percentile exists only for the reads that finished a request, so a quiet backend's
 * latency series is often all isolated points; the chart draws these as dots (TimeChart's
 * `points.filter`) and the rest as lines.
 */
export function isolatedPoints(values: ArrayLike<number | null | undefined>): number[] {
  const has = (i: number) => i >= 0 && i < values.length && values[i] !== null && values[i] !== undefined && Number.isFinite(values[i] as number);
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) if (has(i) && !has(i - 1) && !has(i + 1)) out.push(i);
  return out;
}
