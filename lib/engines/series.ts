/**
 * Reading numbers out of a parsed exposition, shared by every adapter. The rule they all follow:
 * an unusable value (NaN, negative, past 2^53) spoils its whole family (null, with a warning), it is
 * never dropped quietly, because a sum that jumps between reads would look like progress or like a
 * restart; and the load gauges an adapter needs are never defaulted to 0 (0 running is when
 * stepwatch may send a request of its own).
 */
import type { ParseResult, Sample } from "../metrics/prometheus";

/**
 * prometheus_client exposes a `<family>_created` gauge (a creation timestamp) next to every counter,
 * histogram and summary. It is not a reading and must never be summed into one.
 */
const isCreated = (name: string) => name.endsWith("_created");

export type Check = "count" | "fraction" | "timestamp" | "rate";

/**
 * Counts stop at 2^53: past it a float cannot show "+1", so a counter there could never show
 * progress (a false "stuck"), and two engines at 1e308 would sum to Infinity.
 */
const MAX_COUNT = Number.MAX_SAFE_INTEGER;

const VALID: Record<Check, (v: number) => boolean> = {
  count: (v) => Number.isFinite(v) && v >= 0 && v <= MAX_COUNT,
  fraction: (v) => Number.isFinite(v) && v >= 0 && v <= 1,
  timestamp: (v) => Number.isFinite(v) && v > 0,
  rate: (v) => Number.isFinite(v) && v >= 0,
};

export function isValid(check: Check, v: number): boolean {
  return VALID[check](v);
}

const EXPECTED: Record<Check, string> = {
  count: "a finite number >= 0 (at most 2^53)",
  fraction: "a fraction in 0..1",
  timestamp: "a positive unix time",
  rate: "a finite number >= 0",
};

/** The samples of one series name, from an index built once per body. */
export type Index = Map<string, Sample[]>;

export function buildIndex(result: ParseResult): Index {
  const index: Index = new Map();
  for (const s of result.samples) {
    if (isCreated(s.name)) continue;
    const list = index.get(s.name);
    if (list) list.push(s);
    else index.set(s.name, [s]);
  }
  return index;
}

/** Whether any series name in the body starts with `prefix` (how an engine is recognised). */
export function hasPrefix(index: Index, prefix: string): boolean {
  for (const name of index.keys()) if (name.startsWith(prefix)) return true;
  return false;
}

const showSample = (s: Sample) => {
  const labels = Object.entries(s.labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
  return `${s.name}${labels ? `{${labels}}` : ""} = ${s.value}`;
};

export type Combined = { kind: "absent" } | { kind: "invalid"; why: string } | { kind: "ok"; value: number };
export type Pick = (labels: Record<string, string>) => boolean;

/**
 * Combines every series of `name` that `pick` keeps: "absent" when there is none, "invalid" (with
 * why) when any series fails `check`, otherwise the sum, mean or max.
 */
export function combine(index: Index, name: string, check: Check, how: "sum" | "mean" | "max", pick?: Pick): Combined {
  const all = index.get(name);
  const series = pick && all ? all.filter((s) => pick(s.labels)) : all;
  if (!series || series.length === 0) return { kind: "absent" };
  let total = 0;
  let max = -Infinity;
  for (const s of series) {
    if (!VALID[check](s.value)) {
      const others = series.length > 1 ? ` (${series.length} series; one bad series spoils the family)` : "";
      return { kind: "invalid", why: `${showSample(s)} is not ${EXPECTED[check]}${others}` };
    }
    total += s.value;
    if (s.value > max) max = s.value;
  }
  if (check === "count" && total > MAX_COUNT) {
    return { kind: "invalid", why: `the ${series.length} series of ${name} add up past 2^53` };
  }
  const value = how === "sum" ? total : how === "mean" ? total / series.length : max;
  return { kind: "ok", value };
}

/** An optional figure: null when absent or unusable (the latter with a warning). */
export function optional(index: Index, name: string, check: Check, how: "sum" | "mean" | "max", warnings: string[], pick?: Pick): number | null {
  const r = combine(index, name, check, how, pick);
  if (r.kind === "ok") return r.value;
  if (r.kind === "invalid") warnings.push(`${name} ignored: ${r.why}`);
  return null;
}

/** The first of `names` that is present (an engine that renamed a family), as `optional`. */
export function firstOf(index: Index, names: string[], check: Check, how: "sum" | "mean" | "max", warnings: string[], pick?: Pick): number | null {
  for (const name of names) {
    const v = optional(index, name, check, how, warnings, pick);
    if (v !== null) return v;
  }
  return null;
}

/**
 * A load gauge the adapter cannot judge without: its value, or why there are no metrics at all
 * (absent, or any series unusable) so the caller never has a 0 to call "idle" from.
 */
export function required(index: Index, name: string, pick?: Pick): { value: number } | { error: string } {
  const r = combine(index, name, "count", "sum", pick);
  if (r.kind === "absent") return { error: `metrics without ${name}: cannot tell a busy server from an idle one` };
  if (r.kind === "invalid") return { error: `unusable ${name}: ${r.why}; cannot tell a busy server from an idle one` };
  return { value: r.value };
}

/** Distinct values of `label` across every series whose name starts with `prefix`. */
export function labelValues(index: Index, prefix: string, label: string): string[] {
  const seen = new Set<string>();
  for (const [name, series] of index) {
    if (!name.startsWith(prefix)) continue;
    for (const s of series) {
      const v = s.labels[label];
      if (v !== undefined) seen.add(v);
    }
  }
  return [...seen];
}
