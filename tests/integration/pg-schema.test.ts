/**
 * One schema on two engines: every SQLite table has its PostgreSQL twin (db/pg/mirror.ts), the
 * committed PostgreSQL migrations create it on a real PostgreSQL 15, and a SQLite database copied
 * over (db/pg/copy.ts, `npm run db:copy-to-pg`) reads back the same through drizzle on both sides,
 * with the one-pending-restart index holding there too.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { is, sql } from "drizzle-orm";
import { PgTable, getTableConfig as pgConfig } from "drizzle-orm/pg-core";
import { openDb } from "../../db/client";
import * as sqlite from "../../db/schema";
import * as pgSchema from "../../db/pg/schema";
import { openPg, type PgHandle } from "../../db/pg/client";
import { copySqliteToPg, sqliteTables } from "../../db/pg/copy";
import { startPostgres, type TestPostgres } from "../support/postgres";

let pg: TestPostgres;
let dir: string;
const handles: PgHandle[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-pgschema-"));
});

afterAll(async () => {
  for (const h of handles) await h.close().catch(() => {});
  pg?.destroy();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh database on the test server. */
async function freshPg(name: string): Promise<PgHandle> {
  const admin = await openPg(pg.url);
  await admin.pool.query(`CREATE DATABASE ${name}`);
  await admin.close();
  const h = await openPg(pg.url.replace(/\/postgres$/, `/${name}`));
  handles.push(h);
  return h;
}

describe("the PostgreSQL twin of the schema", () => {
  it("has every SQLite table, with the same columns, nullability and primary keys", () => {
    const twins = new Map(
      (Object.values(pgSchema) as unknown[]).filter((v): v is PgTable => is(v, PgTable)).map((t) => [pgConfig(t).name, pgConfig(t)]),
    );
    for (const t of sqliteTables()) {
      const twin = twins.get(t.name);
      expect(twin, `${t.name} has no twin in db/pg/schema.ts`).toBeDefined();
      expect(twin!.columns.map((c) => c.name)).toEqual(t.columns);
    }
    const cfg = pgConfig(pgSchema.restartEvents);
    expect(cfg.columns.find((c) => c.name === "outcome")?.notNull).toBe(false);
    expect(cfg.columns.find((c) => c.name === "backend_id")?.notNull).toBe(true);
    expect(pgConfig(pgSchema.sampleMinutes).primaryKeys[0].columns.map((c) => c.name)).toEqual(["backend_id", "minute"]);
  });

  it("the committed migrations create every table on a real PostgreSQL 15", async () => {
    const h = await freshPg("twins");
    const { rows } = await h.pool.query<{ table_name: string; column_name: string }>(
      "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    );
    for (const t of sqliteTables()) expect(rows.filter((r) => r.table_name === t.name).map((r) => r.column_name), t.name).toEqual(t.columns);
  });
});

describe("copying a SQLite database into PostgreSQL", () => {
  it("copies every row in one transaction; both engines read the same rows back; ids go on; a second copy is refused", async () => {
    const file = path.join(dir, "source.db");
    const src = openDb(file);
    const db = src.db;
    const at = Date.UTC(2026, 11, 1, 12);
    const reading = { at, outcome: "ok", metrics: { running: 2, waiting: 0 } };
    db.insert(sqlite.samples).values([
      { backendId: "a", at, state: "busy", outcome: "ok", latencyMs: 12, running: 2, waiting: 0, steps: 10.5, probeOk: null, reading },
      { backendId: "a", at: at + 5000, state: "stuck", outcome: "ok", latencyMs: 9, running: 2, waiting: 1, steps: 10.5, probeOk: false, reading, folded: true },
    ]).run();
    db.insert(sqlite.sampleMinutes).values({ backendId: "a", minute: at, n: 12, runningAvg: 1.5, worstState: "stuck" }).run();
    db.insert(sqlite.transitions).values({ kind: "backend", targetId: "a", at, fromState: "busy", toState: "stuck", reasons: [{ rule: "no-progress-stuck", text: "no progress for 95 s" }] } as never).run();
    db.insert(sqlite.restartEvents).values({
      backendId: "a", requestedAt: at + 6000, requestedBy: "ana", note: "it's hung", stateAtRequest: "stuck", healthyAtRequest: false,
      runningAtRequest: 2, waitingAtRequest: 1, processStartTimeAtRequest: 1764590000.25,
      evidence: { reasons: [{ rule: "no-progress-stuck", text: "no progress" }] as never, readings: [{ at }] },
      action: "command: systemctl restart vllm", outcome: "recovered", resolvedAt: at + 60_000, downtimeSeconds: 41.5,
    }).run();
    for (let i = 0; i < 1500; i++) db.insert(sqlite.auditLog).values({ at: at + i, actor: "ana", actorKind: "operator", action: "signin.ok", detail: `n${i} ünïcode ✓` }).run();
    db.insert(sqlite.notifications).values({ uid: "n-1", event: "stuck", backendId: "a", state: "stuck", previousState: "busy", reasons: [], at, details: { reminder: false } }).run();
    db.insert(sqlite.acknowledgements).values({ backendId: "a", at, by: "ana", stateAtAck: "stuck" }).run();

    const target = await freshPg("copied");
    const report = await copySqliteToPg(src.sqlite, target);
    expect(report.tables.find((t) => t.table === "audit_log")?.rows).toBe(1500);
    expect(report.tables.find((t) => t.table === "samples")?.rows).toBe(2);

    // The same rows through drizzle on each side (booleans, JSON, reasons, reals, big times).
    const pairs: Array<[unknown, unknown]> = [
      [sqlite.samples, pgSchema.samples],
      [sqlite.sampleMinutes, pgSchema.sampleMinutes],
      [sqlite.transitions, pgSchema.transitions],
      [sqlite.restartEvents, pgSchema.restartEvents],
      [sqlite.auditLog, pgSchema.auditLog],
      [sqlite.notifications, pgSchema.notifications],
      [sqlite.acknowledgements, pgSchema.acknowledgements],
    ];
    const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r, Object.keys(r as object).sort())).sort();
    for (const [s, p] of pairs) {
      const a = db.select().from(s as typeof sqlite.samples).all();
      const b = await target.db.select().from(p as typeof pgSchema.samples);
      expect(sorted(b)).toEqual(sorted(a));
    }
    const [restart] = await target.db.select().from(pgSchema.restartEvents);
    expect(restart).toMatchObject({ healthyAtRequest: false, overrideCooldown: false, evidence: { reasons: [{ rule: "no-progress-stuck" }] } });

    // PostgreSQL hands out the next id after the copied ones.
    const { rows } = await target.pool.query("INSERT INTO audit_log (at, actor_kind, action) VALUES (1, 'system', 'copy.check') RETURNING id");
    expect(Number(rows[0].id)).toBe(1501);
    // One pending restart per backend is a database fact there too.
    await target.pool.query("INSERT INTO restart_events (backend_id, requested_at, requested_by, state_at_request, healthy_at_request, evidence, action) VALUES ('a', 1, 'x', 'stuck', 0, '{}', 'c')");
    await expect(
      target.pool.query("INSERT INTO restart_events (backend_id, requested_at, requested_by, state_at_request, healthy_at_request, evidence, action) VALUES ('a', 2, 'y', 'stuck', 0, '{}', 'c')"),
    ).rejects.toThrow(/restart_events_one_pending/);

    // Into a database that already holds rows: refused, nothing written.
    const before = Number((await target.pool.query("SELECT count(*) AS n FROM samples")).rows[0].n);
    await expect(copySqliteToPg(src.sqlite, target)).rejects.toThrow(/already holds rows in samples: copy only into an empty database/);
    expect(Number((await target.pool.query("SELECT count(*) AS n FROM samples")).rows[0].n)).toBe(before);
    src.close();
  });

  it("the command: npm run db:copy-to-pg copies a file and names a bad target without its password", async () => {
    const file = path.join(dir, "cli.db");
    const src = openDb(file);
    src.db.insert(sqlite.auditLog).values({ at: 1, actorKind: "system", action: "config.loaded" }).run();
    src.close();
    const target = await freshPg("bycli");
    const url = pg.url.replace(/\/postgres$/, "/bycli");
    const out = execFileSync("npx", ["tsx", "scripts/copy-sqlite-to-pg.ts", "--from", file], { env: { ...process.env, STEPWATCH_DATABASE_URL: url }, timeout: 60_000 }).toString();
    expect(out).toMatch(/audit_log: 1 row\(s\)/);
    expect(out).not.toContain("stepwatch-test-password");
    expect(Number((await target.pool.query("SELECT count(*) AS n FROM audit_log")).rows[0].n)).toBe(1);
    let failed = "";
    try {
      execFileSync("npx", ["tsx", "scripts/copy-sqlite-to-pg.ts", "--from", file, "--to", pg.badPasswordUrl.replace(":wrong@", ":hunter2@")], { timeout: 60_000, stdio: "pipe" });
    } catch (e) {
      failed = String((e as { stderr?: Buffer }).stderr);
    }
    expect(failed).toMatch(/--to \(postgres:\/\/stepwatch:\*\*\*@127\.0\.0\.1:\d+\/postgres\): cannot open the database: password authentication failed/);
    expect(failed).not.toContain("hunter2");
  }, 180_000);
});
