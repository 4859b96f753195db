/**
 * How fast the machine was while a run measured, beside the load average: this project's machines
 * are VMs whose speed differs from one to the next (the same code's incident replay took 25.7 s on
 * one and 8.2 s on another), and an absolute goal (a p99 in ms) moves with them. Two figures:
 * - `cpuReferenceMs`: one fixed single-threaded workload, the median of 5 (SHA-256 of 16 MB and
 *   JSON round trips of a fixed object: hashing, allocation, GC), timed before anything starts;
 *   twice the figure is a core half as fast, whatever the load average says;
 * - `stealPercent`: the share of the CPU time the hypervisor gave to other guests while the run
 *   measured (/proc/stat `steal`), which no load average inside the VM shows.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import { percentile, round } from "./stats";

const MB = 1 << 20;

function referenceOnce(block: Buffer, doc: unknown): number {
  const t0 = performance.now();
  const h = createHash("sha256");
  for (let i = 0; i < 16; i++) h.update(block);
  h.digest();
  let n = 0;
  for (let i = 0; i < 40; i++) n += (JSON.parse(JSON.stringify(doc)) as unknown[]).length;
  if (n !== 40 * 2000) throw new Error("reference workload: the round trip lost entries");
  return performance.now() - t0;
}

/** The median of 5 runs of the reference workload, in ms (lower is faster). */
export function cpuReferenceMs(): number {
  const block = Buffer.alloc(MB, 7);
  const doc = Array.from({ length: 2000 }, (_, i) => ({ id: `b${i}`, state: i % 3 ? "idle" : "busy", running: i % 7, at: 1_700_000_000_000 + i, reasons: [`reason ${i}`] }));
  referenceOnce(block, doc); // warm-up: the JIT, the first allocations
  const runs = Array.from({ length: 5 }, () => referenceOnce(block, doc));
  return round(percentile(runs, 50), 1);
}

/** The CPU counters of /proc/stat's "cpu" line (all cores), or null off Linux. */
export function cpuTicks(): { steal: number; total: number } | null {
  try {
    const line = fs.readFileSync("/proc/stat", "utf8").split("\n", 1)[0];
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice).
    if (f.length < 8 || f.some((x) => !Number.isFinite(x))) return null;
    return { steal: f[7], total: f.slice(0, 8).reduce((a, b) => a + b, 0) };
  } catch {
    return null;
  }
}

/** Steal between two readings of cpuTicks, in percent of all CPU time (null when unknown). */
export function stealPercent(from: ReturnType<typeof cpuTicks>, to: ReturnType<typeof cpuTicks>): number | null {
  if (!from || !to || to.total <= from.total) return null;
  return round(((to.steal - from.steal) / (to.total - from.total)) * 100, 1);
}
