/**
 * SQLite's SQL, as drizzle's sqlite-core and db/queries write it, made PostgreSQL's: the one set of
 * queries runs on both engines (docs/decisions.md "Replicas: one set of queries"). A tokenizer,
 * not a parser: it knows string literals, quoted names and comments, and rewrites only these:
 *
 * - parameters: `?` (drizzle, positional) and `@name` / `:name` / `$name` (better-sqlite3's named
 *   ones) become `$1`, `$2`...; a named one used twice is one `$n`;
 * - a bare `null` inside an INSERT's VALUES list becomes `DEFAULT`: drizzle's SQLite dialect writes
 *   `null` for a column left out (SQLite has no DEFAULT there), which PostgreSQL would store as a
 *   NULL instead of numbering an identity column or applying its default; a value given as NULL
 *   is a parameter, never this literal;
 * - SQLite's scalar `max(a, b)` / `min(a, b)` (two or more arguments) are `GREATEST` / `LEAST`
 *   (the callers COALESCE their arguments, where the two differ on NULL);
 * - `json_each(x)` is `json_array_elements_text(x::json)` (its column is `value` in both);
 *   `json_group_array(x)` is `COALESCE(json_agg(x), '[]'::json)` and `json_array(...)` is
 *   `json_build_array(...)` (a json column reads back as its text, as SQLite gives it);
 * - `AS INTEGER` (in a CAST) is `AS BIGINT`: SQLite's integers are 64-bit, PostgreSQL's `integer`
 *   is not; `AS REAL` is `AS DOUBLE PRECISION`: SQLite's reals are 8 bytes, PostgreSQL's `real` 4.
 * Strings, quoted names, comments and dollar-quoted strings (PostgreSQL's own SQL, a test's trigger)
 * pass through as they are. Anything else SQLite-only (INSERT OR REPLACE, a bare column beside an aggregate) is written
 * portably at its source; `INSERT OR` is refused here with the statement named, never sent.
 *
 * Written by hand: no library translates SQLite's dialect to PostgreSQL's at run time, and the
 * rewrites needed are these few.
 */

export interface Translated {
  text: string;
  /** For each `$n` (index n-1): a 0-based position in the positional arguments, or a parameter's name. */
  params: Array<number | string>;
}

const RENAMES: Record<string, { name: string; argSuffix?: string; wrap?: [string, string] }> = {
  json_each: { name: "json_array_elements_text", argSuffix: "::json" },
  json_group_array: { name: "json_agg", wrap: ["COALESCE(", ", '[]'::json)"] },
  json_array: { name: "json_build_array" },
};

const isWordStart = (c: string) => /[A-Za-z_]/.test(c);
const isWord = (c: string) => /[A-Za-z0-9_]/.test(c);

/** The index of the `)` closing the `(` at `open`, skipping strings and quoted names; -1 when none. */
function closingParen(sql: string, open: number): { close: number; commas: number } {
  let depth = 0;
  let commas = 0;
  for (let i = open; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      if (end < 0) return { close: -1, commas };
      i = end;
    } else if (c === "(") depth++;
    else if (c === ")") {
      depth--;
      if (depth === 0) return { close: i, commas };
    } else if (c === "," && depth === 1) commas++;
  }
  return { close: -1, commas };
}

export function translateSql(sql: string): Translated {
  const out: string[] = [];
  const params: Array<number | string> = [];
  const named = new Map<string, number>();
  let positional = 0;
  /** What to write just before a `)` at a given offset in the source (a rename's suffix). */
  const atClose = new Map<number, string>();
  const isInsert = /^\s*insert\b/i.test(sql);
  if (/^\s*insert\s+or\b/i.test(sql)) throw new Error(`SQLite-only statement (INSERT OR ...) has no PostgreSQL form; write it with ON CONFLICT: ${sql.slice(0, 120)}`);
  let inValues = false;
  let depth = 0;
  let prevSignificant = "";
  let prevWord = "";

  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      let end = i + 1;
      for (;;) {
        end = sql.indexOf(c, end);
        if (end < 0) throw new Error(`unterminated ${c === "'" ? "string" : "name"} in SQL: ${sql.slice(i, i + 60)}`);
        if (sql[end + 1] === c) end += 2;
        else break;
      }
      out.push(sql.slice(i, end + 1));
      i = end;
      prevSignificant = c;
      continue;
    }
    if (c === "$") {
      // A dollar-quoted string ($$...$$, $tag$...$tag$: PostgreSQL's, in a function body) is copied
      // as it is; its text is not SQL to rewrite.
      const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 64))?.[0];
      if (tag) {
        const end = sql.indexOf(tag, i + tag.length);
        if (end < 0) throw new Error(`unterminated ${tag} string in SQL: ${sql.slice(i, i + 60)}`);
        out.push(sql.slice(i, end + tag.length));
        i = end + tag.length - 1;
        prevSignificant = "'";
        continue;
      }
    }
    if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      const stop = end < 0 ? sql.length : end;
      out.push(sql.slice(i, stop));
      i = stop - 1;
      continue;
    }
    if (c === "?") {
      params.push(positional++);
      out.push(`$${params.length}`);
      prevSignificant = "?";
      continue;
    }
    if ((c === "@" || c === ":" || c === "$") && isWordStart(sql[i + 1] ?? "") && sql[i - 1] !== ":") {
      let end = i + 1;
      while (end < sql.length && isWord(sql[end])) end++;
      const name = sql.slice(i + 1, end);
      let n = named.get(name);
      if (n === undefined) {
        params.push(name);
        named.set(name, (n = params.length));
      }
      out.push(`$${n}`);
      i = end - 1;
      prevSignificant = "?";
      continue;
    }
    if (isWordStart(c) && !isWord(sql[i - 1] ?? " ")) {
      let end = i + 1;
      while (end < sql.length && isWord(sql[end])) end++;
      const word = sql.slice(i, end);
      const lower = word.toLowerCase();
      let next = end;
      while (next < sql.length && /\s/.test(sql[next])) next++;
      let emitted = word;
      if (sql[next] === "(") {
        const rename = RENAMES[lower];
        if (rename) {
          const { close } = closingParen(sql, next);
          emitted = (rename.wrap?.[0] ?? "") + rename.name;
          if (close >= 0) atClose.set(close, (rename.argSuffix ?? "") + ")" + (rename.wrap?.[1] ?? ""));
        } else if (lower === "max" || lower === "min") {
          const { commas } = closingParen(sql, next);
          if (commas > 0) emitted = lower === "max" ? "GREATEST" : "LEAST";
        }
      } else if (lower === "integer" && prevWord === "as") {
        emitted = "BIGINT";
      } else if (lower === "real" && prevWord === "as") {
        emitted = "DOUBLE PRECISION";
      } else if (lower === "null" && isInsert && inValues && depth === 1 && (prevSignificant === "(" || prevSignificant === ",")) {
        // depth 1: a row's own list; a null inside a call there (coalesce(?, null)) is a value
        let after = end;
        while (after < sql.length && /\s/.test(sql[after])) after++;
        if (sql[after] === "," || sql[after] === ")") emitted = "DEFAULT";
      }
      if (depth === 0 && lower === "values") inValues = true;
      if (depth === 0 && (lower === "on" || lower === "returning" || lower === "select")) inValues = false;
      out.push(emitted);
      i = end - 1;
      prevWord = lower;
      prevSignificant = "w";
      continue;
    }
    if (c === "(") depth++;
    if (c === ")") {
      depth--;
      const suffix = atClose.get(i);
      if (suffix !== undefined) {
        out.push(suffix);
        prevSignificant = ")";
        continue;
      }
    }
    if (!/\s/.test(c)) prevSignificant = c;
    out.push(c);
  }
  return { text: out.join(""), params };
}

/** The values for a translated statement from better-sqlite3-style arguments (positional values, or one object of named ones). */
export function bindValues(t: Translated, args: unknown[]): unknown[] {
  const flat = args.length === 1 && Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  const wantsNamed = t.params.some((p) => typeof p === "string");
  const last = flat[flat.length - 1];
  const named = wantsNamed && last !== null && typeof last === "object" && !Buffer.isBuffer(last) ? (last as Record<string, unknown>) : null;
  return t.params.map((p) => {
    if (typeof p === "number") {
      if (p >= flat.length || (named && p === flat.length - 1)) throw new RangeError(`SQL parameter ${p + 1} has no value`);
      return toPg(flat[p]);
    }
    if (!named || !(p in named)) throw new RangeError(`SQL parameter @${p} has no value`);
    return toPg(named[p]);
  });
}

/** A value as PostgreSQL should get it: booleans as SQLite stores them (0/1), bigint as text. */
function toPg(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "bigint") return v.toString();
  return v;
}
