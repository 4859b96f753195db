/**
 * Pure formatting for the dashboard (and the few server messages a person reads). No DOM, no
 * server imports: both client components and route handlers use these. The time zone is a parameter
 * only where tests need it fixed; in the browser it is the operator's own.
 */

const DASH = "—";

/** "126" / "12.3" / "8.0" / "0.45" / "1.2k": rates read at a glance, three significant figures at most. */
export function formatRate(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  const a = Math.abs(v);
  if (a >= 10_000) return `${(v / 1000).toFixed(0)}k`;
  if (a >= 1000) return `${(v / 1000).toFixed(1)}k`;
  if (a >= 100) return v.toFixed(0);
  if (a >= 1) return v.toFixed(1);
  if (a === 0) return "0";
  return v.toFixed(2);
}

/** 0..1 as "37%"; null as a dash. */
export function formatPercent(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  const p = v * 100;
  return `${p > 0 && p < 1 ? p.toFixed(1) : Math.round(p)}%`;
}

/** A count of requests: integers stay integers; averaged rollups show one decimal. */
export function formatCount(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

/** Seconds as "45 s", "3 min 20 s", "2 h 5 min", "3 d 4 h". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return DASH;
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** "just now", "12 s ago", "5 min ago" — for "since" and "last read". */
export function formatAgo(at: number | null | undefined, now: number): string {
  if (at === null || at === undefined) return DASH;
  const s = Math.round((now - at) / 1000);
  if (s < 2) return "just now";
  if (s < 60) return `${s} s ago`;
  return `${formatDuration(s).split(" ").slice(0, 2).join(" ")} ago`;
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

/** "14:05" in the given time zone offset (minutes east of UTC); the local zone by default. */
export function formatClock(at: number, tzOffsetMinutes?: number): string {
  if (tzOffsetMinutes === undefined) {
    const d = new Date(at);
    return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }
  const d = new Date(at + tzOffsetMinutes * 60_000);
  return `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
}

/** "2025-03-04 14:05:09" local: unambiguous in a review table, sorts as text. */
export function formatDateTime(at: number | null | undefined, tzOffsetMinutes?: number): string {
  if (at === null || at === undefined) return DASH;
  const d = tzOffsetMinutes === undefined ? new Date(at) : new Date(at + tzOffsetMinutes * 60_000);
  const utc = tzOffsetMinutes !== undefined;
  const Y = utc ? d.getUTCFullYear() : d.getFullYear();
  const M = utc ? d.getUTCMonth() : d.getMonth();
  const D = utc ? d.getUTCDate() : d.getDate();
  const h = utc ? d.getUTCHours() : d.getHours();
  const m = utc ? d.getUTCMinutes() : d.getMinutes();
  const s = utc ? d.getUTCSeconds() : d.getSeconds();
  return `${Y}-${pad(M + 1)}-${pad(D)} ${pad(h)}:${pad(m)}:${pad(s)}`;
}

/** Cut text to `max` characters with a visible marker, for command output in tables. */
export function truncate(text: string | null | undefined, max: number): string {
  if (!text) return "";
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}
