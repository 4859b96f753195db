/**
 * Crash loops: a server that keeps dying and being brought back by something other than stepwatch
 * (systemd's Restart=, a container runtime, a person on the host). Each new process stepwatch did
 * not ask for is a start; `restarts` of them within `windowMinutes` is a loop, and the loop is over
 * once `windowMinutes` pass without another. Pure and computed from the starts handed in (the
 * watcher seeds them from SQLite), so a restart of stepwatch neither forgets an open loop nor
 * opens it a second time.
 */

export interface CrashLoopRule {
  /** New processes not caused by stepwatch... */
  restarts: number;
  /** ...within this many minutes. */
  windowMinutes: number;
}

export interface CrashLoop {
  /** ms: the start that made it a loop (a loop's identity: notified once for it). */
  since: number;
  /** Starts not caused by stepwatch from the loop's first counted one to the newest. */
  restarts: number;
  /** ms: the newest start; the loop is over windowMinutes after it. */
  lastAt: number;
  /** ms: when it is over if no new process comes. */
  clearsAt: number;
}

/** The crash loop going on at `at`, or null; `starts` (ms, any order) are new processes stepwatch did not cause. */
export function crashLoopAt(starts: readonly number[], at: number, rule: CrashLoopRule): CrashLoop | null {
  const w = rule.windowMinutes * 60_000;
  const sorted = starts.filter((s) => s <= at).sort((a, b) => a - b);
  let loop = null as CrashLoop | null;
  let first = 0; // the oldest start still inside the window ending at sorted[i]
  for (let i = 0; i < sorted.length; i++) {
    const s = sorted[i];
    // A whole window without a new process ended the loop before this start.
    if (loop && s - loop.lastAt > w) loop = null;
    while (sorted[first] < s - w) first++;
    const inWindow = i - first + 1;
    if (loop !== null) loop = { since: loop.since, restarts: loop.restarts + 1, lastAt: s, clearsAt: s + w };
    else if (inWindow >= rule.restarts) loop = { since: s, restarts: inWindow, lastAt: s, clearsAt: s + w };
  }
  return loop && at - loop.lastAt <= w ? loop : null;
}
