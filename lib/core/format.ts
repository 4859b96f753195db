/**
 * Pure formatting for the dashboard (and the few server messages a person reads). No DOM, no
 * server imports: both client components and route handlers use these. Times always name their
 * zone; the browser's zone is chosen by the operator (components/TimeZone.tsx).
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

const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });

/** A y-axis tick: "10K" rather than "10,000" (short, so an axis never clips its labels), "0.25". */
export function formatAxisNumber(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "";
  if (Math.abs(v) >= 1000) return compact.format(v);
  return String(Number(v.toPrecision(3)));
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

/**
 * Where times are shown: "UTC", an IANA zone ("Asia/Tokyo"), or "local": the runtime's own zone
 * (the operator's, in a browser). The server renders UTC and the browser's first render does
 * too, so hydration always matches; the operator's choice of local time is applied after mount.
 */
export type TimeZone = "UTC" | "local" | (string & {});

interface Parts {
  Y: number;
  M: number;
  D: number;
  h: number;
  m: number;
  s: number;
}

const partsFormatters = new Map<string, Intl.DateTimeFormat>();

function partsIn(at: number, timeZone: TimeZone): Parts {
  const d = new Date(at);
  if (timeZone === "UTC") {
    return { Y: d.getUTCFullYear(), M: d.getUTCMonth() + 1, D: d.getUTCDate(), h: d.getUTCHours(), m: d.getUTCMinutes(), s: d.getUTCSeconds() };
  }
  if (timeZone === "local") {
    return { Y: d.getFullYear(), M: d.getMonth() + 1, D: d.getDate(), h: d.getHours(), m: d.getMinutes(), s: d.getSeconds() };
  }
  let f = partsFormatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    partsFormatters.set(timeZone, f);
  }
  const get = (type: string) => Number(f.formatToParts(d).find((p) => p.type === type)?.value ?? 0);
  return { Y: get("year"), M: get("month"), D: get("day"), h: get("hour") % 24, m: get("minute"), s: get("second") };
}

/** The zone's short name at `at`: "UTC", "GMT+9", "EST" (daylight saving changes it, hence `at`). */
export function zoneName(at: number, timeZone: TimeZone): string {
  if (timeZone === "UTC") return "UTC";
  const part = new Intl.DateTimeFormat("en-US", { timeZone: timeZone === "local" ? undefined : timeZone, timeZoneName: "short" }).formatToParts(new Date(at)).find((p) => p.type === "timeZoneName");
  return part?.value ?? "local";
}

/**
 * The one way a moment is written on the dashboard and in its messages:
 * "2025-03-04 14:05:09 UTC" (sorts as text, unambiguous in a review table, names its zone).
 */
export function formatDateTime(at: number | null | undefined, timeZone: TimeZone = "UTC"): string {
  if (at === null || at === undefined || !Number.isFinite(at)) return DASH;
  const p = partsIn(at, timeZone);
  return `${p.Y}-${pad(p.M)}-${pad(p.D)} ${pad(p.h)}:${pad(p.m)}:${pad(p.s)} ${zoneName(at, timeZone)}`;
}

/** "14:30" in the chosen zone: a time of today in a line that names its zone itself ("maintenance until 14:30 UTC"). */
export function formatClock(at: number, timeZone: TimeZone = "UTC"): string {
  const p = partsIn(at, timeZone);
  return `${pad(p.h)}:${pad(p.m)}`;
}

/** A chart axis tick in the chosen zone: "14:05", "14:05:30" under a minute's spacing, "03-04" for days. */
export function formatTick(at: number, spacingSeconds: number, timeZone: TimeZone = "UTC"): string {
  const p = partsIn(at, timeZone);
  if (spacingSeconds >= 86_400) return `${pad(p.M)}-${pad(p.D)}`;
  if (spacingSeconds < 60) return `${pad(p.h)}:${pad(p.m)}:${pad(p.s)}`;
  return `${pad(p.h)}:${pad(p.m)}`;
}

/** Cut text to `max` characters with a visible marker, for command output in tables. */
export function truncate(text: string | null | undefined, max: number): string {
  if (!text) return "";
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

// The words of a reason (lib/check/classify.ts): seconds kept to a tenth below 10 s so a short wait
// reads exactly, minutes added past two so a long one reads at a glance.

/** "4.5 s", "45 s", "300 s (5 min)". */
export function formatSeconds(s: number): string {
  if (s < 10) return `${Math.round(s * 10) / 10} s`;
  if (s < 120) return `${Math.round(s)} s`;
  return `${Math.round(s)} s (${Math.round(s / 60)} min)`;
}

/** "45 s", "2 min", "10 min": for sentences an operator reads on a card. */
export function formatMinutes(s: number): string {
  if (s < 120) return `${Math.round(s)} s`;
  return `${Math.round(s / 60)} min`;
}

/** A count or rate in a reason: whole as is, else one decimal. */
export function formatFigure(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** A share (0..1) as a percentage with one decimal: KV cache use. */
export function formatShare(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}
