/**
 * Outages, derived from the recorded state transitions (pure, tested; the query is in
 * db/queries/readings.ts). An outage is an episode in which the backend could not serve, whoever caused it:
 * - `down` or `stuck` (what stepwatch would recommend a restart for);
 * - `unknown` for longer than `unknownAfterSeconds` (one failed read is not an outage);
 * - a restart from outside stepwatch (systemd, a crash and a respawn, another operator): a new
 *   process seen while the backend was serving, i.e. `starting` entered from a healthy state;
 * - a restart asked for from stepwatch (`restarting`), with who asked.
 * The episode lasts until the backend is serving again (idle or busy, or any state that is not part
 * of an outage); states inside it (down -> starting -> restarting) do not split it. It starts at the
 * first failed read: a refused read is recorded as `unknown` before the second makes it `down`, and
 * a `stuck` is the `stalled` before it gone on (no progress since then). Its `state` is the worst
 * state seen, `states` all of them, its `cause` the reason recorded when it began. Time inside a
 * maintenance period is planned, not downtime: it is counted apart (`maintenanceSeconds`) and left
 * out of uptime. A `down` that lasted past the startup grace (`graceSeconds`) before anything
 * brought the server back (its supervisor: `starting`; stepwatch: `restarting`) is named
 * "exited and was not restarted" (`exitedNotRestarted`).
 */
import type { Transition } from "./core/history";
import type { AvailabilityPeriod, MaintenanceSpan, Outage } from "./core/outages";
import { BACKEND_STATES, type BackendState } from "./core/states";

/**
 * Worst first: the state an episode is named by. `stuck` ranks above `down`: a stuck server holds
 * its clients' requests with no answer (the incident stepwatch exists for), a down one refuses them
 * at once; and a stuck server restarted is briefly down while it loads, which is the cure, not a
 * worse outage (a 12-minute stuck with a minute of restart is "stuck").
 */
const SEVERITY = ["stuck", "down", "restarting", "starting", "unknown"] as const;
const IN_OUTAGE = new Set<string>(SEVERITY);
const SERVING = new Set(["idle", "busy", "stalled"]);

export interface OutageOptions {
  /** An `unknown` episode shorter than this is a failed read or two, not an outage. */
  unknownAfterSeconds: number;
  now: number;
  /** The backend's maintenance periods (any order, may overlap). */
  maintenance?: readonly MaintenanceSpan[];
  /**
   * startupGraceSeconds: a server down longer than this without a new process was not restarted
   * by its supervisor. Not given: no outage is named so.
   */
  graceSeconds?: number;
}

const rank = (state: string) => SEVERITY.indexOf(state as (typeof SEVERITY)[number]);

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

/** The spans sorted and merged, so an overlap is never counted twice. */
export function mergeSpans(spans: readonly MaintenanceSpan[]): MaintenanceSpan[] {
  const out: MaintenanceSpan[] = [];
  for (const sp of [...spans].filter((x) => x.end > x.start).sort((a, b) => a.start - b.start)) {
    const last = out[out.length - 1];
    if (last && sp.start <= last.end) last.end = Math.max(last.end, sp.end);
    else out.push({ ...sp });
  }
  return out;
}

/** ms of [start, end) inside the merged spans. */
function overlapMs(merged: readonly MaintenanceSpan[], start: number, end: number): number {
  let ms = 0;
  for (const sp of merged) ms += Math.max(0, Math.min(end, sp.end) - Math.max(start, sp.start));
  return ms;
}

/**
 * The outages of one backend from its transitions (oldest first, including the last one before the
 * window so an outage already going on at `from` is seen), clipped to nothing: an outage that
 * overlaps [from, to] is returned whole.
 */
export function deriveOutages(backendId: string, transitions: Transition[], from: number, to: number, opts: OutageOptions): Outage[] {
  const sorted = [...transitions].sort((a, b) => a.at - b.at);
  const maintenance = mergeSpans(opts.maintenance ?? []);
  const out: Outage[] = [];
  let cur: { start: number; states: Set<string>; cause: string; onlyUnknown: boolean; downSince: number | null; exited: boolean } | null = null;
  const graceMs = opts.graceSeconds === undefined ? Infinity : opts.graceSeconds * 1000;
  /** A down span ends (at `at`): past the grace, nothing brought the server back in time. */
  const endDown = (at: number) => {
    if (!cur || cur.downSince === null) return;
    if (at - cur.downSince >= graceMs) cur.exited = true;
    cur.downSince = null;
  };
  const close = (end: number | null) => {
    if (!cur) return;
    const until = end ?? opts.now;
    endDown(until);
    const durationSeconds = Math.max(0, (until - cur.start) / 1000);
    const keep = !cur.onlyUnknown || durationSeconds >= opts.unknownAfterSeconds;
    const states = [...cur.states].sort((a, b) => rank(a) - rank(b));
    const inside = overlapMs(maintenance, cur.start, until);
    if (keep) {
      const exited = cur.exited ? `; exited and was not restarted within startupGraceSeconds (${opts.graceSeconds} s)` : "";
      out.push({
        backendId,
        state: states[0],
        states,
        cause: cur.cause + exited,
        start: cur.start,
        end,
        durationSeconds,
        maintenanceSeconds: inside / 1000,
        inMaintenance: maintenance.some((sp) => sp.start < until && sp.end > cur!.start),
        exitedNotRestarted: cur.exited,
      });
    }
    cur = null;
  };
  let prev: Transition | null = null;
  for (const t of sorted) {
    if (cur) {
      if (t.to !== "down") endDown(t.at);
      // The process went away at the refused read before the second that made it down.
      else if (cur.downSince === null) cur.downSince = prev?.to === "unknown" && prev.at >= cur.start ? prev.at : t.at;
      if (IN_OUTAGE.has(t.to)) {
        cur.states.add(t.to);
        if (t.to !== "unknown" && cur.onlyUnknown) {
          // A long silence that turned out to be a crash: name it by what it became.
          cur.onlyUnknown = false;
          cur.cause = causeOf(t);
        }
      } else {
        close(t.at);
      }
    } else if (begins(t)) {
      // Stuck is "no progress across two waits": the requests stopped being served at the first
      // read without progress, which is the stall recorded just before.
      const start = t.to === "stuck" && t.from === "stalled" && prev?.to === "stalled" ? prev.at : t.at;
      cur = { start, states: new Set([t.to]), cause: causeOf(t), onlyUnknown: t.to === "unknown", downSince: t.to === "down" ? t.at : null, exited: false };
    }
    prev = t;
  }
  close(null);
  return out.filter((o) => o.start <= to && (o.end === null || o.end >= from));
}

/**
 * Uptime over [from, to] as a percentage (0..100): the share of the watched time not inside an
 * outage. Time before the first transition (stepwatch was not yet watching) is not counted, nor
 * maintenance (planned: neither up nor down); null when nothing of the window was watched.
 */
export function uptimePercent(
  outages: Outage[],
  firstSeen: number | null,
  from: number,
  to: number,
  now: number,
  maintenance: readonly MaintenanceSpan[] = [],
): number | null {
  if (firstSeen === null) return null;
  const start = Math.max(from, firstSeen);
  const end = Math.min(to, now);
  if (end <= start) return null;
  const planned = mergeSpans(maintenance);
  const watched = end - start - overlapMs(planned, start, end);
  if (watched <= 0) return null;
  // Outages of one backend never overlap (an episode ends before the next begins).
  let down = 0;
  for (const o of outages) {
    const s = Math.max(o.start, start);
    const e = Math.min(o.end ?? now, end);
    if (e > s) down += e - s - overlapMs(planned, s, e);
  }
  return Math.max(0, Math.min(100, (100 * (watched - down)) / watched));
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

/**
 * The periods of `period` (UTC calendar days, ISO weeks from Monday 00:00, months) that overlap
 * [from, to), each clipped to it: the first and last may be partial.
 */
export function periodsBetween(from: number, to: number, period: AvailabilityPeriod): Array<{ start: number; end: number }> {
  const out: Array<{ start: number; end: number }> = [];
  let start = periodStart(from, period);
  while (start < to) {
    const next = nextPeriod(start, period);
    out.push({ start: Math.max(start, from), end: Math.min(next, to) });
    start = next;
  }
  return out;
}

function periodStart(at: number, period: AvailabilityPeriod): number {
  const d = new Date(at);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (period === "day") return day;
  if (period === "week") return day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

function nextPeriod(start: number, period: AvailabilityPeriod): number {
  if (period === "day") return start + 86_400_000;
  if (period === "week") return start + 7 * 86_400_000;
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/**
 * Where the time of [start, end) went, in ms: each state from the transitions (oldest first, the
 * one before `start` included, so the state the period starts in is known), `unknown` before the
 * first transition (stepwatch was not watching yet), and the time inside maintenance apart. The
 * states and the maintenance add up to end - start exactly.
 */
export function timeInStates(
  transitions: readonly Transition[],
  start: number,
  end: number,
  maintenance: readonly MaintenanceSpan[] = [],
): { states: Record<BackendState, number>; maintenanceMs: number } {
  const states = Object.fromEntries(BACKEND_STATES.map((s) => [s, 0])) as Record<BackendState, number>;
  const planned = mergeSpans(maintenance);
  let maintenanceMs = 0;
  const add = (state: string, a: number, b: number) => {
    const s = Math.max(a, start);
    const e = Math.min(b, end);
    if (e <= s) return;
    const inside = overlapMs(planned, s, e);
    maintenanceMs += inside;
    const key = (BACKEND_STATES as readonly string[]).includes(state) ? (state as BackendState) : "unknown";
    states[key] += e - s - inside;
  };
  const sorted = [...transitions].sort((a, b) => a.at - b.at);
  let state = "unknown";
  let since = start;
  for (const t of sorted) {
    if (t.at >= end) break;
    add(state, since, t.at);
    state = t.to;
    since = Math.max(since, t.at);
  }
  add(state, since, end);
  return { states, maintenanceMs };
}
