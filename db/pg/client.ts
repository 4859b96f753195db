/**
 * The PostgreSQL connection of a replica (STEPWATCH_DATABASE_URL): a node-postgres pool under
 * drizzle, the committed migrations of db/pg/migrations applied at open. Every wait is bounded
 * (connect, statement), so a database that goes away costs a replica an error, never a hung loop.
 */
import path from "node:path";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import { Client, Pool } from "pg";
import * as schema from "./schema";

export type PgDb = NodePgDatabase<typeof schema> & { $client: Pool };

export interface PgHandle {
  db: PgDb;
  pool: Pool;
  /** The URL with its password replaced by "***": what errors and logs may show. */
  safeUrl: string;
  close(): Promise<void>;
}

export interface OpenPgOptions {
  /** Which setting the URL came from, named in every error (STEPWATCH_DATABASE_URL or database.url). */
  setting?: string;
  migrationsFolder?: string;
  /** Bounds every wait: the connection, and each statement (server side). */
  timeoutMs?: number;
  /** Connections in the pool. */
  max?: number;
  /** Apply the committed migrations first (default true). */
  migrate?: boolean;
}

/** The key of the advisory lock that serialises migrations: replicas started together migrate one after the other. */
const MIGRATION_LOCK = 7_270_501;

/** The URL without its password (the only secret it carries). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(not a URL)";
  }
}

/** The URL checked: a clear error naming the setting when it is not PostgreSQL's. */
function checkUrl(url: string, setting: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${setting} is not a URL: expected postgres://user:password@host:port/database`);
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new Error(`${setting} must start with postgres:// (got ${parsed.protocol}//)`);
  }
}

export type MigrateOptions = Pick<OpenPgOptions, "setting" | "migrationsFolder" | "timeoutMs">;

/**
 * Applies the committed migrations, on a connection of its own, under a lock held for the
 * migration only: two replicas started at once would otherwise both apply the same migration and
 * one would fail. (The lease is a row, not a lock like this one: docs/decisions.md "Replicas".)
 * A wrong URL, a refused connection or bad credentials throw one clear error naming the setting.
 */
export async function migratePg(url: string, opts: MigrateOptions = {}): Promise<void> {
  const setting = opts.setting ?? "STEPWATCH_DATABASE_URL";
  checkUrl(url, setting);
  const client = new Client({ connectionString: url, connectionTimeoutMillis: opts.timeoutMs ?? 5000, application_name: "stepwatch-migrate" });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    await migrate(drizzle(client, { schema }), { migrationsFolder: opts.migrationsFolder ?? path.join(process.cwd(), "db", "pg", "migrations") });
  } catch (e) {
    throw new Error(`${setting} (${redactUrl(url)}): cannot open the database: ${pgErrorText(e)}`);
  } finally {
    // Ending the session releases the lock, also when the migration failed.
    await client.end().catch(() => {});
  }
}

/** Opens the pool (after the migrations, unless `migrate: false`); errors as migratePg's. */
export async function openPg(url: string, opts: OpenPgOptions = {}): Promise<PgHandle> {
  // migratePg checks the URL itself.
  if (opts.migrate !== false) await migratePg(url, opts);
  else checkUrl(url, opts.setting ?? "STEPWATCH_DATABASE_URL");
  const timeoutMs = opts.timeoutMs ?? 5000;
  const pool = new Pool({
    connectionString: url,
    max: opts.max ?? 5,
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + 1000,
    application_name: "stepwatch",
  });
  // An idle client's error (the server went away) must not crash the process: the next query reports it.
  pool.on("error", () => {});
  const db = drizzle(pool, { schema }) as PgDb;
  return { db, pool, safeUrl: redactUrl(url), close: () => pool.end() };
}

/** One line for an error of node-postgres (its code named when it has one), never the password. */
export function pgErrorText(e: unknown): string {
  const err = e as { message?: string; code?: string; cause?: unknown };
  const inner = err.cause as { message?: string; code?: string } | undefined;
  const message = inner?.message && err.message?.startsWith("Failed query") ? inner.message : err.message ?? String(e);
  const code = inner?.code ?? err.code;
  return code ? `${message} (${code})` : message;
}
