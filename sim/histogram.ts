/** A cumulative Prometheus histogram that can record the same value many times at once. */
export class Histogram {
  /** Non-cumulative counts per bound; the last slot is +Inf. */
  private readonly counts: number[];
  count = 0;
  sum = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Array(bounds.length + 1).fill(0);
  }

  /**
   * Record `value` `times` times. Taking a multiplicity lets the engine apply k identical decode
   * steps in one call instead of looping per step (1000 simulated backends share one process).
   */
  observe(value: number, times = 1): void {
    if (times <= 0) return;
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]) i++;
    this.counts[i] += times;
    this.count += times;
    this.sum += value * times;
  }

  /** Non-cumulative counts per bound, the last one +Inf (read-only: the renderer sums them as it writes). */
  get bucketCounts(): readonly number[] {
    return this.counts;
  }

  /** [upper bound, cumulative count] pairs, ending with +Inf = count. */
  cumulative(): Array<[number, number]> {
    let acc = 0;
    return this.counts.map((c, i) => {
      acc += c;
      return [i < this.bounds.length ? this.bounds[i] : Infinity, acc];
    });
  }
}

/** Bucket bounds of vLLM V1 (0.29), copied as numbers from a real scrape's `le` labels. */
export const BUCKETS = {
  iterationTokens: [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
  ttft: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560],
  interToken: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80],
  requestSeconds: [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680],
} as const;

/** vLLM's 1-2-5 series up to max_model_len (request_prompt_tokens, request_params_max_tokens...). */
export function buckets125(max: number): number[] {
  const out: number[] = [];
  for (let exp = 1; ; exp *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * exp > max) return out;
      out.push(m * exp);
    }
  }
}
