/**
 * `stepwatch replay BACKEND [--since 7d | --from T] [--until T] [--stuck-after S] [--startup-grace S]
 * [--poll-interval S] [--min-window S] [--json]` and `stepwatch advise BACKEND [--since 7d] [--json]`:
 * the server's replay record (STEPWATCH_DB, read only) judged again with other thresholds, and the
 * settings advised from it (lib/check/replay.ts, the same code as GET /api/backends/{id}/replay).
 * The config (STEPWATCH_CONFIG or ./stepwatch.config.json, as the server finds it) gives the
 * thresholds in force and the backend's URL; without one, the defaults. Exit 0 answered, 2 a bad
 * argument or a period it cannot answer (with a line saying which), never a stack trace.
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { advise, candidateThresholds, checkPeriod, checkRowCount, replay, ReplayInputError, when } from "../check/replay";
import { DEFAULTS, loadConfig, resolveConfigPath, thresholdsOf, type Config } from "../config";
import { MAX_REPLAY_DAYS, type Advice, type ReplayReport } from "../core/replay";
import { countReplayRows, replayRows, replaySpan, type SqlHandle } from "../../db/queries/replay";

const USAGE = `usage: stepwatch replay <backend> [--since 7d | --from TIME] [--until TIME] [--stuck-after SECONDS]
          [--startup-grace SECONDS] [--poll-interval SECONDS] [--min-window SECONDS] [--json]
       stepwatch advise <backend> [--since 7d | --from TIME] [--until TIME] [--json]

Reads the replay record of <backend> from the server's SQLite file (STEPWATCH_DB, default
data/stepwatch.db; read only) and judges it again with the thresholds given (each one not given:
the config's, STEPWATCH_CONFIG or ./stepwatch.config.json). TIME: ms since epoch, an ISO date, or
an age (90m, 24h, 7d). replay: every restart recommendation that would be new, later, earlier or
never made, and every state that would differ. advise: stuckAfterSeconds, startupGraceSeconds and
the probe timeout from what the record shows, with Kubernetes probes and systemd notes; nothing
is applied. Replicas on PostgreSQL: GET /api/backends/{id}/replay and /advice answer the same.
Exit: 0 answered, 2 a bad argument or nothing to judge.`;

/** The API's parameter names as this CLI's flags, so a refusal names what the user typed. */
const FLAGS: Record<string, string> = {
  stuckAfterSeconds: "--stuck-after",
  startupGraceSeconds: "--startup-grace",
  pollIntervalSeconds: "--poll-interval",
  minStuckWindowSeconds: "--min-window",
  from: "--since/--from",
  to: "--until",
};

class CliError extends Error {}

function timeArg(flag: string, raw: string, now: number): number {
  const age = /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(raw.trim());
  if (age) return now - Number(age[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as "s" | "m" | "h" | "d"];
  if (/^\d+$/.test(raw.trim())) return Number(raw);
  const t = Date.parse(raw);
  if (Number.isNaN(t)) throw new CliError(`${flag}: "${raw.slice(0, 40)}" is not a time (ms since epoch, an ISO date, or an age like 7d)`);
  return t;
}

function configOf(): Config | null {
  const file = resolveConfigPath();
  if (!file) return null;
  try {
    return loadConfig(file);
  } catch (e) {
    throw new CliError(`the config ${file} does not load (run with the server's environment): ${(e as Error).message}`);
  }
}

async function openReadOnly(file: string): Promise<SqlHandle & { close(): void }> {
  if (!fs.existsSync(file)) throw new CliError(`no database at ${file} (set STEPWATCH_DB to the server's file)`);
  // Loaded only here: the bundled CLI's `check` runs alone in a container without node_modules,
  // and better-sqlite3 is a native module (esbuild keeps it external).
  const { default: Database } = await import("better-sqlite3");
  try {
    return new Database(file, { readonly: true, fileMustExist: true, timeout: 2000 }) as unknown as SqlHandle & { close(): void };
  } catch (e) {
    throw new CliError(`cannot open ${file}: ${(e as Error).message}`);
  }
}

export async function replayMain(command: "replay" | "advise", args: string[], now: number = Date.now()): Promise<number> {
  try {
    let parsed;
    try {
      parsed = parseArgs({
        args,
        allowPositionals: true,
        options: {
          since: { type: "string" },
          from: { type: "string" },
          until: { type: "string" },
          "stuck-after": { type: "string" },
          "startup-grace": { type: "string" },
          "poll-interval": { type: "string" },
          "min-window": { type: "string" },
          json: { type: "boolean", default: false },
          help: { type: "boolean", short: "h", default: false },
        },
      });
    } catch (e) {
      throw new CliError((e as Error).message);
    }
    const { values, positionals } = parsed;
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (positionals.length !== 1) throw new CliError(positionals.length === 0 ? "a backend id is required" : `one backend id expected, got ${positionals.length}`);
    if (command === "advise" && (values["stuck-after"] || values["startup-grace"] || values["poll-interval"] || values["min-window"])) {
      throw new CliError("advise takes no thresholds: it advises them (replay tries them)");
    }
    if (values.since !== undefined && values.from !== undefined) throw new CliError("--since and --from say the same: give one");
    const id = positionals[0];
    const config = configOf();
    const backend = config?.backends.find((b) => b.id === id);
    if (config && !backend) throw new CliError(`no backend "${id}" in the config ${config.source}`);
    const days = Math.max(1, config?.history.replayDays ?? DEFAULTS.history.replayDays);
    const to = values.until !== undefined ? timeArg("--until", values.until, now) : now;
    const fromRaw = values.since ?? values.from;
    const from = fromRaw !== undefined ? timeArg(values.since !== undefined ? "--since" : "--from", fromRaw, now) : to - days * 86_400_000;
    const configured = config ? thresholdsOf(config) : thresholdsOf(DEFAULTS);
    const candidate = candidateThresholds(
      {
        stuckAfterSeconds: values["stuck-after"],
        startupGraceSeconds: values["startup-grace"],
        pollIntervalSeconds: values["poll-interval"],
        minStuckWindowSeconds: values["min-window"],
      },
      configured,
    );
    checkPeriod(from, to, MAX_REPLAY_DAYS);
    if (process.env.STEPWATCH_DATABASE_URL && !process.env.STEPWATCH_DB) {
      // The bundle stays small and needs no node_modules: no PostgreSQL driver in it.
      throw new CliError("this CLI reads a SQLite file (STEPWATCH_DB); replicas on PostgreSQL answer the same through GET /api/backends/{id}/replay and /advice, or the backend page's What if");
    }
    const file = path.resolve(process.env.STEPWATCH_DB || "data/stepwatch.db");
    const db = await openReadOnly(file);
    try {
      let n: number;
      try {
        n = countReplayRows(db, id, from, to);
      } catch (e) {
        throw new CliError(`cannot read the replay record in ${file} (a database from before the record, or not stepwatch's?): ${(e as Error).message}`);
      }
      checkRowCount(n, id, n === 0 ? replaySpan(db, id) : null);
      const rows = replayRows(db, id, from, to);
      if (command === "replay") {
        const report = replay({ backendId: id, from, to, rows, candidate, configured, probe: backend?.probe });
        process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : replayText(report, configured.stuckAfterSeconds));
      } else {
        const c = config ?? DEFAULTS;
        const advice = advise({
          backendId: id,
          from,
          to,
          rows,
          url: backend?.url ?? "http://127.0.0.1:8000",
          current: {
            stuckAfterSeconds: c.stuckAfterSeconds,
            startupGraceSeconds: c.startupGraceSeconds,
            probeTimeoutSeconds: c.probeTimeoutSeconds,
            pollIntervalSeconds: c.pollIntervalSeconds,
          },
        });
        process.stdout.write(values.json ? `${JSON.stringify(advice)}\n` : adviceText(advice));
      }
    } finally {
      db.close();
    }
    return 0;
  } catch (e) {
    if (e instanceof ReplayInputError) {
      process.stderr.write(`${command}: ${FLAGS[e.param] ?? e.param}: ${e.message.slice(e.param.length + 2)}\n`);
      return 2;
    }
    if (e instanceof CliError) {
      process.stderr.write(`${command}: ${e.message}\n\n${USAGE}\n`);
      return 2;
    }
    process.stderr.write(`${command}: cannot answer: ${(e as Error)?.message ?? String(e)}\n`);
    return 2;
  }
}

function replayText(r: ReplayReport, configuredStuck: number): string {
  const t = r.thresholds;
  const lines = [
    `replay of ${r.backendId}, ${when(r.from)} to ${when(r.to)}: ${r.readings} readings (${r.judged} judged), ${r.processes.length} process${r.processes.length === 1 ? "" : "es"}`,
    `thresholds: stuckAfterSeconds ${t.stuckAfterSeconds} (configured ${configuredStuck}), startupGraceSeconds ${t.startupGraceSeconds}, ` +
      `${t.pollIntervalSeconds === null ? "every stored reading" : `a reading every ${t.pollIntervalSeconds} s`}, engine minimum ${t.minStuckWindowSeconds === null ? "the adapter's" : `${t.minStuckWindowSeconds} s`}`,
    `recorded: ${r.recorded.recommendations} restart recommendation${r.recorded.recommendations === 1 ? "" : "s"} (${r.recorded.stuck} stuck); replayed: ${r.replayed.recommendations} (${r.replayed.stuck} stuck)`,
    r.summary,
    ...r.comparisons.map((c) => `  ${c.change.padEnd(7)} ${c.text}`),
    `states that differ: ${r.changes.length + r.changesLeftOff} stretch${r.changes.length + r.changesLeftOff === 1 ? "" : "es"}${r.changes.length > 20 ? " (the first 20; --json has them all)" : ""}`,
    ...r.changes.slice(0, 20).map((c) => `  ${when(c.from)}: recorded ${c.recorded}, replayed ${c.replayed}${c.reasons[0] ? ` (${c.reasons[0].text})` : ""}`),
    ...r.notes.map((n) => `note: ${n}`),
  ];
  return `${lines.join("\n")}\n`;
}

function adviceText(a: Advice): string {
  const v = (name: string, x: Advice["recommended"]["stuckAfterSeconds"], current: number) =>
    `${name}: ${x.seconds} s (now ${current} s); ${x.why}; margin: ${x.margin}`;
  const lines = [
    `advice for ${a.backendId}${a.engine ? ` (${a.engine})` : ""}, from ${a.readings} readings, ${when(a.from)} to ${when(a.to)}:`,
    v("stuckAfterSeconds", a.recommended.stuckAfterSeconds, a.current.stuckAfterSeconds),
    v("startupGraceSeconds", a.recommended.startupGraceSeconds, a.current.startupGraceSeconds),
    v("probeTimeoutSeconds", a.recommended.probeTimeoutSeconds, a.current.probeTimeoutSeconds),
    `longest healthy gaps without progress: ${a.healthyGaps.length === 0 ? "none" : a.healthyGaps.slice(0, 5).map((g) => `${g.seconds} s at ${when(g.from)} (${g.running} running, ${g.waiting} waiting)`).join("; ")}`,
    ...a.gapsByLoad.map((g) => `  ${g.load}: ${g.count} gap${g.count === 1 ? "" : "s"}, longest ${g.longestSeconds} s`),
    `probe answers: ${a.probe.count}${a.probe.count ? `, p50 ${a.probe.p50Ms} ms, p99 ${a.probe.p99Ms} ms, slowest ${a.probe.maxMs} ms` : ""}`,
    ...a.notes.map((n) => `note: ${n}`),
    "",
    "# Kubernetes",
    a.kubernetes,
    "",
    "# systemd",
    a.systemd,
  ];
  return `${lines.join("\n")}\n`;
}
