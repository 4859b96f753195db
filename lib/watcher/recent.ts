/**
 * A backend's points for the fleet page's sparkline (`[at, running, generation tokens/s]`, the
 * newest RECENT_POINTS), kept in one Float64Array ring rather than an array of arrays: at 1000
 * backends the 60,000 little tuples and their boxed numbers were ~7 MB of the watcher's live heap
 * (which V8 lets grow to 2x: lib/watcher/heap.ts), and the shift of a full array on every read
 * allocated. A missing figure is stored as NaN and given back as null (JSON writes NaN as null too).
 */
export const RECENT_POINTS = 60;

export type RecentPoint = [at: number, running: number | null, generationTokensPerSecond: number | null];

const orNull = (v: number): number | null => (Number.isNaN(v) ? null : v);

export class RecentPoints {
  private readonly data = new Float64Array(RECENT_POINTS * 3);
  /** Where the next point goes. */
  private next = 0;
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(at: number, running: number | null, genTps: number | null): void {
    const i = this.next * 3;
    this.data[i] = at;
    this.data[i + 1] = running ?? NaN;
    this.data[i + 2] = genTps ?? NaN;
    this.next = (this.next + 1) % RECENT_POINTS;
    if (this.count < RECENT_POINTS) this.count++;
  }

  /** The points, oldest first, through `f` (as Array.prototype.map over the tuples). */
  map<T>(f: (p: RecentPoint) => T): T[] {
    const out: T[] = new Array(this.count);
    const first = (this.next - this.count + RECENT_POINTS) % RECENT_POINTS;
    for (let k = 0; k < this.count; k++) {
      const i = ((first + k) % RECENT_POINTS) * 3;
      out[k] = f([this.data[i], orNull(this.data[i + 1]), orNull(this.data[i + 2])]);
    }
    return out;
  }
}
