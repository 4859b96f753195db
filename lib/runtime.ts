/**
 * The process-wide runtime: config, database, watcher, created once per server process.
 * Next 16 loads instrumentation.ts and each route handler as separate module instances, so the
 * single instance lives on globalThis (a module-level variable would start a second watcher).
 * Routes may be hit before instrumentation finished starting: they await the same promise.
 */
import { openDb, resolveDbPath } from "../db/client";
import { redactUrl } from "../db/pg/client";
import { type DbHandle } from "../db/types";
import { ConfigError, parseConfig, parseConfigText, readConfigText, resolveConfigPath, type Config } from "./config";
import { pruneAudit, recordAudit } from "../db/queries/auth";
import { restartOutcomeCounts } from "../db/queries/restarts";
import { getStepwatchMetrics, type StepwatchMetrics } from "./api/export/metrics";
import { requestUnattendedRestart, type UnattendedDeps } from "./oncall/unattended";
import { carryOutWaiting, type RestartDeps } from "./restart/request";
import { restartCommandEnv } from "./restart/execute";
import { describeReload, emptyStatus, startReloader, type ConfigStatus, type ReloadResult, type ReloadTrigger } from "./reload";
import { buildNetPolicy, setNetPolicy } from "./net/net-policy";
import { warmPasswords } from "./auth/password";
import { sweepSessions } from "./auth/session";
import { authHolder } from "./auth/state";
import { startWatcher, type Watcher } from "./watcher";
import { tuneHeapForWatcher } from "./watcher/heap";
import { fleetSnapshot } from "./api/snapshot";
import { replicaIdFrom, soleLeader, type Leadership } from "./cluster/leadership";
import { openPgReplica } from "./cluster/replica";

export interface Runtime {
  /** The running config; replaced as a whole by a valid reload (lib/reload.ts), never edited. */
  config: Config;
  /** What was loaded when and by what, and the last reload's problems (shown on the dashboard). */
  configStatus: ConfigStatus;
  /** Re-reads the config file now (SIGHUP, a file change and POST /api/config/reload call this). */
  reloadConfig(trigger: ReloadTrigger): ReloadResult;
  db: DbHandle;
  /**
   * Every variable a config loaded by this process read a secret from (the first one and every
   * reload's): they stay in the process's environment after a reload stops naming them (a rotated
   * password, a removed webhook URL), so a restart command must never get them.
   */
  secretEnvNames: Set<string>;
  watcher: Watcher;
  /** The Prometheus export (GET /metrics): the process's one registry, fed by this watcher. */
  metrics: StepwatchMetrics;
  /**
   * Who may act (write transitions, deliver notifications, run restarts). With SQLite there is one
   * replica and it always leads; the lease on PostgreSQL (lib/cluster/leadership.ts keepLease) is
   * the replicas' (docs/decisions.md "Replicas").
   */
  leadership: Leadership;
  /** True when no config file was found and the embedded demo fleet is being watched. */
  demo: boolean;
  startedAt: number;
  /** Stops the watcher (and the demo fleet), writes what is queued, closes the database. */
  stop(): Promise<void>;
}

const KEY = Symbol.for("stepwatch.runtime");
type Holder = { [KEY]?: Promise<Runtime> };

/**
 * True in `next build` and every process it starts (collecting page data, prerendering): Next sets
 * NEXT_PHASE before it starts its workers, and they inherit it. Nothing there may start the runtime.
 */
export function isBuilding(env: Record<string, string | undefined> = process.env): boolean {
  return env.NEXT_PHASE === "phase-production-build";
}

/**
 * The runtime, started on the first call when serving. During the build it refuses (a rejected
 * promise, nothing kept): a page prerendered there would otherwise poll the configured fleet and
 * write its database (issue 27); such a page must be rendered per request instead.
 */
export function getRuntime(): Promise<Runtime> {
  const g = globalThis as Holder;
  if (!g[KEY] && isBuilding()) return Promise.reject(new Error("stepwatch's runtime does not start during `next build`: it starts with `next start`"));
  g[KEY] ??= startRuntime();
  return g[KEY];
}

/** The runtime if it already started, else null (never starts one). */
export function peekRuntime(): Promise<Runtime> | null {
  return (globalThis as Holder)[KEY] ?? null;
}

async function startRuntime(): Promise<Runtime> {
  const startedAt = Date.now();
  // Before the watcher allocates anything: this process's heap settings (lib/watcher/heap.ts).
  const v8Flags = tuneHeapForWatcher();
  if (v8Flags.length) console.log(`stepwatch: V8 ${v8Flags.join(" ")} (STEPWATCH_V8_TUNING=off to keep V8's defaults)`);
  const configPath = resolveConfigPath();
  let config: Config;
  let configText = "";
  let stopDemo: (() => Promise<void>) | null = null;
  if (configPath) {
    configText = readConfigText(configPath);
    config = parseConfigText(configText, configPath);
    console.log(`stepwatch: config ${configPath}: ${config.backends.length} backend(s), ${config.proxies.length} proxy(ies)`);
  } else {
    // Loaded only when needed: the demo fleet is simulators and load generators.
    const { startDemoFleet } = await import("../sim/demo");
    const demo = await startDemoFleet();
    stopDemo = () => demo.stop();
    try {
      config = parseConfig(demo.config, "demo", { allowInlinePasswords: true });
    } catch (e) {
      await demo.stop();
      throw e;
    }
    const why = process.env.STEPWATCH_DEMO === "1" ? "STEPWATCH_DEMO=1" : "no config (STEPWATCH_CONFIG unset and no ./stepwatch.config.json)";
    console.log(`stepwatch: ${why}: watching the embedded DEMO fleet of simulated backends`);
  }
  for (const w of config.warnings) console.warn(`stepwatch: ${w}`);
  setNetPolicy(buildNetPolicy({ ...config.server, publicUrl: config.publicUrl }));
  // Every sign-in then costs exactly one scrypt, the first one too (lib/auth/password.ts).
  void warmPasswords(config.operators.map((o) => o.password)).catch(() => {});

  const target = databaseTarget(config);
  const startDatabase = JSON.stringify(config.database ?? null);
  const replicaId = replicaIdFrom();
  let db: DbHandle;
  let leadership: Leadership;
  try {
    if (target.engine === "postgresql") {
      // Every replica signs sessions with the same key, or a sign-in on one is refused by the next.
      if (!process.env.STEPWATCH_SESSION_SECRET) {
        throw new Error(`${target.setting} selects PostgreSQL (replicas): set STEPWATCH_SESSION_SECRET, the same on every replica (e.g. openssl rand -hex 32)`);
      }
      ({ db, leadership } = await openPgReplica(target.url, replicaId, {
        setting: target.setting,
        leaseMs: leaseMsFrom(process.env),
        onChange: (leading, why) => console.log(`stepwatch: replica ${replicaId} ${leading ? "leads" : "does not lead"}: ${why}`),
      }));
    } else {
      db = openDb(target.path);
      leadership = soleLeader(replicaId, new Date(startedAt));
    }
  } catch (e) {
    await stopDemo?.();
    throw e;
  }
  const dbPath = db.path;
  // Sessions of operators gone from this config, or whose password changed while stepwatch was
  // stopped, end now rather than on their next request (lib/auth/session.ts sweepSessions).
  const authKey = authHolder(db.path).key;
  try {
    const ended = sweepSessions(db.db, config.operators, authKey);
    if (ended) console.log(`stepwatch: ended ${ended} session(s) of operators removed or with another password`);
  } catch (e) {
    console.error(`stepwatch: cannot sweep the sessions (each is still checked on use): ${(e as Error).message}`);
  }
  // The audit log keeps audit.retentionDays (the watcher's retention job sweeps it after that):
  // anonymous failures are bounded per minute (lib/auth/audit.ts), this bounds them in all.
  try {
    const gone = pruneAudit(db.db, startedAt - config.audit.retentionDays * 86_400_000);
    if (gone) console.log(`stepwatch: deleted ${gone} audit line(s) older than ${config.audit.retentionDays} days`);
  } catch (e) {
    console.error(`stepwatch: cannot sweep the audit log: ${(e as Error).message}`);
  }
  try {
    recordAudit(db.db, {
      at: startedAt,
      actor: null,
      actorKind: "system",
      action: "config.loaded",
      target: configPath ?? "demo",
      detail: `${config.backends.length} backend(s), ${config.proxies.length} proxy(ies), ${config.operators.length} operator(s), ${config.tokens.length} token(s); reading ${config.access.read}`,
    });
  } catch (e) {
    console.error(`stepwatch: cannot write the audit log: ${(e as Error).message}`);
  }
  const metrics = getStepwatchMetrics();
  try {
    // Once: from here on the counter counts restarts as this process resolves them.
    metrics.seedRestarts(config.backends.map((b) => b.id), restartOutcomeCounts(db.db));
  } catch (e) {
    console.error(`stepwatch: cannot read restart counts for /metrics (counting from 0): ${(e as Error).message}`);
    metrics.seedRestarts(config.backends.map((b) => b.id), []);
  }
  // The watcher finds an unattended restart due; its collaborators are built from the runtime then.
  let rtRef: Runtime | null = null;
  const watcher = startWatcher({
    config,
    db: db.db,
    telemetry: metrics.telemetry,
    // Only the leader writes, notifies and restarts; it carries out restarts asked on other replicas.
    leader: leadership,
    onWaitingRestart: (row) => {
      if (rtRef) void carryOutWaiting(row, restartDeps(rtRef))?.catch((e) => console.error(`stepwatch: restart #${row.id}: ${(e as Error).message}`));
    },
    // Evidence commands get the restart commands' environment: no secret any config of this process read.
    commandEnv: () => restartCommandEnv(process.env, [...(rtRef?.secretEnvNames ?? config.secretEnvNames)]),
    onUnattendedDue: (id) => {
      if (rtRef) requestUnattendedRestart(unattendedDeps(rtRef), id, Date.now());
    },
  });
  const demo = stopDemo !== null;
  console.log(`stepwatch: database ${dbPath}; polling every ${config.pollIntervalSeconds} s`);

  let stopping: Promise<void> | null = null;
  const rt: Runtime = {
    config,
    configStatus: emptyStatus(configPath, startedAt),
    reloadConfig: (trigger) => reloader.reload(trigger),
    db,
    secretEnvNames: new Set(config.secretEnvNames),
    watcher,
    metrics,
    leadership,
    demo,
    startedAt,
    stop: () =>
      (stopping ??= (async () => {
        reloader.stop();
        await watcher.stop();
        await stopDemo?.();
        await leadership.stop();
        db.close();
      })()),
  };

  rtRef = rt;

  // /metrics' restart counters follow the backends a reload added or removed (seeded as at start).
  const backendIds = (list: string[]) => list.filter((t) => t.startsWith("backend ")).map((t) => t.slice("backend ".length));
  const syncRestartCounts = (change: { added: string[]; removed: string[] }) => {
    metrics.forgetRestarts(backendIds(change.removed));
    const added = backendIds(change.added);
    if (added.length === 0) return;
    try {
      metrics.seedRestarts(added, restartOutcomeCounts(db.db));
    } catch (e) {
      console.error(`stepwatch: cannot read restart counts for /metrics (counting from 0): ${(e as Error).message}`);
      metrics.seedRestarts(added, []);
    }
  };

  // The audit line of a reload (who: the operator of a POST, else the system; the line names what
  // changed or the problems, never a value from the file).
  const auditReload = (r: ReloadResult, trigger: ReloadTrigger) => {
    const line = describeReload(r, trigger, configPath);
    const operator = trigger.startsWith("operator ") ? trigger.slice("operator ".length) : null;
    recordAudit(db.db, {
      at: Date.now(),
      actor: operator,
      actorKind: operator ? "operator" : "system",
      action: r.ok ? "config.reload" : "config.reload.refused",
      target: configPath,
      detail: `${trigger}: ${line.replace(/^stepwatch: /, "")}`,
    });
  };
  const reloader = startReloader(rt, {
    initialText: configText,
    // Before the swap, in one transaction: the audit line and the session sweep against the new
    // operators. Either fails: the reload is refused (restart, acknowledge and maintenance fail
    // closed the same way), so no config runs that the audit log does not show.
    record: (next, change, trigger) => {
      try {
        db.db.$client.transaction(() => {
          auditReload({ ok: true, attempted: true, change, problems: [] }, trigger);
          sweepSessions(db.db, next.operators, authKey);
        })();
      } catch (e) {
        throw new Error(`cannot write the audit log (${(e as Error)?.message ?? String(e)})`);
      }
      for (const n of next.secretEnvNames) rt.secretEnvNames.add(n);
    },
    onResult: (r, trigger) => {
      if (!r.attempted) return;
      const line = describeReload(r, trigger, configPath);
      if (r.ok) console.log(line);
      else console.error(line);
      // A reload that worked was recorded before its swap; a refusal is recorded here if it can be.
      if (!r.ok) {
        try {
          auditReload(r, trigger);
        } catch (e) {
          console.error(`stepwatch: cannot write the audit log: ${(e as Error).message}`);
        }
      }
      // Host, Origin and trusted proxies follow the reloaded config at once.
      if (r.ok) setNetPolicy(buildNetPolicy({ ...rt.config.server, publicUrl: rt.config.publicUrl }));
      for (const w of r.ok ? rt.config.warnings : []) console.warn(`stepwatch: ${w}`);
      if (r.ok && JSON.stringify(rt.config.database ?? null) !== startDatabase) {
        console.warn(`stepwatch: database in the config changed: it is read at start only; this replica keeps ${db.path} until it is restarted`);
      }
      if (r.ok && r.change) syncRestartCounts(r.change);
    },
  });

  // rt.config, not `config`: a reload replaces it, and a scrape reports the running config's values.
  metrics.attach(() => ({
    fleet: fleetSnapshot(watcher, { demo, now: Date.now(), restartCooldownSeconds: rt.config.restartCooldownSeconds, pollIntervalSeconds: rt.config.pollIntervalSeconds }),
    pollIntervalSeconds: rt.config.pollIntervalSeconds,
    leader: { replica: rt.leadership.replicaId, leading: rt.leadership.isLeader() },
  }));

  // Synchronous on purpose: Next's own SIGTERM handler may exit right after ours returns, and a
  // better-sqlite3 write is synchronous, so the queued readings are on disk before that.
  const onSignal = (sig: NodeJS.Signals) => {
    reloader.stop();
    watcher.stopNow();
    // If nobody else (Next) handles the signal, our listener must not swallow it: re-raise it
    // now that ours is removed, so the default action ends the process.
    if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  return rt;
}

/**
 * For instrumentation.ts: start once when serving (never during the build); a bad config (or an
 * unusable DB) ends the process non-zero.
 */
export async function startFromInstrumentation(): Promise<void> {
  if (isBuilding()) return;
  try {
    await getRuntime();
  } catch (e) {
    if (e instanceof ConfigError) console.error(`stepwatch: ${e.message}`);
    else console.error(`stepwatch: cannot start: ${(e as Error)?.message ?? String(e)}`);
    process.exit(1);
  }
}

/**
 * The restart verb's collaborators in a running stepwatch: the config in force, the database, the
 * watcher. Built per request, so a reload's new config is the one used.
 */
export function restartDeps(rt: Pick<Runtime, "config" | "db" | "watcher" | "secretEnvNames">, env: NodeJS.ProcessEnv = process.env): RestartDeps {
  return {
    db: rt.db,
    backends: rt.config.backends,
    restartCooldownSeconds: rt.config.restartCooldownSeconds,
    // The running config's secrets and every earlier config's: a reload does not unset a variable.
    commandEnv: restartCommandEnv(env, [...rt.config.secretEnvNames, ...rt.secretEnvNames]),
    current: (b) => rt.watcher.current(b),
    onPending: (b, p) => rt.watcher.notifyRestartRequested(b, p),
    onResolved: (b, outcome) => rt.watcher.notifyRestartResolved(b, outcome),
    notify: (d) => rt.watcher.notify(d),
    evidence: rt.watcher.evidence,
    evidenceTimeoutSeconds: rt.config.evidenceTimeoutSeconds,
    runs: rt.watcher.restarts,
  };
}

/** The unattended restart's collaborators, when the watcher finds one due. */
export function unattendedDeps(rt: Pick<Runtime, "config" | "db" | "watcher" | "secretEnvNames">): UnattendedDeps {
  return { backends: rt.config.backends, watcher: rt.watcher, restart: restartDeps(rt) };
}

export type DatabaseTarget = { engine: "sqlite"; path: string } | { engine: "postgresql"; url: string; setting: string };

/**
 * Where the data lives: PostgreSQL when STEPWATCH_DATABASE_URL (first) or the config's `database`
 * names it, the password of `database.url` from `database.password` ("env:NAME"); else the SQLite
 * file (STEPWATCH_DB, else data/stepwatch.db), the default that needs nothing.
 */
export function databaseTarget(config: Pick<Config, "database">, env: Record<string, string | undefined> = process.env): DatabaseTarget {
  const fromEnv = env.STEPWATCH_DATABASE_URL?.trim();
  if (fromEnv) return { engine: "postgresql", url: fromEnv, setting: "STEPWATCH_DATABASE_URL" };
  if (config.database) {
    const u = new URL(config.database.url);
    if (config.database.password !== undefined) u.password = encodeURIComponent(config.database.password);
    return { engine: "postgresql", url: u.toString(), setting: `database.url (${redactUrl(u.toString())})` };
  }
  return { engine: "sqlite", path: resolveDbPath(env) };
}

/** STEPWATCH_LEASE_SECONDS (how long a leader's grant lasts; default 15), for sites and tests that need faster failover. */
export function leaseMsFrom(env: Record<string, string | undefined>): number | undefined {
  const raw = env.STEPWATCH_LEASE_SECONDS?.trim();
  if (!raw) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 1 || n > 600) throw new Error(`STEPWATCH_LEASE_SECONDS must be a number of seconds from 1 to 600 (got "${raw}")`);
  return Math.round(n * 1000);
}
