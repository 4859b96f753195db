/**
 * What the on-call loop knows per backend besides the verdict: the acknowledgement in force and
 * the maintenance periods (from the API, in SQLite; and the config's windows). Read from SQLite at
 * start and after each change through the verbs (lib/oncall/verbs.ts), never per poll: the poll
 * path only reads memory. Lives on the watcher (one per process, see lib/runtime.ts). A verb asked
 * on another replica is seen by `follow` (the watcher calls it once a second): one small read.
 */
import type { Db } from "../../db/types";
import { activeAcknowledgement, clearAcknowledgements, onCallWatermark, openMaintenance } from "../../db/queries/oncall";
import type { AcknowledgementRow, MaintenancePeriodRow } from "../../db/schema";
import type { MaintenanceWindowConfig } from "../config";

export interface MaintenanceNow {
  /** When it ends (ms). */
  until: number;
  by: string | null;
  note: string | null;
  source: "api" | "config";
}

const DAY_MS = 86_400_000;

/** The spans of one config window for this backend that may cover [from, to] (weekly windows in UTC). */
function spansOf(w: MaintenanceWindowConfig, backendId: string, from: number, to: number): Array<[number, number]> {
  if (w.backends !== null && !w.backends.includes(backendId)) return [];
  if (w.kind === "once") return [[w.start, w.end]];
  const spans: Array<[number, number]> = [];
  // A weekly window may have started up to 7 days before `from` (minutes is at most a week).
  for (let day = Math.floor(from / DAY_MS) * DAY_MS - 7 * DAY_MS; day <= to; day += DAY_MS) {
    if (!w.days.includes(new Date(day).getUTCDay())) continue;
    const start = day + w.minuteOfDay * 60_000;
    spans.push([start, start + w.minutes * 60_000]);
  }
  return spans;
}

/** The config window covering `now` for this backend (weekly windows in UTC), the one ending last. */
export function configWindowAt(windows: MaintenanceWindowConfig[], backendId: string, now: number): { start: number; end: number; note: string | null } | null {
  let best: { start: number; end: number; note: string | null } | null = null;
  for (const w of windows) {
    for (const [start, end] of spansOf(w, backendId, now, now)) {
      if (start <= now && now < end && (!best || end > best.end)) best = { start, end, note: w.note };
    }
  }
  return best;
}

/** Every config window's span for this backend that overlaps [from, to] (the outages' planned time). */
export function configWindowsBetween(windows: MaintenanceWindowConfig[], backendId: string, from: number, to: number): Array<{ start: number; end: number }> {
  return windows.flatMap((w) => spansOf(w, backendId, from, to).filter(([s, e]) => s <= to && e > from)).map(([start, end]) => ({ start, end }));
}

export class OnCallBook {
  private readonly acks = new Map<string, AcknowledgementRow | null>();
  private readonly periods = new Map<string, MaintenancePeriodRow[]>();
  private changes = 0;
  /** What the tables looked like at the last read (onCallWatermark); null until read once. */
  private watermark: string | null = null;

  constructor(
    private readonly db: Db,
    private windows: MaintenanceWindowConfig[],
    backendIds: string[],
    private readonly now: () => number,
    private readonly onError: (what: string, e: unknown) => void = () => {},
  ) {
    this.follow();
    for (const id of backendIds) this.refresh(id);
  }

  /**
   * Re-reads every backend when acknowledgements or maintenance changed since the last look, by any
   * process sharing the database (a replica's verb): a leader then neither reminds about a backend
   * acknowledged elsewhere nor pages one put in maintenance there, and every replica shows it.
   */
  follow(): void {
    try {
      const w = onCallWatermark(this.db);
      if (this.watermark !== null && w !== this.watermark) for (const id of [...this.acks.keys()]) this.refresh(id);
      this.watermark = w;
    } catch (e) {
      this.onError("cannot read acknowledgements or maintenance", e);
    }
  }

  /**
   * Counts the changes to what the book holds: the fleet's encoded snapshot (lib/api/fleet.ts) is
   * re-made when it moved, so an acknowledgement or a maintenance shows (a new ETag) at once.
   */
  get revision(): number {
    return this.changes;
  }

  /** A config reload's maintenance windows; moves the revision (the fleet shows them at once). */
  setWindows(windows: MaintenanceWindowConfig[]): void {
    this.windows = windows;
    this.changes++;
  }

  /** Re-read one backend's acknowledgement and maintenance (after a verb changed them). */
  refresh(backendId: string): void {
    this.changes++;
    try {
      this.acks.set(backendId, activeAcknowledgement(this.db, backendId) ?? null);
      this.periods.set(backendId, openMaintenance(this.db, backendId, this.now()));
    } catch (e) {
      this.onError("cannot read acknowledgements or maintenance", e); // keep what was known
    }
  }

  acknowledgement(backendId: string): AcknowledgementRow | null {
    return this.acks.get(backendId) ?? null;
  }

  /** Clears the acknowledgement in memory; the returned function writes it (inside the caller's transaction). */
  clearAcknowledgement(backendId: string, at: number, reason: string): () => void {
    this.acks.set(backendId, null);
    this.changes++;
    return () => void clearAcknowledgements(this.db, backendId, at, reason);
  }

  /**
   * The one answer to "is this backend silenced at `now`, and why": the maintenance in force (an
   * API period or a config window; the later end wins), or null. While it holds, nothing is sent
   * (the watcher's notify), no restart is recommended (restartRecommended's `silenced`, the policy
   * and the fleet view) and no unattended restart runs (lib/oncall/unattended.ts).
   */
  silenced(backendId: string, now: number): MaintenanceNow | null {
    let best: MaintenanceNow | null = null;
    for (const p of this.periods.get(backendId) ?? []) {
      if (p.endedAt === null && p.startsAt <= now && now < p.endsAt && (!best || p.endsAt > best.until)) {
        best = { until: p.endsAt, by: p.by, note: p.note, source: "api" };
      }
    }
    const w = configWindowAt(this.windows, backendId, now);
    if (w && (!best || w.end > best.until)) best = { until: w.end, by: null, note: w.note, source: "config" };
    return best;
  }
}
