/**
 * The store on PostgreSQL (STEPWATCH_DATABASE_URL or `database.url`): the migrations of
 * db/pg/migrations applied through drizzle's pg driver, then the same drizzle database and queries
 * as on SQLite over db/pg/sync-client.ts. What the rest of stepwatch gets is a DbHandle either way.
 */
import type Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { ensureRollups } from "../queries/history";
import * as schema from "../schema";
import type { Db, DbHandle } from "../types";
import { migratePg, redactUrl } from "./client";
import { SyncPgClient, type SyncPgOptions } from "./sync-client";

export interface OpenPgStoreOptions {
  /** Which setting the URL came from, named in every error. */
  setting?: string;
  migrationsFolder?: string;
  timeoutMs?: number;
  /** Starts the connection thread from a bundle (db/pg/sync-client.ts SyncPgOptions). */
  spawnWorker?: SyncPgOptions["spawnWorker"];
}

export async function openPgStore(url: string, opts: OpenPgStoreOptions = {}): Promise<DbHandle> {
  const setting = opts.setting ?? "STEPWATCH_DATABASE_URL";
  // Migrations (and every error a wrong URL, a refused connection or bad credentials give, named).
  await migratePg(url, { setting, migrationsFolder: opts.migrationsFolder, timeoutMs: opts.timeoutMs });
  const safeUrl = redactUrl(url);
  const client = new SyncPgClient(safeUrl, url, { timeoutMs: opts.timeoutMs, spawnWorker: opts.spawnWorker });
  if (!client.connected) {
    const why = client.lastError();
    client.close();
    throw new Error(`${setting} (${safeUrl}): cannot connect: ${why || "no answer"}`);
  }
  const db = drizzle(client as unknown as Database.Database, { schema }) as Db;
  try {
    ensureRollups(db);
  } catch (e) {
    client.close();
    throw new Error(`${setting} (${safeUrl}): cannot read the database: ${(e as Error).message}`);
  }
  return { db, sqlite: client as unknown as Database.Database, path: safeUrl, engine: "postgresql", close: () => client.close() };
}
