/**
 * The storage tests' database: a SQLite file as the product opens it, or, when
 * STEPWATCH_TEST_ENGINE=postgresql (the "storage-pg" project of vitest.config.mts), a fresh
 * PostgreSQL database opened with openPgStore, so the same test runs the same queries on both
 * engines. One PostgreSQL server serves a whole run (started by tests/support/pg-global-setup.ts,
 * its URL handed over with vitest's provide/inject; a file run without that setup starts one of
 * its own, stopped when the file ends). Each database is copied from a migrated template
 * (CREATE DATABASE ... TEMPLATE), so a test opens it without running the migrations again, and
 * dropped when its test file ends (a run creates hundreds; the server's disk stays bounded).
 */
import { randomBytes } from "node:crypto";
import { afterAll, inject } from "vitest";
import { openDb, type OpenDbOptions } from "../../db/client";
import { openPgStore } from "../../db/pg/store";
import type { DbHandle } from "../../db/types";
import { adminQuery, databaseUrl, PG_TEMPLATE, startTemplateServer } from "./pg-template";
import type { TestPostgres } from "./postgres";

declare module "vitest" {
  export interface ProvidedContext {
    /** The shared test server's URL (its `postgres` database), from pg-global-setup.ts. */
    stepwatchPgUrl?: string;
  }
}

export type TestEngine = "sqlite" | "postgresql";

export const TEST_ENGINE: TestEngine = process.env.STEPWATCH_TEST_ENGINE === "postgresql" ? "postgresql" : "sqlite";

/** A server of the file's own, when the run has none (stopped in afterAll: a worker is killed, not exited, so an exit hook would leave it running). */
let ownServer: Promise<TestPostgres> | null = null;

/** The server's URL: the run's shared one, else one started for this file. */
async function serverUrl(): Promise<string> {
  const shared = inject("stepwatchPgUrl");
  if (shared) return shared;
  ownServer ??= startTemplateServer();
  return (await ownServer).url;
}

/** The database behind each file name given, so a test that opens the same file twice gets the same data. */
const databases = new Map<string, string>();

afterAll(async () => {
  if (ownServer) {
    (await ownServer).destroy();
    ownServer = null;
  } else if (databases.size > 0) {
    const server = await serverUrl();
    // FORCE: a handle a test left open is cut off rather than keeping its database.
    for (const name of databases.values()) await adminQuery(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
  databases.clear();
});

/**
 * Opens the test's database. On SQLite: `openDb(file)`. On PostgreSQL: the database this file
 * name stands for (created on first use), with `path` the file name, so a test that reopens
 * `handle.path` reaches the same data.
 */
export async function openTestDb(file: string, opts: OpenDbOptions = {}): Promise<DbHandle> {
  if (TEST_ENGINE === "sqlite") return openDb(file, opts);
  const server = await serverUrl();
  let name = databases.get(file);
  if (!name) {
    name = `t_${process.pid}_${randomBytes(6).toString("hex")}`;
    await adminQuery(server, `CREATE DATABASE ${name} TEMPLATE ${PG_TEMPLATE}`);
    databases.set(file, name);
  }
  const h = await openPgStore(databaseUrl(server, name), { timeoutMs: 10_000 });
  return { ...h, path: file };
}

/**
 * Makes every INSERT into `table` fail with `message` (a full disk, an unwritable audit log), on
 * either engine, until the function returned is called.
 */
export function failInserts(h: DbHandle, table: string, message: string): () => void {
  const name = `fail_${table}`;
  if (TEST_ENGINE === "sqlite") {
    h.sqlite.exec(`CREATE TRIGGER ${name} BEFORE INSERT ON ${table} BEGIN SELECT RAISE(ABORT, '${message}'); END`);
    return () => h.sqlite.exec(`DROP TRIGGER ${name}`);
  }
  h.sqlite.exec(
    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '${message}'; END $$;
     CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`,
  );
  return () => h.sqlite.exec(`DROP TRIGGER ${name} ON ${table}; DROP FUNCTION ${name}()`);
}
