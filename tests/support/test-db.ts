/**
 * The storage tests' database: a SQLite file as the product opens it, or, when
 * STEPWATCH_TEST_ENGINE=postgresql (the "storage-pg" project of vitest.config.mts), a fresh
 * PostgreSQL database opened with openPgStore, so the same test runs the same queries on both
 * engines. One PostgreSQL server serves a whole run (started by tests/support/pg-global-setup.ts,
 * its URL handed over with vitest's provide/inject; a file run without that setup starts one for
 * its worker, stopped when the worker exits). Each database is copied from a migrated template
 * (CREATE DATABASE ... TEMPLATE), so a test opens it without running the migrations again.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { openDb, type OpenDbOptions } from "../../db/client";
import { openPg } from "../../db/pg/client";
import { openPgStore } from "../../db/pg/store";
import type { DbHandle } from "../../db/types";
import { startPostgres, type TestPostgres } from "./postgres";

declare module "vitest" {
  export interface ProvidedContext {
    /** The shared test server's URL (its `postgres` database), from pg-global-setup.ts. */
    stepwatchPgUrl?: string;
  }
}

export type TestEngine = "sqlite" | "postgresql";

export const TEST_ENGINE: TestEngine = process.env.STEPWATCH_TEST_ENGINE === "postgresql" ? "postgresql" : "sqlite";

/** The migrated database every test database is copied from. */
export const PG_TEMPLATE = "stepwatch_template";

/** The server URL with another database. */
export function databaseUrl(serverUrl: string, database: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Creates the template database on a fresh server and applies the migrations to it. */
export async function prepareTemplate(serverUrl: string): Promise<void> {
  await adminQuery(serverUrl, `CREATE DATABASE ${PG_TEMPLATE}`);
  const h = await openPg(databaseUrl(serverUrl, PG_TEMPLATE), { max: 1 });
  await h.close();
}

async function adminQuery(serverUrl: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

let ownServer: Promise<string> | null = null;

/** The server's URL: the run's shared one, else one started for this worker (stopped at its exit). */
function serverUrl(): Promise<string> {
  const shared = inject("stepwatchPgUrl");
  if (shared) return Promise.resolve(shared);
  ownServer ??= (async () => {
    const server: TestPostgres = await startPostgres();
    process.once("exit", () => server.destroy());
    await prepareTemplate(server.url);
    return server.url;
  })();
  return ownServer;
}

/** The database behind each file name given, so a test that opens the same file twice gets the same data. */
const databases = new Map<string, string>();

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
