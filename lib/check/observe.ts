/**
 * One observation of a backend: read its engine's answers, probe only when the classifier says
 * so, judge. This is the only way stepwatch judges a backend; the CLI and the watcher both call it.
 */
import { firstWholeName } from "../core/caps";
import { classify, shouldProbe } from "./classify";
import { lastEngine, learnedProbe, probeBackend, readBackend, type BackendTarget, type ProbeOptions, type ReadOptions } from "./read";
import type { PendingRestart, ProbeResult, Reading, Thresholds, Verdict } from "../core/types";

export interface ObserveContext {
  thresholds: Thresholds;
  now?: () => number;
  read?: ReadOptions;
  pendingRestart?: PendingRestart | null;
  /**
   * Who asks the backend: the watcher's read threads (lib/watcher/read-pool.ts), or readBackend
   * and probeBackend in this thread by default. Judging stays here either way.
   */
  reader?: Reader;
}

/** The two ways observe asks a backend anything. */
export interface Reader {
  read(target: BackendTarget, opts: ReadOptions): Promise<Reading>;
  probe(target: BackendTarget, opts: ProbeOptions): Promise<ProbeResult>;
}

const IN_THREAD: Reader = { read: readBackend, probe: probeBackend };

export async function observe(
  target: BackendTarget,
  history: Reading[],
  ctx: ObserveContext,
): Promise<{ reading: Reading; verdict: Verdict }> {
  const now = ctx.now ?? Date.now;
  const reader = ctx.reader ?? IN_THREAD;
  // One copy of the options per request (this runs for every read of every backend).
  const reading = await reader.read(target, { engineHint: lastEngine(history), ...ctx.read, now });
  const input = { history, reading, thresholds: ctx.thresholds, now: now(), pendingRestart: ctx.pendingRestart, probe: target.probe };
  if (shouldProbe(input)) {
    reading.probe = await reader.probe(target, {
      ...ctx.read,
      now,
      // A name cut by the caps is not asked for: the probe then lists /v1/models itself.
      model: target.model ?? firstWholeName(reading.metrics?.models),
      engine: reading.engine,
      learned: learnedProbe(history),
    });
  }
  return { reading, verdict: classify({ ...input, now: now() }) };
}
