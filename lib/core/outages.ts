/** The words of outages: an episode in which a backend could not serve (lib/outages.ts derives them). */
export interface Outage {
  backendId: string;
  /** The worst state of the episode: down, stuck, restarting, starting or unknown. */
  state: string;
  cause: string;
  /** ms since epoch. */
  start: number;
  /** null while the outage is still going on. */
  end: number | null;
  /** Until `end`, or until now for an open outage. */
  durationSeconds: number;
}


export const UPTIME_WINDOWS = [
  { key: "24h", ms: 24 * 3600_000 },
  { key: "7d", ms: 7 * 24 * 3600_000 },
  { key: "30d", ms: 30 * 24 * 3600_000 },
] as const;
export type UptimeWindow = (typeof UPTIME_WINDOWS)[number]["key"];

