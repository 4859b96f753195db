/**
 * Which database a replica opens (lib/runtime.ts databaseTarget): SQLite unless PostgreSQL is named,
 * STEPWATCH_DATABASE_URL over the config's `database`, whose password comes from "env:NAME" only;
 * bad values name the field. And STEPWATCH_LEASE_SECONDS' bounds.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "@/lib/config";
import { databaseTarget, leaseMsFrom } from "@/lib/runtime";

const base = { backends: [{ id: "a", url: "http://127.0.0.1:9" }] };
const problemOf = (json: unknown, env: Record<string, string> = {}) => {
  try {
    parseConfig(json, "t.json", { env });
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  return "";
};

describe("databaseTarget", () => {
  it("is the SQLite file when nothing names PostgreSQL (STEPWATCH_DB or data/stepwatch.db)", () => {
    const c = parseConfig(base, "t.json", { env: {} });
    expect(databaseTarget(c, {})).toMatchObject({ engine: "sqlite", path: expect.stringMatching(/data\/stepwatch\.db$/) });
    expect(databaseTarget(c, { STEPWATCH_DB: "/var/lib/sw/x.db" })).toEqual({ engine: "sqlite", path: "/var/lib/sw/x.db" });
  });

  it("takes the config's database.url with its password from the environment, never in the setting named in errors", () => {
    const c = parseConfig({ ...base, database: { url: "postgres://sw@db:5432/stepwatch", password: "env:SW_DB_PW" } }, "t.json", { env: { SW_DB_PW: "p@ss/word" } });
    const t = databaseTarget(c, {});
    expect(t.engine).toBe("postgresql");
    if (t.engine !== "postgresql") return;
    expect(new URL(t.url).password).toBe(encodeURIComponent("p@ss/word"));
    expect(decodeURIComponent(new URL(t.url).password)).toBe("p@ss/word");
    expect(t.setting).toBe("database.url (postgres://sw:***@db:5432/stepwatch)");
    expect(c.secretEnvNames).toContain("SW_DB_PW");
  });

  it("prefers STEPWATCH_DATABASE_URL over the config", () => {
    const c = parseConfig({ ...base, database: { url: "postgres://sw@db/stepwatch" } }, "t.json", { env: {} });
    expect(databaseTarget(c, { STEPWATCH_DATABASE_URL: "postgres://u:p@other/x" })).toEqual({ engine: "postgresql", url: "postgres://u:p@other/x", setting: "STEPWATCH_DATABASE_URL" });
  });

  it("refuses a database.url that is not PostgreSQL's or carries a password, and a clear-text password, naming the field", () => {
    expect(problemOf({ ...base, database: { url: "mysql://db/x" } })).toContain("database.url");
    const withPw = problemOf({ ...base, database: { url: "postgres://sw:secret@db/x" } });
    expect(withPw).toContain("database.url");
    expect(withPw).not.toContain("secret@");
    expect(problemOf({ ...base, database: { url: "postgres://sw@db/x", password: "hunter2" } })).toContain("database.password");
    expect(problemOf({ ...base, database: { url: "postgres://sw@db/x", password: "env:MISSING_PW" } })).toContain("database.password");
  });
});

describe("leaseMsFrom", () => {
  it("is the default (undefined) when unset, seconds as ms when valid, an error naming the variable otherwise", () => {
    expect(leaseMsFrom({})).toBeUndefined();
    expect(leaseMsFrom({ STEPWATCH_LEASE_SECONDS: "2.5" })).toBe(2500);
    for (const bad of ["0", "-3", "abc", "601"]) expect(() => leaseMsFrom({ STEPWATCH_LEASE_SECONDS: bad })).toThrow(/STEPWATCH_LEASE_SECONDS/);
  });
});
