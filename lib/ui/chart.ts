/**
 * Chart data shaping for uPlot, pure and tested. uPlot wants "aligned data": one x array in
 * seconds and one y array per series, same length, null for "no value" (drawn as a gap).
 * The server sends points in ms; this turns them into series, breaks lines where readings are
 * missing (a down backend or a stopped watcher must not look like a straight line), and turns
 * transitions and restarts into time-axis markers.
 */
import type { HistoryPoint, RestartEventDTO, SparkPoint, TransitionDTO } from "../api/types";
import type { BackendState } from "../check/states";
import { BACKEND_STATES } from "../check/states";

export const RANGES = [
  { key: "15m", label: "15 min", ms: 15 * 60_000 },
  { key: "1h", label: "1 h", ms: 3600_000 },
  { key: "24h", label: "24 h", ms: 24 * 3600_000 },
  { key: "7d", label: "7 d", ms: 7 * 24 * 3600_000 },
] as const;
export type RangeKey = (typeof RANGES)[number]["key"];
export const DEFAULT_RANGE: RangeKey = "1h";

export function parseRange(v: string | null | undefined): RangeKey {
  return RANGES.find((r) => r.key === v)?.key ?? DEFAULT_RANGE;
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
 * Points to series. Where two neighbours are more than `gapFactor` times the usual spacing apart,
 * a null point is inserted between them so the line breaks there.
 */
export function toHistorySeries(points: HistoryPoint[], gapFactor = 3): HistorySeries {
  const sorted = [...points].sort((a, b) => a.at - b.at);
  const step = typicalStepMs(sorted.map((p) => p.at));
  const out: HistorySeries = {
    x: [],
    running: [],
    waiting: [],
    stepsPerSecond: [],
    generationTokensPerSecond: [],
    promptTokensPerSecond: [],
    kvCachePercent: [],
  };
  const push = (at: number, p: HistoryPoint | null) => {
    out.x.push(at / 1000);
    out.running.push(p?.running ?? null);
    out.waiting.push(p?.waiting ?? null);
    out.stepsPerSecond.push(p?.stepsPerSecond ?? null);
    out.generationTokensPerSecond.push(p?.generationTokensPerSecond ?? null);
    out.promptTokensPerSecond.push(p?.promptTokensPerSecond ?? null);
    out.kvCachePercent.push(p?.kvCacheUsage === null || p?.kvCacheUsage === undefined ? null : p.kvCacheUsage * 100);
  };
  sorted.forEach((p, i) => {
    const prev = sorted[i - 1];
    if (prev && step !== null && p.at - prev.at > gapFactor * step) push(prev.at + step, null);
    push(p.at, p);
  });
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
}

/** Restarts and state changes inside [from, to] (ms), as vertical-line markers. */
export function toMarkers(transitions: TransitionDTO[], restarts: RestartEventDTO[], from: number, to: number): Marker[] {
  const inRange = (at: number) => at >= from && at <= to;
  const isState = (s: string): s is BackendState => (BACKEND_STATES as readonly string[]).includes(s);
  const ms: Marker[] = [];
  for (const t of transitions) {
    if (!inRange(t.at) || !isState(t.to)) continue;
    ms.push({ x: t.at / 1000, kind: "state", label: t.to, state: t.to });
  }
  for (const r of restarts) {
    if (!inRange(r.requestedAt)) continue;
    ms.push({ x: r.requestedAt / 1000, kind: "restart", label: `restart by ${r.requestedBy}` });
  }
  return ms.sort((a, b) => a.x - b.x);
}

/** The fleet card sparkline: running requests and generation tokens/s over the last minutes. */
export function toSparkline(recent: readonly SparkPoint[]): [number[], Series, Series] {
  const sorted = [...recent].sort((a, b) => a[0] - b[0]);
  return [sorted.map((p) => p[0] / 1000), sorted.map((p) => p[1]), sorted.map((p) => p[2])];
}

/** The largest finite value of some series (for a shared y scale), at least `floor`. */
export function seriesMax(series: Series[], floor = 1): number {
  let m = floor;
  for (const s of series) for (const v of s) if (v !== null && Number.isFinite(v) && v > m) m = v;
  return m;
}
