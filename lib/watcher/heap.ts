/**
 * Two V8 settings for the process that runs the watcher, made when it starts (lib/runtime.ts, and
 * bench/scale-worker.ts so that the benchmark measures what ships). At 1000 backends every 5 s the
 * watcher keeps ~50 MB live, but with V8's defaults its heap grew to 190-230 MB before a full
 * collection, with 25-60 MB of read buffers waiting on it: 317-367 MB of RSS in bench/scale.ts's
 * setup, against 222-225 MB with these two, for the same CPU per read or less (1.14 against
 * 1.2-1.3 ms; docs/decisions.md, "Memory").
 *
 * - No allocation-site pretenuring. V8 allocates straight into the old generation at a site whose
 *   objects it has seen survive; the watcher's reads are short-lived, yet half of what outlived a
 *   young collection came from such sites (10 -> 5 MB/s promoted without; RSS 264-270 MB alone).
 * - A heap growing factor of 2: after a full collection the next is due when the heap reaches
 *   twice what was live; V8 picks its own factor (up to 4x) from how fast it collects against how
 *   fast the program allocates. Measured at 1000 backends when a read cost 1.1-1.4 ms: 1.5x 190 MB
 *   at 1.43 ms per read, 2x 208 MB at 1.42-1.46 ms, 2.5x 222-225 MB at 1.14-1.15 ms, 3x 250 MB at
 *   1.13 ms, so 2.5x was taken. Reads now allocate much less (no stream per answer, one text per
 *   reading), full collections are rarer for it, and 2x costs no more CPU: interleaved pairs at
 *   1000 backends (bench/scale-worker.ts, load 0.7-2.7) 246.7 MB RSS max at 2.5x against 230.1 MB
 *   at 2x (heap 111 -> 101 MB), 0.480 against 0.479 ms of CPU per read; 1.75x 229-231 MB at 0.50 ms.
 *   A fixed --max-old-space-size (to be sized per fleet) gave ~186 MB at 1.7-2.0 ms per read.
 *
 * Node documents v8.setFlagsFromString after start as "use with care": both are heuristics V8
 * reads as it collects (the benchmark shows them taking effect this way), and V8's own test
 * suites run with either. STEPWATCH_V8_TUNING=off keeps V8's defaults: to compare, or for a Node
 * release where one misbehaves. tests/unit/heap.test.ts checks this Node's V8 still has both.
 */
import v8 from "node:v8";

export const WATCHER_V8_FLAGS = ["--no-allocation-site-pretenuring", "--heap-growing-percent=100"] as const;

/** Makes WATCHER_V8_FLAGS this process's unless STEPWATCH_V8_TUNING=off; returns the flags it set. */
export function tuneHeapForWatcher(env: Record<string, string | undefined> = process.env): readonly string[] {
  if (env.STEPWATCH_V8_TUNING === "off") return [];
  for (const flag of WATCHER_V8_FLAGS) v8.setFlagsFromString(flag);
  return WATCHER_V8_FLAGS;
}
