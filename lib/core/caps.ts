/**
 * What stepwatch keeps from a backend is bounded, whatever the backend sends: a hostile or broken
 * /metrics with 30,000 model_name labels, a 1 MB label value or a 1 MB error page must not make
 * every stored reading, restart event, transition or API answer as large. Lists keep their first
 * MAX_LIST_ITEMS entries and end with one "… and N more" entry; strings keep MAX_TEXT characters
 * and say how many were cut. Pure.
 */
export const MAX_LIST_ITEMS = 16;
/** A model name, a label value. */
export const MAX_NAME = 200;
/** An error or reason sentence. */
export const MAX_TEXT = 500;

/**
 * Per data-parallel engine figures are kept for at most this many `engine` label values; past it a
 * server is judged on its sums (with a warning). Each engine's figures are a pass over the whole
 * exposition, so 30,000 made-up engine labels would otherwise cost 30,000 passes every poll.
 */
export const MAX_ENGINE_SLICES = 64;

/**
 * vLLM's latency histograms and finish reasons are kept in memory with each of the last 200
 * readings (for the next read's deltas): a histogram with more distinct `le` bounds than this is
 * not used (the figure stays empty; real ones have about 20), and past MAX_LIST_ITEMS finish
 * reasons all but stop/length/abort/error are added up as "other" (the only way they are shown).
 */
export const MAX_HISTOGRAM_BUCKETS = 100;

const MORE_RE = /^… and (\d+) more$/;
const CUT_RE = /… \(\d+ more characters\)$/;

export function capText(s: string, max = MAX_TEXT): string {
  return s.length > max ? `${s.slice(0, max)}… (${s.length - max} more characters)` : s;
}

/** The first `max` items (each cut to MAX_NAME), then "… and N more" when there were more. */
export function capList(items: readonly string[], max = MAX_LIST_ITEMS): string[] {
  const kept = items.slice(0, max).map((s) => capText(s, MAX_NAME));
  return items.length > max ? [...kept, `… and ${items.length - max} more`] : kept;
}

/** How many items a capped list stands for ("a", "b", "… and 5 more" is 7). */
export function countOf(list: readonly string[]): number {
  const m = list.length ? MORE_RE.exec(list[list.length - 1]) : null;
  return m ? list.length - 1 + Number(m[1]) : list.length;
}

/** The real names of a capped list (without the "… and N more" entry). */
export function namesOf(list: readonly string[]): string[] {
  return list.length && MORE_RE.test(list[list.length - 1]) ? list.slice(0, -1) : [...list];
}

/**
 * The first name of a capped list when it is a whole one (not cut short, not "… and N more"):
 * the name a probe may ask for. A cut name would make the probe fail for a reason of our own.
 */
export function firstWholeName(list: readonly string[] | undefined): string | undefined {
  const first = list?.[0];
  return first === undefined || MORE_RE.test(first) || CUT_RE.test(first) ? undefined : first;
}
