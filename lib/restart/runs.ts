/**
 * Who may run restarts in this process, and which ones it is carrying out. One per process (the
 * watcher holds it; lib/runtime.ts hands it to the restart verb): Next's route handlers and
 * instrumentation are separate module instances, so this cannot be a module-level set.
 *
 * An event is "ours" from the moment this leader takes it (asked here, or picked up from another
 * replica's request) until its result is recorded: the leader's pick-up does not take it twice
 * while its evidence is captured, and a takeover does not call it `unknown` while it runs here.
 */
import { soleGate, type LeaderGate } from "../core/cluster";

export class RestartRuns {
  private readonly ours = new Set<number>();

  constructor(readonly leader: LeaderGate = soleGate()) {}

  /** True when this call took the event (it was not ours yet). */
  take(id: number): boolean {
    if (this.ours.has(id)) return false;
    this.ours.add(id);
    return true;
  }

  release(id: number): void {
    this.ours.delete(id);
  }

  isOurs(id: number): boolean {
    return this.ours.has(id);
  }
}
