/**
 * Outages, derived from the recorded state transitions (pure, tested; the query is in
 * db/queries/readings.ts). An outage is an episode in which the backend could not serve, whoever caused it:
 * - `down` or `stuck` (what stepwatch would recommend a restart for);
 * - `unknown` for longer than `unknownAfterSeconds` (one failed read is not an outage);
 * - a restart from outside stepwatch (systemd, a crash and a respawn, another operator): a new
 *   process seen while the backend was serving, i.e. `starting` entered from a healthy state;
 * - a restart asked for from stepwatch (`restarting`), with who asked.
 * The episode lasts until the backend is serving again (idle or busy, or any state that is not part
 * of an outage); states inside it (down -> starting -> restarting) do not split it. Its `state` is
 * the worst state seen, its `cause` the reason recorded when it began.
 */
import type { Transition } from "./core/history";
import type { Outage } from "./core/outages";

/** Worst first: the state an episode is named by. */
const SEVERITY = ["down", "stuck", "restarting", "starting", "unknown"] as const;
const IN_OUTAGE = new Set<string>(SEVERITY);
const SERVING = new Set(["idle", "busy", "stalled"]);

export interface OutageOptions {
  /** An `unknown` episode shorter than this is a failed read or two, not an outage. */
  unknownAfterSeconds: number;
  now: number;
}

function worse(a: string, b: string): string {
  return SEVERITY.indexOf(a as (typeof SEVERITY)[number]) <= SEVERITY.indexOf(b as (typeof SEVERITY)[number]) ? a : b;
}

function causeOf(t: Transition): string {
  const why = t.reasons[0]?.text ?? "";
  if (t.to === "starting") return `restarted outside stepwatch (a new process while it was ${t.from})${why ? `: ${why}` : ""}`;
  if (t.to === "restarting") return `restart asked for from stepwatch${why ? `: ${why}` : ""}`;
  return why ? `${t.to}: ${why}` : t.to;
}

/** Does this transition begin an outage, given the state before it? */
function begins(t: Transition): boolean {
  if (t.to === "starting") return t.from !== null && SERVING.has(t.from); // a new process while serving
  return IN_OUTAGE.has(t.to);
}

/**
 * The outages of one backend from its transitions (oldest first, including the last one before the
 * window so an outage already going on at `from` is seen), clipped to nothing: an outage that
 * overlaps [from, to] is returned whole.
 */
export function deriveOutages(backendId: string, transitions: Transition[], from: number, to: number, opts: OutageOptions): Outage[] {
  const sorted = [...transitions].sort((a, b) => a.at - b.at);
  const out: Outage[] = [];
  let cur: { start: number; state: string; cause: string; onlyUnknown: boolean } | null = null;
  const close = (end: number | null) => {
    if (!cur) return;
    const until = end ?? opts.now;
    const durationSeconds = Math.max(0, (until - cur.start) / 1000);
    const keep = !cur.onlyUnknown || durationSeconds >= opts.unknownAfterSeconds;
    if (keep) out.push({ backendId, state: cur.state, cause: cur.cause, start: cur.start, end, durationSeconds });
    cur = null;
  };
  for (const t of sorted) {
    if (cur) {
      if (IN_OUTAGE.has(t.to)) {
        cur.state = worse(cur.state, t.to);
        if (t.to !== "unknown" && cur.onlyUnknown) {
          // A long silence that turned out to be a crash: name it by what it became.
          cur.onlyUnknown = false;
          cur.cause = causeOf(t);
        }
      } else {
        close(t.at);
      }
    } else if (begins(t)) {
      cur = { start: t.at, state: t.to, cause: causeOf(t), onlyUnknown: t.to === "unknown" };
    }
  }
  close(null);
  return out.filter((o) => o.start <= to && (o.end === null || o.end >= from));
}

/**
 * Uptime over [from, to] as a percentage (0..100): the share of the watched time not inside an
 * outage. Time before the first transition (stepwatch was not yet watching) is not counted; null
 * when nothing of the window was watched.
 */
export function uptimePercent(outages: Outage[], firstSeen: number | null, from: number, to: number, now: number): number | null {
  if (firstSeen === null) return null;
  const start = Math.max(from, firstSeen);
  const end = Math.min(to, now);
  if (end <= start) return null;
  let down = 0;
  for (const o of outages) {
    const s = Math.max(o.start, start);
    const e = Math.min(o.end ?? now, end);
    if (e > s) down += e - s;
  }
  return Math.max(0, Math.min(100, (100 * (end - start - down)) / (end - start)));
}

/**
 * Name who restarted: an outage that holds a restart asked for from stepwatch (requested between
 * its start and end, or up to `slackMs` before the start: the request comes a read before the
 * transition to restarting) says so, with the operator and the note. Each restart names one
 * outage only, the first it fits: a crash right after a restart is not blamed on it.
 */
export function withRestartCauses(
  outages: Outage[],
  restarts: Array<{ backendId: string; requestedAt: number; requestedBy: string; note: string | null }>,
  slackMs = 30_000,
): Outage[] {
  const used = new Set<(typeof restarts)[number]>();
  const named = new Map<Outage, Outage>();
  for (const o of [...outages].sort((a, b) => a.start - b.start)) {
    const r = restarts.find((x) => !used.has(x) && x.backendId === o.backendId && x.requestedAt >= o.start - slackMs && x.requestedAt <= (o.end ?? Infinity));
    if (!r) continue;
    used.add(r);
    const who = `restart asked for from stepwatch by ${r.requestedBy}${r.note ? ` (“${r.note}”)` : ""}`;
    // Restarted because it was stuck or down: keep that cause first, and say who restarted it.
    named.set(o, { ...o, cause: o.cause.startsWith("restart") ? who : `${o.cause}; ${who}` });
  }
  return outages.map((o) => named.get(o) ?? o);
}
