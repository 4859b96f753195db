/**
 * The state-change timeline, shaped for reading (pure, tested). A long prefill makes vLLM's step
 * counter pause for a read or two, so a busy backend goes busy -> stalled -> busy every few
 * minutes; listed one by one these blips bury the change that matters. A "blip" is a visit to a
 * stall or an unjudged read (stalled, unknown; never down, stuck or a restart), lasted less than
 * `blipSeconds` and came back to where it started; a run of blips
 * between the same two states folds into one entry that says how many, and how long the longest was.
 */
import type { TransitionDTO } from "../api/types";
/** Shorter visits than this fold (a minute: longer than a few reads, shorter than any real hang). */
export const BLIP_SECONDS = 60;

/**
 * Only a stall (no progress yet) or a read that could not be judged folds. A short "down", a
 * restart (restarting, starting) or anything else is always listed on its own.
 */
const FOLDABLE = new Set(["stalled", "unknown"]);
function mayFold(state: string): boolean {
  return FOLDABLE.has(state);
}

export type TimelineEntry =
  | { kind: "change"; transition: TransitionDTO }
  | {
      kind: "blips";
      /** The state left and come back to (busy), and the short visit (stalled). */
      base: string;
      visited: string;
      count: number;
      first: number;
      last: number;
      longestSeconds: number;
      transitions: TransitionDTO[];
    };

/** Transitions (oldest first) to timeline entries (oldest first). */
export function collapseBlips(transitions: TransitionDTO[], blipSeconds = BLIP_SECONDS): TimelineEntry[] {
  const t = [...transitions].sort((a, b) => a.at - b.at);
  const out: TimelineEntry[] = [];
  let i = 0;
  while (i < t.length) {
    const a = t[i];
    const b = t[i + 1];
    const isBlip = b && a.from !== null && mayFold(a.to) && b.from === a.to && b.to === a.from && (b.at - a.at) / 1000 < blipSeconds;
    if (!isBlip) {
      out.push({ kind: "change", transition: a });
      i++;
      continue;
    }
    const prev = out[out.length - 1];
    const dur = (b.at - a.at) / 1000;
    if (prev && prev.kind === "blips" && prev.base === a.from && prev.visited === a.to) {
      prev.count++;
      prev.last = b.at;
      prev.longestSeconds = Math.max(prev.longestSeconds, dur);
      prev.transitions.push(a, b);
    } else {
      out.push({ kind: "blips", base: a.from!, visited: a.to, count: 1, first: a.at, last: b.at, longestSeconds: dur, transitions: [a, b] });
    }
    i += 2;
  }
  return out;
}

/** Keep the transitions that enter or leave `state` ("" keeps all). */
export function filterTransitions(transitions: TransitionDTO[], state: string): TransitionDTO[] {
  if (!state) return transitions;
  return transitions.filter((t) => t.to === state || t.from === state);
}
