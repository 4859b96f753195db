/**
 * What operators read on the vLLM Grafana dashboard, from the same /metrics body stepwatch already
 * reads (no extra request): the latency histograms (time to first token, inter-token latency,
 * end-to-end latency, queue time), request successes by finish reason, and preemptions.
 *
 * The histograms are cumulative since the process started, so a percentile of the raw buckets
 * describes the whole uptime, not now. Between two reads of one process the bucket deltas are the
 * requests of that interval; p50/p95 come from those deltas with the same linear interpolation
 * inside a bucket as Prometheus' histogram_quantile. Kept apart from lib/metrics/vllm.ts on
 * purpose: nothing here decides a state, and a bad histogram only leaves a figure empty.
 */
import { MAX_HISTOGRAM_BUCKETS, MAX_LIST_ITEMS } from "../core/caps";
import type { ParseResult, Sample } from "./prometheus";
import { EMPTY_LATENCY_FIGURES, LATENCY_FIELDS, type Histogram, type LatencyFigures, type LatencySample, type VllmLatency } from "../core/latency";

const FAMILIES = {
  ttft: ["vllm:time_to_first_token_seconds"],
  // vLLM V1 renamed time_per_output_token to inter_token_latency; older servers have the former.
  itl: ["vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"],
  e2e: ["vllm:e2e_request_latency_seconds"],
  queue: ["vllm:request_queue_time_seconds"],
} as const;

/** The histogram families read here (their samples are `_bucket`, `_count` and `_sum`). */
export const LATENCY_HISTOGRAMS: readonly string[] = Object.values(FAMILIES).flat();

/** Every family read here: parseVllmMetrics parses these (and its own series) and skips the rest. */
export const LATENCY_FAMILIES: readonly string[] = [...Object.values(FAMILIES).flat(), "vllm:request_success_total", "vllm:num_preemptions_total"];

const finiteNonNeg = (v: number) => Number.isFinite(v) && v >= 0;

/**
 * Upper bounds already read: a server writes the same few dozen `le` strings on every read (and
 * through a LineCache they are the very same strings), so each is converted once. Bounded: a
 * hostile body's endless distinct bounds are converted as they come once this is full.
 */
const LE_VALUES = new Map<string, number | null>();
const MAX_LE_VALUES = 4096;

function parseLe(le: string | undefined): number | null {
  if (le === undefined) return null;
  let v = LE_VALUES.get(le);
  if (v === undefined) {
    const n = Number(le);
    v = le === "+Inf" ? Infinity : Number.isFinite(n) ? n : null;
    if (LE_VALUES.size < MAX_LE_VALUES) LE_VALUES.set(le, v);
  }
  return v;
}

/** A histogram family summed over label sets; null when absent or any value is unusable. */
function histogramOf(byName: Map<string, Sample[]>, family: string): Histogram | null {
  const bucketSamples = byName.get(`${family}_bucket`);
  if (!bucketSamples?.length) return null;
  // One label set (one engine) lists its bounds in ascending order: the buckets as they come.
  // Several engines (or any other order) are summed per bound and sorted.
  let buckets: Array<[number, number]> = [];
  let ascending = true;
  for (const s of bucketSamples) {
    const le = parseLe(s.labels.le);
    if (le === null || !finiteNonNeg(s.value)) return null;
    if (buckets.length > 0 && le <= buckets[buckets.length - 1][0]) ascending = false;
    buckets.push([le, s.value]);
  }
  if (!ascending) {
    const sums = new Map<number, number>();
    for (const [le, v] of buckets) sums.set(le, (sums.get(le) ?? 0) + v);
    buckets = [...sums].sort((a, b) => a[0] - b[0]);
  }
  // Bounded (lib/core/caps.ts): a hostile body's 30,000 bounds would be kept with 200 readings.
  if (buckets.length > MAX_HISTOGRAM_BUCKETS) return null;
  if (buckets[buckets.length - 1][0] !== Infinity) return null;
  // Cumulative counts never fall with a larger bound; if they do the body is not a histogram.
  for (let i = 1; i < buckets.length; i++) if (buckets[i][1] < buckets[i - 1][1]) return null;
  const total = (name: string) => {
    const ss = byName.get(name) ?? [];
    let sum = 0;
    for (const s of ss) {
      if (!finiteNonNeg(s.value)) return null;
      sum += s.value;
    }
    return sum;
  };
  const sum = total(`${family}_sum`);
  return { buckets, count: buckets[buckets.length - 1][1], sum: sum ?? 0 };
}

/** Samples by their own name (the shape of the engines' series index). */
export type SampleIndex = Map<string, Sample[]>;

export function indexSamples(result: ParseResult): SampleIndex {
  const byName: SampleIndex = new Map();
  for (const s of result.samples) {
    if (!s.name.startsWith("vllm:")) continue;
    const list = byName.get(s.name);
    if (list) list.push(s);
    else byName.set(s.name, [s]);
  }
  return byName;
}

/** The raw latency figures of one parsed body (or of its series index). */
export function extractVllmLatency(input: ParseResult | SampleIndex): VllmLatency {
  const byName = input instanceof Map ? input : indexSamples(input);
  const hist = (names: readonly string[]) => {
    for (const n of names) {
      const h = histogramOf(byName, n);
      if (h) return h;
    }
    return null;
  };
  let successByReason: Record<string, number> | null = null;
  const success = byName.get("vllm:request_success_total");
  if (success?.length && success.every((s) => finiteNonNeg(s.value))) {
    successByReason = {};
    // Past MAX_LIST_ITEMS reasons (a hostile body), the unnamed ones are kept as one "other":
    // latencySample adds them up the same way, so the stored figures do not change.
    const fold = new Set(success.map((s) => s.labels.finished_reason ?? "unknown")).size > MAX_LIST_ITEMS;
    for (const s of success) {
      const reason = s.labels.finished_reason ?? "unknown";
      const r = fold && !Object.hasOwn(NAMED_REASONS, reason) ? "other" : reason;
      successByReason[r] = (successByReason[r] ?? 0) + s.value;
    }
  }
  const pre = byName.get("vllm:num_preemptions_total");
  const preemptions = pre?.length && pre.every((s) => finiteNonNeg(s.value)) ? pre.reduce((a, s) => a + s.value, 0) : null;
  return { ttft: hist(FAMILIES.ttft), itl: hist(FAMILIES.itl), e2e: hist(FAMILIES.e2e), queue: hist(FAMILIES.queue), successByReason, preemptions };
}

/**
 * What was observed between two reads: b - a per bucket. null when the bounds differ or a count
 * went down (a new process: counters of two processes are never compared).
 */
export function histogramDelta(a: Histogram, b: Histogram): Histogram | null {
  if (a.buckets.length !== b.buckets.length) return null;
  const buckets: Array<[number, number]> = [];
  for (let i = 0; i < a.buckets.length; i++) {
    const [le, ca] = a.buckets[i];
    const [leB, cb] = b.buckets[i];
    if (le !== leB || cb < ca) return null;
    buckets.push([le, cb - ca]);
  }
  return { buckets, count: buckets.at(-1)![1], sum: Math.max(0, b.sum - a.sum) };
}

/**
 * The q-quantile (0..1) of a histogram, as Prometheus' histogram_quantile: find the bucket the rank
 * falls in and interpolate linearly inside it (from 0 for the first bucket). In the +Inf bucket the
 * answer is the largest finite bound. null when the histogram holds no observations.
 */
export function histogramQuantile(h: Histogram, q: number): number | null {
  const total = h.buckets.at(-1)?.[1] ?? 0;
  if (!(total > 0)) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, c] of h.buckets) {
    if (c >= rank) {
      if (le === Infinity) return prevLe;
      if (c === prevCount) return le;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / (c - prevCount);
    }
    prevLe = le;
    prevCount = c;
  }
  return prevLe;
}

/** The interval's figures from two reads of one process, `seconds` apart. */
export function latencyFigures(a: VllmLatency | undefined | null, b: VllmLatency | undefined | null, seconds: number): LatencyFigures {
  if (!a || !b || !(seconds > 0)) return EMPTY_LATENCY_FIGURES;
  const q = (ha: Histogram | null, hb: Histogram | null): [number | null, number | null] => {
    // No request finished in between: every bucket's delta is 0 (or the histograms do not compare), no quantile.
    if (ha && hb && ha.count === hb.count) return [null, null];
    const d = ha && hb ? histogramDelta(ha, hb) : null;
    return d ? [histogramQuantile(d, 0.5), histogramQuantile(d, 0.95)] : [null, null];
  };
  const [ttftP50, ttftP95] = q(a.ttft, b.ttft);
  const [itlP50, itlP95] = q(a.itl, b.itl);
  const [e2eP50, e2eP95] = q(a.e2e, b.e2e);
  const [queueP50, queueP95] = q(a.queue, b.queue);
  const preemptionsPerSecond =
    a.preemptions !== null && b.preemptions !== null && b.preemptions >= a.preemptions ? (b.preemptions - a.preemptions) / seconds : null;
  let successPerSecond: Record<string, number> | null = null;
  if (a.successByReason && b.successByReason) {
    successPerSecond = {};
    for (const [reason, n] of Object.entries(b.successByReason)) {
      const before = a.successByReason[reason] ?? 0;
      if (n < before) {
        successPerSecond = null;
        break;
      }
      successPerSecond[reason] = (n - before) / seconds;
    }
  }
  return { ttftP50, ttftP95, itlP50, itlP95, e2eP50, e2eP95, queueP50, queueP95, preemptionsPerSecond, successPerSecond };
}

const NAMED_REASONS = { stop: "successStopPerSecond", length: "successLengthPerSecond", abort: "successAbortPerSecond", error: "successErrorPerSecond" } as const;

const EMPTY_LATENCY_SAMPLE = Object.freeze(Object.fromEntries(LATENCY_FIELDS.map((f) => [f, null])) as unknown as LatencySample);

export function latencySample(f: LatencyFigures): LatencySample {
  // Most reads of an idle or steady server: nothing to compute (the caller copies it into its row).
  if (f === EMPTY_LATENCY_FIGURES) return EMPTY_LATENCY_SAMPLE;
  // Written out, not `{ ...rest }`: a rest copy of this object was ~5% of the watcher's CPU per read.
  const sps = f.successPerSecond;
  const out: LatencySample = {
    ttftP50: f.ttftP50,
    ttftP95: f.ttftP95,
    itlP50: f.itlP50,
    itlP95: f.itlP95,
    e2eP50: f.e2eP50,
    e2eP95: f.e2eP95,
    queueP50: f.queueP50,
    queueP95: f.queueP95,
    preemptionsPerSecond: f.preemptionsPerSecond,
    successStopPerSecond: null,
    successLengthPerSecond: null,
    successAbortPerSecond: null,
    successErrorPerSecond: null,
    successOtherPerSecond: null,
  };
  if (sps) {
    out.successStopPerSecond = 0;
    out.successLengthPerSecond = 0;
    out.successAbortPerSecond = 0;
    out.successErrorPerSecond = 0;
    out.successOtherPerSecond = 0;
    for (const reason in sps) {
      const k = Object.hasOwn(NAMED_REASONS, reason) ? NAMED_REASONS[reason as keyof typeof NAMED_REASONS] : "successOtherPerSecond";
      out[k] = (out[k] ?? 0) + sps[reason];
    }
  }
  return out;
}
