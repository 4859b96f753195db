/**
 * Config reload without a restart of stepwatch: on SIGHUP, when the file changes, and on
 * `POST /api/config/reload` (an operator). The new file is validated first (lib/config.ts, the
 * same zod schema as at start); a bad one keeps the running config, and its problems (each naming
 * its field) are shown on the dashboard (`configError` in /api/fleet and /api/config) until a good
 * file is loaded. A good one is swapped in at once: `rt.config` and the watcher's targets
 * (`Watcher.apply`) in one synchronous step, so no request or poll sees half of each.
 */
import fs from "node:fs";
import path from "node:path";
import { ConfigError, parseConfigText, readConfigText, type Config } from "./config";
import { targetChange, type ConfigChange, type Watcher } from "./watcher";

/** Who or what asked for a reload: shown on the Configuration page and in the log. */
export type ReloadTrigger = "start" | "SIGHUP" | "file change" | `operator ${string}`;

export interface ConfigProblem {
  at: number;
  trigger: ReloadTrigger;
  /** One line per problem, each naming its field (`backends[1].url: Invalid URL`). */
  problems: string[];
}

export interface ConfigStatus {
  /** The file watched, null for the embedded demo fleet (nothing to reload). */
  path: string | null;
  loadedAt: number;
  loadedBy: ReloadTrigger;
  /** What the last successful reload changed (null until one did). */
  lastChange: (ConfigChange & { at: number; trigger: ReloadTrigger }) | null;
  /** The last reload's problems, while the running config is an older one; null when none. */
  error: ConfigProblem | null;
}

export interface ReloadResult {
  ok: boolean;
  /** Refused because it could not be recorded (the audit log took no write): a 503, not the file's fault. */
  unrecorded?: boolean;
  /** False when an automatic trigger found the same text as the last attempt (nothing done). */
  attempted: boolean;
  change: ConfigChange | null;
  problems: string[];
}

/** The part of the runtime a reload swaps. */
export interface Reloadable {
  config: Config;
  watcher: Watcher;
  configStatus: ConfigStatus;
}

/**
 * Called with a valid new config before it is swapped in, with what it will change: records the
 * reload (its audit line, the session sweep) and throws when it cannot, which refuses the reload
 * (the running config stays). Nothing is applied that was not recorded.
 */
export type ReloadRecorder = (next: Config, change: ConfigChange, trigger: ReloadTrigger) => void;

/** Called after every attempt (the audit log and the server log hang here). */
export type ReloadListener = (r: ReloadResult, trigger: ReloadTrigger, rt: Reloadable) => void;

export interface Reloader {
  /** Re-reads the file now. `onlyIfChanged`: skip when its text equals the last attempt's. */
  reload(trigger: ReloadTrigger, opts?: { onlyIfChanged?: boolean }): ReloadResult;
  stop(): void;
}

export const RELOAD_DEFAULTS = {
  /** Editors write a file in several steps (truncate, write, rename): one reload after the last. */
  debounceMs: 300,
  /** fs.watch misses changes on some filesystems (NFS, some bind mounts): a stat poll catches them. */
  statIntervalMs: 2000,
};

export function emptyStatus(pathOrNull: string | null, now: number): ConfigStatus {
  return { path: pathOrNull, loadedAt: now, loadedBy: "start", lastChange: null, error: null };
}

/**
 * Starts watching `rt.configStatus.path` (file events with a debounce, a stat poll as the
 * fallback) and SIGHUP. `initialText` is the text the running config was parsed from.
 */
export function startReloader(
  rt: Reloadable,
  opts: {
    initialText: string;
    onResult?: ReloadListener;
    record?: ReloadRecorder;
    now?: () => number;
    debounceMs?: number;
    statIntervalMs?: number;
    signals?: boolean;
    /** false: only the stat poll (its test; filesystems where fs.watch says nothing behave so). */
    watchDirectory?: boolean;
  },
): Reloader {
  const file = rt.configStatus.path;
  const now = opts.now ?? Date.now;
  let lastText = opts.initialText;
  let stopped = false;

  const reload = (trigger: ReloadTrigger, o: { onlyIfChanged?: boolean } = {}): ReloadResult => {
    if (!file) return { ok: false, attempted: false, change: null, problems: ["the embedded demo fleet runs: there is no config file to reload"] };
    let result: ReloadResult;
    try {
      const text = readConfigText(file);
      if (o.onlyIfChanged && text === lastText) return { ok: true, attempted: false, change: null, problems: [] };
      lastText = text;
      const next = parseConfigText(text, file);
      try {
        opts.record?.(next, targetChange(rt.config, next), trigger);
      } catch (e) {
        const problems = [`not recorded, so not applied: ${(e as Error)?.message ?? String(e)}; reload again once the database takes writes`];
        rt.configStatus = { ...rt.configStatus, error: { at: now(), trigger, problems } };
        result = { ok: false, unrecorded: true, attempted: true, change: null, problems };
        notify(result, trigger);
        return result;
      }
      // The swap: synchronous, so a poll or a route sees the old config or the new one, never a mix.
      const change = rt.watcher.apply(next);
      rt.config = next;
      const at = now();
      rt.configStatus = { path: file, loadedAt: at, loadedBy: trigger, lastChange: { ...change, at, trigger }, error: null };
      result = { ok: true, attempted: true, change, problems: [] };
    } catch (e) {
      const problems = e instanceof ConfigError ? e.problems : [`cannot reload: ${(e as Error)?.message ?? String(e)}`];
      rt.configStatus = { ...rt.configStatus, error: { at: now(), trigger, problems } };
      result = { ok: false, attempted: true, change: null, problems };
    }
    notify(result, trigger);
    return result;
  };
  function notify(result: ReloadResult, trigger: ReloadTrigger): void {
    try {
      opts.onResult?.(result, trigger, rt);
    } catch (e) {
      console.error(`stepwatch: after the config reload: ${(e as Error)?.message ?? String(e)}`);
    }
  }

  if (!file) return { reload, stop() {} };

  // File events: on the directory, because editors and Kubernetes ConfigMaps replace the file
  // (rename, or a symlink swap of ..data) and a watch on the old inode would go quiet. An event
  // for the file's name, for a "..data"-style entry, or without a name re-reads the file
  // (other files in the directory, a database next to it, are ignored); identical text is not
  // reloaded.
  let timer: NodeJS.Timeout | null = null;
  const soon = () => {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      if (!stopped) reload("file change", { onlyIfChanged: true });
    }, opts.debounceMs ?? RELOAD_DEFAULTS.debounceMs);
    timer.unref();
  };
  let dirWatch: fs.FSWatcher | null = null;
  const watchDirectory = () => {
    const base = path.basename(file);
    try {
      dirWatch = fs.watch(path.dirname(file), { persistent: false }, (_event, name) => {
        const n = name?.toString();
        if (!n || n === base || n.startsWith("..")) soon();
      });
      dirWatch.on("error", (e) => {
        console.warn(`stepwatch: watching ${path.dirname(file)} failed (${e.message}); the stat poll goes on`);
        dirWatch?.close();
        dirWatch = null;
      });
    } catch (e) {
      console.warn(`stepwatch: cannot watch ${path.dirname(file)} (${(e as Error).message}); changes are found by a stat poll`);
    }
  };
  if (opts.watchDirectory !== false) watchDirectory();
  // The stat poll: the baseline is taken now, synchronously, so a change right after the start is
  // a change (fs.watchFile takes its first stat later, and would take such a change as its baseline).
  const statKey = (st: fs.Stats | null) => (st ? `${st.ino}:${st.size}:${st.mtimeMs}` : "missing");
  let lastStat = statKey(fs.statSync(file, { throwIfNoEntry: false }) ?? null);
  const statPoll = setInterval(() => {
    fs.stat(file, (err, st) => {
      const key = statKey(err ? null : st);
      if (key !== lastStat) {
        lastStat = key;
        soon();
      }
    });
  }, opts.statIntervalMs ?? RELOAD_DEFAULTS.statIntervalMs);
  statPoll.unref();

  const onHup = () => void reload("SIGHUP");
  if (opts.signals !== false) process.on("SIGHUP", onHup);

  return {
    reload,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      dirWatch?.close();
      clearInterval(statPoll);
      process.removeListener("SIGHUP", onHup);
    },
  };
}

/** One line for the server log: what changed, or the problems (never a value from the file). */
export function describeReload(r: ReloadResult, trigger: ReloadTrigger, file: string | null): string {
  if (!r.ok) return `stepwatch: config reload (${trigger}) refused, the running config stays:\n${r.problems.map((p) => `  ${p}`).join("\n")}`;
  const c = r.change!;
  const parts = [
    c.added.length ? `added ${c.added.join(", ")}` : null,
    c.removed.length ? `removed ${c.removed.join(", ")}` : null,
    c.changed.length ? `changed ${c.changed.join(", ")}` : null,
  ].filter(Boolean);
  return `stepwatch: config ${file} reloaded (${trigger}): ${parts.length ? parts.join("; ") : "no target changed"}`;
}
