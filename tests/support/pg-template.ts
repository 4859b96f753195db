/**
 * The storage tests' PostgreSQL template: a database with the migrations applied, which
 * tests/support/test-db.ts copies a fresh database from for each test. Apart from test-db.ts so
 * the run's globalSetup (pg-global-setup.ts, outside any test file) can make it.
 */
import pg from "pg";
import { migratePg } from "../../db/pg/client";
import { startPostgres, type TestPostgres } from "./postgres";

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
  await migratePg(databaseUrl(serverUrl, PG_TEMPLATE));
}

/** A fresh server with the template made (removed again when making it fails). */
export async function startTemplateServer(): Promise<TestPostgres> {
  const server = await startPostgres();
  try {
    await prepareTemplate(server.url);
  } catch (e) {
    server.destroy();
    throw e;
  }
  return server;
}

export async function adminQuery(serverUrl: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}
