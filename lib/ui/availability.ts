/**
 * The availability page's query and words (pure): which backend, which period, how many days back,
 * read from the URL so a report is a link; periods named by their UTC dates.
 */
import { AVAILABILITY_PERIODS, type AvailabilityPeriod } from "../core/outages";

/** How far back the page looks, in days (the API takes any range up to a year). */
export const AVAILABILITY_RANGES = [1, 7, 30, 90] as const;

export interface AvailabilityQuery {
  backend: string | null;
  period: AvailabilityPeriod;
  days: number;
}

const one = (v: string | string[] | undefined): string | null => (typeof v === "string" && v ? v : null);

export function parseAvailabilityQuery(sp: Record<string, string | string[] | undefined>): AvailabilityQuery {
  const p = one(sp.period);
  const d = Number(one(sp.days));
  return {
    backend: one(sp.backend),
    period: (AVAILABILITY_PERIODS as readonly string[]).includes(p ?? "") ? (p as AvailabilityPeriod) : "day",
    days: (AVAILABILITY_RANGES as readonly number[]).includes(d) ? d : 7,
  };
}

/** [from, to) of the report: whole UTC days, the last one today's (which ends now). */
export function availabilityRange(q: AvailabilityQuery, now: number): { from: number; to: number } {
  const d = new Date(now);
  const tomorrow = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  return { from: tomorrow - q.days * 86_400_000, to: tomorrow };
}

/** "2026-12-01" (a day), "week of 2026-11-30", "2026-12" (a month); UTC, as the periods are cut. */
export function periodLabel(start: number, period: AvailabilityPeriod): string {
  const iso = new Date(start).toISOString();
  if (period === "month") return iso.slice(0, 7);
  return period === "week" ? `week of ${iso.slice(0, 10)}` : iso.slice(0, 10);
}
