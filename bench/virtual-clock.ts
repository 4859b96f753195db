/**
 * A virtual clock for the watcher's LoopClock, so the real poll loops (lib/watcher) run a
 * simulated day in seconds. Time moves only when the driver calls advanceTo(). Before each jump
 * the driver waits until every loop is asleep again ("quiescent"): each loop of the watcher is
 * either running its step or sleeping, so when all of them sleep, nothing is in flight and
 * jumping the clock cannot make a read see the future.
 */
import type { LoopClock } from "../lib/watcher/loop";

interface Sleeper {
  at: number;
  seq: number;
  resolve: () => void;
}

const yieldToIo = () => new Promise<void>((r) => setImmediate(r));

export class VirtualClock implements LoopClock {
  private sleepers: Sleeper[] = [];
  private seq = 0;

  constructor(
    private t: number,
    /** How many loops sleep when nothing is in flight (the watcher: backends + proxies + flush + retention). */
    private readonly loops: number,
    /** Bound on the event-loop turns one settle may take (a step that never ends is a bug, not a wait). */
    private readonly maxTurns = 100_000,
  ) {}

  readonly now = (): number => this.t;

  readonly sleep = (ms: number, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((x) => x !== s);
        resolve();
      };
      // Woken by the clock: drop the abort listener, or a day of sleeps piles them up on one signal.
      const s: Sleeper = {
        at: this.t + Math.max(0, ms),
        seq: this.seq++,
        resolve: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      this.sleepers.push(s);
      signal.addEventListener("abort", onAbort, { once: true });
    });

  get sleeping(): number {
    return this.sleepers.length;
  }

  /** Waits (real event-loop turns) until every loop sleeps. */
  async settle(): Promise<void> {
    for (let i = 0; i < this.maxTurns; i++) {
      if (this.sleepers.length >= this.loops) return;
      await yieldToIo();
    }
    throw new Error(`virtual clock: only ${this.sleepers.length} of ${this.loops} loops asleep after ${this.maxTurns} turns`);
  }

  /** Moves time to `target`, waking each sleeper at its own time (earliest first) and settling after each. */
  async advanceTo(target: number): Promise<void> {
    for (;;) {
      await this.settle();
      let next: Sleeper | undefined;
      for (const s of this.sleepers) if (s.at <= target && (!next || s.at < next.at || (s.at === next.at && s.seq < next.seq))) next = s;
      if (!next) break;
      this.sleepers = this.sleepers.filter((x) => x !== next);
      if (next.at > this.t) this.t = next.at;
      next.resolve();
    }
    if (target > this.t) this.t = target;
  }
}
