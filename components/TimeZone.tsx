"use client";
/**
 * The dashboard's one clock. Every time on every page is written by `formatDateTime` in the zone
 * chosen here: UTC or the browser's own, a choice kept in localStorage.
 *
 * Why UTC first: the server renders the page without knowing the browser's zone. If it rendered
 * its own local time, a browser in another zone would render different text and React would
 * throw hydration error #418. So the server and the browser's first render both use UTC, and the
 * stored choice ("local") is applied in an effect, after hydration.
 */
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { formatDateTime, zoneName, type TimeZone } from "@/lib/core/format";

export type ZoneMode = "utc" | "local";
export const ZONE_STORAGE_KEY = "stepwatch.timeZone";

interface TimeZoneValue {
  mode: ZoneMode;
  /** The zone to pass to the formatters: "UTC", or "local" for the browser's own. */
  timeZone: TimeZone;
  /** "UTC", "GMT+9", "EST": the zone's name now. */
  label: string;
  setMode: (m: ZoneMode) => void;
  /** A moment in the one format, in the chosen zone. */
  fmt: (at: number | null | undefined) => string;
}

const Ctx = createContext<TimeZoneValue>({
  mode: "utc",
  timeZone: "UTC",
  label: "UTC",
  setMode: () => undefined,
  fmt: (at) => formatDateTime(at, "UTC"),
});

export function TimeZoneProvider({ children }: { children: ReactNode }) {
  const [mode, setModeState] = useState<ZoneMode>("utc");
  useEffect(() => {
    const read = () => setModeState(window.localStorage.getItem(ZONE_STORAGE_KEY) === "local" ? "local" : "utc");
    read();
    // Another tab changed the choice: follow it.
    const onStorage = (e: StorageEvent) => {
      if (e.key === ZONE_STORAGE_KEY) read();
    };
    window.addEventListener("storage", onStorage);
    return () => window.removeEventListener("storage", onStorage);
  }, []);
  const setMode = useCallback((m: ZoneMode) => {
    window.localStorage.setItem(ZONE_STORAGE_KEY, m);
    setModeState(m);
  }, []);
  const value = useMemo<TimeZoneValue>(() => {
    const timeZone: TimeZone = mode === "utc" ? "UTC" : "local";
    return { mode, timeZone, label: zoneName(Date.now(), timeZone), setMode, fmt: (at) => formatDateTime(at, timeZone) };
  }, [mode, setMode]);
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useTimeZone(): TimeZoneValue {
  return useContext(Ctx);
}

/** A moment as a <time> element in the chosen zone (machine-readable ISO in `dateTime`). */
export function Time({ at, testId }: { at: number | null | undefined; testId?: string }) {
  const { fmt } = useTimeZone();
  if (at === null || at === undefined) return <span data-testid={testId}>—</span>;
  return (
    <time dateTime={new Date(at).toISOString()} data-testid={testId} className="when-text">
      {fmt(at)}
    </time>
  );
}

/** The UTC / local switch in the top bar. It names the local zone so "local" is never a guess. */
export function TimeZoneToggle() {
  const { mode, setMode } = useTimeZone();
  const [localName, setLocalName] = useState<string | null>(null);
  // The browser's zone name is known only in the browser: set after mount (no hydration mismatch).
  useEffect(() => setLocalName(zoneName(Date.now(), "local")), []);
  return (
    <div className="zone-toggle" role="group" aria-label="Time zone for all times" data-testid="zone-toggle">
      <button type="button" aria-pressed={mode === "utc"} onClick={() => setMode("utc")} data-testid="zone-utc">
        UTC
      </button>
      <button type="button" aria-pressed={mode === "local"} onClick={() => setMode("local")} data-testid="zone-local" title="The browser's time zone">
        Local{localName && localName !== "UTC" ? ` (${localName})` : ""}
      </button>
    </div>
  );
}
