/**
 * The SQLite connection: opened once per process (lib/runtime keeps it on globalThis), WAL so the
 * dashboard's reads never wait for the watcher's writes, committed drizzle-kit migrations applied
 * at open so a fresh clone and an old database both end up on the current schema.
 */
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { drizzle, type BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { ensureRollups } from "./queries/history";
import * as schema from "./schema";
import type { Db, DbHandle } from "./types";

export const DEFAULT_DB_PATH = "data/stepwatch.db";

/**
 * How long a statement waits for another process's write lock. better-sqlite3 waits on the event
 * loop, so this is how long the whole server can stall (issue 31: 2 s made the fleet answer wait
 * up to 4 s). Past it the write fails at once with SQLITE_BUSY and is not lost: the watcher keeps
 * its queue and writes it at the next flush; a route answers 503 with the reason.
 */
export const BUSY_TIMEOUT_MS = 50;

/** STEPWATCH_DB, else data/stepwatch.db, relative to the working directory (the repo root). */
export function resolveDbPath(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): string {
  return path.resolve(cwd, env.STEPWATCH_DB || DEFAULT_DB_PATH);
}

export interface OpenDbOptions {
  /** Where the committed migrations live; db/migrations under the working directory by default. */
  migrationsFolder?: string;
  /** How long a write waits for another connection's lock. It blocks the event loop: keep it short. */
  busyTimeoutMs?: number;
}

export function openDb(file: string = resolveDbPath(), opts: OpenDbOptions = {}): DbHandle {
  // The DB path is chosen at run time (STEPWATCH_DB): tell Turbopack not to trace the project for it.
  fs.mkdirSync(path.dirname(path.resolve(/*turbopackIgnore: true*/ file)), { recursive: true });
  const sqlite = new Database(file, { timeout: opts.busyTimeoutMs ?? BUSY_TIMEOUT_MS });
  try {
    sqlite.pragma("journal_mode = WAL");
    // NORMAL under WAL: a power cut may lose the last transactions, never corrupt the file.
    sqlite.pragma("synchronous = NORMAL");
    sqlite.pragma("foreign_keys = ON");
    const db = drizzle(sqlite, { schema });
    migrate(db, { migrationsFolder: opts.migrationsFolder ?? path.join(process.cwd(), "db", "migrations") });
    ensureRollups(db as Db);
    return {
      db,
      sqlite,
      path: file,
      close: () => {
        if (sqlite.open) sqlite.close();
      },
    };
  } catch (e) {
    sqlite.close();
    throw new Error(`cannot open the database ${file}: ${(e as Error).message}`);
  }
}
