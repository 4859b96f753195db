/**
 * The PostgreSQL twin of every SQLite table, derived from db/schema.ts at load time, so the two
 * engines hold one schema by construction (a column added to the SQLite side appears here; drizzle-kit
 * then generates both migrations). Storage classes as SQLite has them: integer → bigint (times are
 * milliseconds since the epoch, past int4), real → double precision, text → text; an autoincrement
 * id → bigint identity. Each column reads and writes its values through the SQLite column's own
 * mapping (booleans as 0/1, JSON as text, reasons normalised), so a row means the same on both.
 *
 * Written here rather than by hand: a hand-kept twin of 12 tables would drift, and drizzle has no
 * cross-dialect schema of its own.
 */
import { getTableColumns, type SQL } from "drizzle-orm";
import { getTableConfig, type SQLiteColumn, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { bigint, customType, index, pgTable, primaryKey, uniqueIndex, type PgColumnBuilderBase } from "drizzle-orm/pg-core";

/** The PostgreSQL type a SQLite column's values are stored as. */
export function pgTypeOf(column: SQLiteColumn): "bigint" | "double precision" | "text" {
  const t = column.getSQLType().toLowerCase();
  if (t === "integer") return "bigint";
  if (t === "real") return "double precision";
  if (t === "text") return "text";
  throw new Error(`db/pg/mirror: no PostgreSQL type for SQLite ${t} (column ${column.name})`);
}

function columnOf(c: SQLiteColumn): PgColumnBuilderBase {
  const auto = (c as SQLiteColumn & { autoIncrement?: boolean }).autoIncrement === true;
  if (c.primary && auto) return bigint(c.name, { mode: "number" }).primaryKey().generatedByDefaultAsIdentity();
  const type = pgTypeOf(c);
  // node-postgres returns bigint as text (it can exceed 2^53); these hold times and counts well below.
  const fromPg = (v: unknown) => (type === "bigint" && typeof v === "string" ? Number(v) : v);
  const mirrored = customType<{ data: unknown; driverData: unknown }>({
    dataType: () => type,
    toDriver: (v) => c.mapToDriverValue(v),
    fromDriver: (v) => c.mapFromDriverValue(fromPg(v)),
  });
  let b = mirrored(c.name) as unknown as {
    notNull(): typeof b;
    default(v: unknown): typeof b;
    primaryKey(): typeof b;
    unique(name?: string): typeof b;
  };
  if (c.notNull) b = b.notNull();
  if (c.hasDefault && c.default !== undefined) b = b.default(c.mapToDriverValue(c.default));
  if (c.primary) b = b.primaryKey();
  if (c.isUnique) b = b.unique(c.uniqueName);
  return b as unknown as PgColumnBuilderBase;
}

/** The PostgreSQL twin of one SQLite table: same name, columns, primary keys and indexes (partial ones too). */
export function mirrorTable(table: SQLiteTable) {
  const cfg = getTableConfig(table);
  // Keyed as the SQLite table's columns are (backendId, not backend_id): a row has one shape on both.
  const columns: Record<string, PgColumnBuilderBase> = {};
  const keyOf = new Map<string, string>();
  for (const [key, c] of Object.entries(getTableColumns(table))) {
    columns[key] = columnOf(c as SQLiteColumn);
    keyOf.set(c.name, key);
  }
  return pgTable(cfg.name, columns, (t) => {
    const col = (name: string) => t[keyOf.get(name) as keyof typeof t] as never;
    const extras: unknown[] = cfg.primaryKeys.map((pk) => primaryKey({ columns: pk.columns.map((c) => col(c.name)) as never }));
    for (const i of cfg.indexes) {
      const names = (i.config.columns as SQLiteColumn[]).map((c) => c.name);
      const [first, ...rest] = names.map(col);
      let built = (i.config.unique ? uniqueIndex(i.config.name) : index(i.config.name)).on(first, ...rest);
      if (i.config.where) built = built.where(i.config.where as SQL);
      extras.push(built);
    }
    return extras as never;
  });
}
