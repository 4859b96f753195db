/**
 * A /metrics body -> a series index, or why it is not Prometheus text. Shared by every adapter:
 * a body where unparseable lines outnumber samples (an HTML error page, JSON, a truncated binary)
 * is "not Prometheus text", never a server with no load.
 */
import { parsePrometheus, type LineCache, type Sample } from "../metrics/prometheus";
import { buildIndex, type Index } from "./series";

export type Exposition =
  | {
      ok: true;
      index: Index;
      sampleCount: number;
      errorCount: number;
      warnings: string[];
      /** Every sample kept (the index leaves out `_created`), and the lines `families` skipped: what a filtered answer is checked by. */
      samples: readonly Sample[];
      skippedLines: number;
    }
  | { ok: false; error: string; sampleCount: number; errorCount: number };

const quote = (s: string) => `'${s.length > 40 ? `${s.slice(0, 40)}...` : s}'`;

/**
 * `families` (an adapter's): parse only those (see ParseOptions.families). The counts stay the
 * whole body's: a skipped line is a sample line all the same, so "not Prometheus text" and the
 * "found N series" messages mean what they mean without the filter. `cache`: the same target's
 * lines of last time (see LineCache).
 */
export function readExposition(text: string, families?: ReadonlySet<string>, cache?: LineCache): Exposition {
  const parsed = parsePrometheus(text, { families, cache });
  const sampleCount = parsed.samples.length + parsed.skippedLines;
  const errorCount = parsed.errorCount;
  const first = parsed.errors[0];
  const firstError = first ? ` (first: line ${first.line} ${quote(first.text)}: ${first.message})` : "";
  if (sampleCount === 0 && errorCount === 0) {
    const error = text.trim() === "" ? "empty /metrics body" : "not Prometheus text: no samples, only comments";
    return { ok: false, error, sampleCount, errorCount };
  }
  if (sampleCount === 0 || errorCount > sampleCount) {
    return { ok: false, error: `not Prometheus text: ${errorCount} of ${sampleCount + errorCount} lines unparseable${firstError}`, sampleCount, errorCount };
  }
  const warnings = errorCount > 0 ? [`${errorCount} unparseable line${errorCount === 1 ? "" : "s"} skipped${firstError}`] : [];
  return { ok: true, index: buildIndex(parsed), sampleCount, errorCount, warnings, samples: parsed.samples, skippedLines: parsed.skippedLines };
}
