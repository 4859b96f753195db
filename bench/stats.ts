/**
 * Small pure statistics for the benchmarks. Percentiles use the nearest-rank method (no
 * interpolation), so a reported p99 is always a latency that was really observed.
 */

/** Nearest-rank percentile of `xs` (p in 0..100); NaN for an empty list. Does not reorder `xs`. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  if (!(p >= 0 && p <= 100)) throw new Error(`percentile must be within 0..100, got ${p}`);
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1];
}

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function summarize(xs: readonly number[]): Summary {
  const n = xs.length;
  const mean = n ? xs.reduce((s, x) => s + x, 0) / n : NaN;
  return {
    n,
    min: n ? xs.reduce((m, x) => (x < m ? x : m), Infinity) : NaN,
    p50: percentile(xs, 50),
    p90: percentile(xs, 90),
    p99: percentile(xs, 99),
    max: n ? xs.reduce((m, x) => (x > m ? x : m), -Infinity) : NaN,
    mean,
  };
}

/** Round for the report: keeps results.json readable without losing what a reader compares. */
export function round(x: number, digits = 2): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The simulator's deterministic PRNG (mulberry32): the replayed day is the same on every run. */
export { seededRandom as rng } from "../sim/load";

/** An integer in [lo, hi] from `next`. */
export function between(next: () => number, lo: number, hi: number): number {
  return lo + Math.floor(next() * (hi - lo + 1));
}
