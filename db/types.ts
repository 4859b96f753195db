/** The connection's types, apart from db/client.ts so queries can name them without importing the opener. */
import type Database from "better-sqlite3";
import type { BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import type * as schema from "./schema";

export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

export interface DbHandle {
  db: Db;
  sqlite: Database.Database;
  /** The file, or PostgreSQL's URL without its password. */
  path: string;
  /** Which engine holds the data (db/pg/store.ts for PostgreSQL); SQLite when absent. */
  engine?: "sqlite" | "postgresql";
  close(): void;
}
