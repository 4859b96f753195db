/**
 * db/pg/translate.ts, rule by rule: SQLite's SQL as drizzle and db/queries write it, and the
 * PostgreSQL text it becomes. What the rewritten statements do on a real server is the storage
 * tests' part (the "storage-pg" project runs them on PostgreSQL).
 */
import { describe, expect, it } from "vitest";
import { multiRowShape } from "@/db/pg/sync-client";
import { bindValues, translateSql } from "@/db/pg/translate";

const text = (sql: string) => translateSql(sql).text;

describe("translateSql", () => {
  it("numbers positional parameters in order", () => {
    expect(translateSql("select a from t where b = ? and c > ?")).toEqual({ text: "select a from t where b = $1 and c > $2", params: [0, 1] });
  });

  it("numbers named parameters (@, : and $), one number for a name used twice", () => {
    const t = translateSql("SELECT * FROM t WHERE a = @id AND b > :from AND c < $to AND d = @id");
    expect(t.text).toBe("SELECT * FROM t WHERE a = $1 AND b > $2 AND c < $3 AND d = $1");
    expect(t.params).toEqual(["id", "from", "to"]);
  });

  it("leaves PostgreSQL's :: casts, strings, quoted names and comments as they are", () => {
    expect(text("SELECT x::json, '@a ? max(1, 2)', \"we?ird\" FROM t -- a ? comment\nWHERE y = ?")).toBe(
      "SELECT x::json, '@a ? max(1, 2)', \"we?ird\" FROM t -- a ? comment\nWHERE y = $1",
    );
    expect(text("SELECT 'it''s ?', ?")).toBe("SELECT 'it''s ?', $1");
  });

  it("copies a dollar-quoted string untouched (a function body)", () => {
    const body = "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no ? @x'; END $$";
    expect(text(body)).toBe(body);
    expect(text("SELECT $q$ a ? $q$, ?")).toBe("SELECT $q$ a ? $q$, $1");
    expect(() => translateSql("SELECT $$ open")).toThrow(/unterminated \$\$/);
  });

  it("writes DEFAULT for drizzle's bare null in an INSERT's VALUES, never for a null elsewhere", () => {
    expect(text('insert into "t" ("id", "a", "b") values (null, ?, null), (null, ?, null) returning "id"')).toBe(
      'insert into "t" ("id", "a", "b") values (DEFAULT, $1, DEFAULT), (DEFAULT, $2, DEFAULT) returning "id"',
    );
    expect(text("insert into t (a) values (coalesce(?, null))")).toBe("insert into t (a) values (coalesce($1, null))");
    expect(text("insert into t (a) values (?) on conflict (a) do update set b = null")).toBe("insert into t (a) values ($1) on conflict (a) do update set b = null");
    expect(text("update t set a = null where b is null")).toBe("update t set a = null where b is null");
  });

  it("makes SQLite's scalar max/min GREATEST/LEAST, and leaves the aggregates", () => {
    expect(text("SELECT MAX(COALESCE(a, b), COALESCE(b, a)), min(x, y, z), MAX(c), min(d) FROM t")).toBe(
      "SELECT GREATEST(COALESCE(a, b), COALESCE(b, a)), LEAST(x, y, z), MAX(c), min(d) FROM t",
    );
  });

  it("renames the JSON functions, with json_each's argument cast and json_group_array's empty answer", () => {
    expect(text("SELECT value FROM json_each(?)")).toBe("SELECT value FROM json_array_elements_text($1::json)");
    expect(text("SELECT json_group_array(json_array(a, b)) FROM (SELECT a, b FROM t) AS p")).toBe(
      "SELECT COALESCE(json_agg(json_build_array(a, b)), '[]'::json) FROM (SELECT a, b FROM t) AS p",
    );
  });

  it("widens CAST(... AS INTEGER) to BIGINT and CAST(... AS REAL) to DOUBLE PRECISION", () => {
    expect(text("SELECT CAST(@a AS INTEGER), CAST(@b AS REAL), CAST(@c AS TEXT)")).toBe("SELECT CAST($1 AS BIGINT), CAST($2 AS DOUBLE PRECISION), CAST($3 AS TEXT)");
    // a column named like a type is left alone
    expect(text("SELECT real, integer FROM t")).toBe("SELECT real, integer FROM t");
  });

  it("refuses INSERT OR ..., naming the statement", () => {
    expect(() => translateSql("INSERT OR REPLACE INTO t (a) VALUES (1)")).toThrow(/INSERT OR.*ON CONFLICT.*INSERT OR REPLACE INTO t/);
  });
});

describe("runMany's statement (db/pg/sync-client.ts)", () => {
  it("repeats a one-row positional INSERT's tuple, numbering on", () => {
    const shape = multiRowShape('INSERT INTO samples ("a", "b") VALUES (?, ?)');
    expect(shape.width).toBe(2);
    expect(shape.textFor(3)).toBe('INSERT INTO samples ("a", "b") VALUES ($1, $2), ($3, $4), ($5, $6)');
  });

  it("refuses any other shape rather than guess", () => {
    for (const sql of ["INSERT INTO t (a) VALUES (?) ON CONFLICT DO NOTHING", "INSERT INTO t (a) VALUES (@a)", "INSERT INTO t (a) SELECT ?", "UPDATE t SET a = ?"]) {
      expect(() => multiRowShape(sql)).toThrow(/runMany takes INSERT INTO/);
    }
  });
});

describe("bindValues", () => {
  it("takes positional values in order, booleans as 0/1, bigint as text, undefined as NULL", () => {
    expect(bindValues(translateSql("SELECT ?, ?, ?, ?"), [true, 10n, undefined, "x"])).toEqual([1, "10", null, "x"]);
    expect(bindValues(translateSql("SELECT ?, ?"), [[1, 2]])).toEqual([1, 2]);
  });

  it("takes named values from one object, and names a missing one", () => {
    const t = translateSql("SELECT @a, @b, @a");
    expect(bindValues(t, [{ a: 1, b: false }])).toEqual([1, 0]);
    expect(() => bindValues(t, [{ a: 1 }])).toThrow(/@b has no value/);
    expect(() => bindValues(translateSql("SELECT ?, ?"), [1])).toThrow(/parameter 2 has no value/);
  });
});
