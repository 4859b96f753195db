/**
 * Copies a SQLite database of stepwatch into an empty PostgreSQL one (the twin schema of
 * db/pg/schema.ts), so a site moving to replicas keeps its history, restarts, audit log and outbox.
 * One PostgreSQL transaction for the whole copy: it lands whole or not at all. Values are copied as
 * stored (0/1, JSON text, milliseconds), which the twin columns read back exactly as SQLite's do.
 */
import type Database from "better-sqlite3";
import { is } from "drizzle-orm";
import { getTableConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { PoolClient } from "pg";
import * as sqliteSchema from "../schema";
import type { PgHandle } from "./client";
import { isRowId } from "./mirror";

/** Every table of the SQLite schema, by name, with its column names. */
export function sqliteTables(): Array<{ name: string; columns: string[]; identity: string | null }> {
  return (Object.values(sqliteSchema) as unknown[])
    .filter((v): v is SQLiteTable => is(v, SQLiteTable))
    .map((t) => {
      const cfg = getTableConfig(t);
      const columns = cfg.columns.map((c) => c.name);
      const identity = cfg.columns.find(isRowId)?.name ?? null;
      return { name: cfg.name, columns, identity };
    });
}

export interface CopyReport {
  tables: Array<{ table: string; rows: number }>;
}

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function insertBatch(client: PoolClient, table: string, columns: string[], rows: unknown[][]): Promise<void> {
  const values: unknown[] = [];
  const tuples = rows.map((r) => `(${r.map((v) => `$${values.push(v)}`).join(",")})`);
  await client.query(`INSERT INTO ${q(table)} (${columns.map(q).join(",")}) VALUES ${tuples.join(",")}`, values);
}

/**
 * Copies every row. Refuses (and writes nothing) when any target table already holds rows: a copy
 * never merges two histories. `onTable` is told each table's count as it finishes.
 */
export async function copySqliteToPg(source: Database.Database, target: PgHandle, onTable?: (table: string, rows: number) => void): Promise<CopyReport> {
  const tables = sqliteTables();
  const client = await target.pool.connect();
  const report: CopyReport = { tables: [] };
  try {
    for (const t of tables) {
      const { rows } = await client.query(`SELECT 1 FROM ${q(t.name)} LIMIT 1`);
      if (rows.length > 0) throw new Error(`the PostgreSQL database already holds rows in ${t.name}: copy only into an empty database (nothing was copied)`);
    }
    await client.query("BEGIN");
    for (const t of tables) {
      // PostgreSQL takes at most 65535 parameters in one statement.
      const perBatch = Math.max(1, Math.floor(60_000 / t.columns.length));
      const select = source.prepare(`SELECT ${t.columns.map(q).join(",")} FROM ${q(t.name)} ORDER BY rowid`).raw(true);
      let batch: unknown[][] = [];
      let count = 0;
      for (const row of select.iterate() as Iterable<unknown[]>) {
        batch.push(row.map((v) => (typeof v === "bigint" ? Number(v) : v)));
        if (batch.length === perBatch) {
          await insertBatch(client, t.name, t.columns, batch);
          count += batch.length;
          batch = [];
        }
      }
      if (batch.length) {
        await insertBatch(client, t.name, t.columns, batch);
        count += batch.length;
      }
      // The next id PostgreSQL hands out follows the copied ones.
      if (t.identity) {
        await client.query(`SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT MAX(${q(t.identity)}) FROM ${q(t.name)}), 0) + 1, false)`, [t.name, t.identity]);
      }
      const copied = Number((await client.query(`SELECT count(*) AS n FROM ${q(t.name)}`)).rows[0].n);
      if (copied !== count) throw new Error(`${t.name}: ${count} rows read, ${copied} in PostgreSQL`);
      report.tables.push({ table: t.name, rows: count });
      onTable?.(t.name, count);
    }
    await client.query("COMMIT");
    return report;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}
