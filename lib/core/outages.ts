/** The words of outages: an episode in which a backend could not serve (lib/outages.ts derives them). */
export interface Outage {
  backendId: string;
  /** The worst state of the episode (stuck, down, restarting, starting, unknown: worst first). */
  state: string;
  /** Every state the episode went through, worst first (`state` is the first). */
  states: string[];
  cause: string;
  /** ms since epoch. */
  start: number;
  /** null while the outage is still going on. */
  end: number | null;
  /** Until `end`, or until now for an open outage. */
  durationSeconds: number;
  /** Of `durationSeconds`, the time inside maintenance: planned, so not downtime and not counted against uptime. */
  maintenanceSeconds: number;
  /** The episode overlaps a maintenance period (the API's or the config's windows). */
  inMaintenance: boolean;
  /**
   * The server went away (down) and nothing brought it back within startupGraceSeconds: a silent
   * exit its supervisor did not restart (vLLM can exit 0 when its engine core dies, which
   * `Restart=on-failure` never restarts). The cause says so too.
   */
  exitedNotRestarted: boolean;
}

/** A span of maintenance, ms since epoch ([start, end)). */
export interface MaintenanceSpan {
  start: number;
  end: number;
}


export const UPTIME_WINDOWS = [
  { key: "24h", ms: 24 * 3600_000 },
  { key: "7d", ms: 7 * 24 * 3600_000 },
  { key: "30d", ms: 30 * 24 * 3600_000 },
] as const;
export type UptimeWindow = (typeof UPTIME_WINDOWS)[number]["key"];


/** The periods an availability report is cut into: UTC calendar days, ISO weeks (from Monday), months. */
export const AVAILABILITY_PERIODS = ["day", "week", "month"] as const;
export type AvailabilityPeriod = (typeof AVAILABILITY_PERIODS)[number];
