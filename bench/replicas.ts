/**
 * Benchmark 10 (issue 28): one replica on SQLite against two on PostgreSQL, watching the same 1000
 * simulated backends every 5 s. The same watcher process as bench/scale.ts (bench/scale-worker.ts),
 * once on the SQLite file, then twice at once on one PostgreSQL 15 (Debian's, started here in a
 * temporary folder by scripts/postgres.ts), each keeping the lease as the server does: one leads and
 * writes, the other judges in memory and writes nothing. Measured per replica over the same window:
 * CPU, RSS, poll lag, backends judged, the statements its store ran; and the database's size at the
 * end (the SQLite file with its WAL; pg_database_size) with PostgreSQL's own count of transactions.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { startPostgres } from "../scripts/postgres";
import { bundled, firstJsonLine, startBundled, startSimulatorFleet } from "./child";
import { runWhenMain } from "./main";
import type { ScaleRun, ScaleSpec } from "./scale-worker";
import { SCALE_KEEP_ALIVE_SECONDS } from "./scale";

export interface ReplicasResult {
  backends: number;
  intervalSeconds: number;
  measureSeconds: number;
  sqlite: ScaleRun;
  postgres: {
    leader: ScaleRun;
    standby: ScaleRun;
    /** pg_database_size at the end of the window (the leader's writes; the standby wrote none). */
    databaseBytes: number;
    /**
     * Transactions PostgreSQL committed (pg_stat_database) per second over the whole run of the two
     * replicas, their start included: the leader's start reads every backend's stored decisions, one
     * statement (an autocommit transaction) each.
     */
    transactionsPerSecond: number;
  };
}

async function pgCount(url: string): Promise<number> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ n: string }>("SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()");
    return Number(r.rows[0].n);
  } finally {
    await c.end();
  }
}

export async function runReplicasBench(opts: { quick?: boolean; log?: (m: string) => void } = {}): Promise<ReplicasResult> {
  const log = opts.log ?? (() => {});
  const backends = opts.quick ? 200 : 1000;
  const intervalSeconds = 5;
  const warmupSeconds = opts.quick ? 10 : 20;
  const measureSeconds = opts.quick ? 15 : 40;
  const fleet = await startSimulatorFleet(backends, 180_000, ["--http-keep-alive-seconds", String(SCALE_KEEP_ALIVE_SECONDS)]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-replicas-"));
  const pg = await startPostgres();
  try {
    const base: ScaleSpec = { urls: fleet.urls, intervalSeconds, warmupSeconds, measureSeconds, readWorkerEntry: bundled("lib/watcher/read-worker.ts") };
    const run = async (name: string, spec: ScaleSpec): Promise<ScaleRun> => {
      const file = path.join(dir, `${name}.json`);
      fs.writeFileSync(file, JSON.stringify(spec));
      const worker = startBundled("bench/scale-worker.ts", [file]);
      try {
        return await firstJsonLine<ScaleRun>(worker, (warmupSeconds + measureSeconds + 90) * 1000, `replica ${name}`);
      } finally {
        await worker.stop();
      }
    };

    log(`replicas: one on SQLite, ${backends} backends every ${intervalSeconds} s`);
    const sqlite = await run("sqlite", base);

    log(`replicas: two on PostgreSQL, the same ${backends} backends`);
    const syncWorkerEntry = bundled("db/pg/sync-worker.ts");
    const spec = (replicaId: string): ScaleSpec => ({ ...base, postgres: { url: pg.url, replicaId, syncWorkerEntry } });
    const before = await pgCount(pg.url);
    const t0 = Date.now();
    const [a, b] = await Promise.all([run("replica-a", spec("replica-a")), run("replica-b", spec("replica-b"))]);
    const seconds = (Date.now() - t0) / 1000;
    const after = await pgCount(pg.url);
    const [leader, standby] = a.leading ? [a, b] : [b, a];
    if (!leader.leading || standby.leading) throw new Error(`expected one leader of two, got ${a.leading} and ${b.leading}`);
    return {
      backends,
      intervalSeconds,
      measureSeconds,
      sqlite,
      postgres: { leader, standby, databaseBytes: leader.dbBytes, transactionsPerSecond: Math.round((after - before) / seconds) },
    };
  } finally {
    await fleet.child.stop();
    pg.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

runWhenMain(__filename, () => runReplicasBench({ quick: process.argv.includes("--quick"), log: (m) => console.error(m) }));

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

/** The section of bench/RESULTS.md. */
export function replicasSection(r: ReplicasResult, measured: string): string {
  const row = (name: string, x: ScaleRun) =>
    `| ${name} | ${x.cpuCores.toFixed(3)} | ${(((x.cpuCores * 1000) / (x.reads / x.measureSeconds)) || 0).toFixed(3)} | ${x.rssMb.max} | ${x.pollLagMs.p99} | ${x.eventLoopDelayMs.p99} | ${x.backendsJudged} of ${x.backends} | ${x.statements ?? "-"} (${x.statements === undefined ? "-" : (x.statements / x.measureSeconds).toFixed(1)}/s) |`;
  return `## 10. Replicas: one on SQLite against two on PostgreSQL

${r.backends} simulated backends every ${r.intervalSeconds} s, the watcher of bench/scale-worker.ts, each measured over ${r.measureSeconds} s:
first alone on the SQLite file, then two at once on one PostgreSQL 15 (Debian's, on this machine), each
keeping the lease as the server does. The leader writes; the standby judges the same fleet in memory and
writes nothing (its statements are the once-a-second reads of restarts asked elsewhere and of the
on-call book). ${measured}

| replica | CPU (cores) | CPU ms per read | RSS max (MB) | poll lag p99 (ms) | event loop delay p99 (ms) | judged | statements in the window |
|---|---|---|---|---|---|---|---|
${row("SQLite, alone", r.sqlite)}
${row("PostgreSQL, leader", r.postgres.leader)}
${row("PostgreSQL, standby", r.postgres.standby)}

Database at the end: SQLite ${mb(r.sqlite.dbBytes)} (file and WAL); PostgreSQL ${mb(r.postgres.databaseBytes)} (pg_database_size, an empty
database is about 7.5 MB). PostgreSQL committed ${r.postgres.transactionsPerSecond} transactions a second over the whole run of the two (their
start included, where the leader reads every backend's stored decisions back, one statement each; in the window itself the
statements above). The PostgreSQL replicas' extra RSS is the connection thread (a V8 isolate of its own with node-postgres)
and the lease's pool.
Statements: better-sqlite3's run/get/all on SQLite (one INSERT per sample); on PostgreSQL every statement sent, BEGIN
and COMMIT included (samples go as multi-row INSERTs: db/pg/sync-client.ts runMany).
`;
}
