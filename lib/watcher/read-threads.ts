/**
 * How many read threads (lib/watcher/read-pool.ts) the watcher runs for a config. With "auto",
 * none until the fleet asks for more reads a second than one thread does on time beside judging,
 * storing and serving the dashboard, then one per AUTO_READS_PER_THREAD, leaving a core to the
 * watcher's own thread (bench/RESULTS.md, the 5000-backend rows: at 1000 reads a second on two
 * cores, one thread alone fell 2.8 s behind at p99; with one read thread, 0.24 s).
 */
import os from "node:os";
import type { Config } from "../config";

/** Below this many reads a second (backends / pollIntervalSeconds), "auto" runs no read thread. */
export const AUTO_MIN_READS_PER_SECOND = 400;
/** What one read thread is given under "auto": about half a core at ~1.2 ms of CPU per read. */
export const AUTO_READS_PER_THREAD = 500;
/** "auto" never runs more than this many. */
export const AUTO_MAX_THREADS = 8;

export function readThreadsFor(config: Pick<Config, "readThreads" | "backends" | "pollIntervalSeconds">, cores: number = os.availableParallelism()): number {
  if (config.readThreads !== "auto") return config.readThreads;
  const perSecond = config.backends.length / config.pollIntervalSeconds;
  if (perSecond < AUTO_MIN_READS_PER_SECOND) return 0;
  return Math.max(1, Math.min(Math.ceil(perSecond / AUTO_READS_PER_THREAD), cores - 1, AUTO_MAX_THREADS));
}
