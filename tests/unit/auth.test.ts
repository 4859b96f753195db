import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { hashPassword, parseScryptHash, verifyPassword } from "@/lib/auth/password";
import { loadSessionKey } from "@/lib/auth/session";

const FAST = { N: 1 << 10, r: 8, p: 1 }; // tests only: real hashes use the stronger default

describe("passwords", () => {
  it("hashes with scrypt and verifies only the right password", async () => {
    const hash = await hashPassword("correct horse", FAST);
    expect(hash).toMatch(/^scrypt:1024:8:1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(await verifyPassword({ kind: "scrypt", hash }, "correct horse")).toBe(true);
    expect(await verifyPassword({ kind: "scrypt", hash }, "correct hors")).toBe(false);
    expect(await hashPassword("correct horse", FAST)).not.toBe(hash); // salted
  });
  it("never matches a malformed or hostile hash", async () => {
    expect(parseScryptHash("scrypt:1000:8:1:c2FsdHNhbHQ=:a2V5a2V5a2V5a2V5a2V5")).toBeNull(); // N not a power of 2
    expect(parseScryptHash(`scrypt:${2 ** 24}:8:1:c2FsdHNhbHQ=:a2V5a2V5a2V5a2V5a2V5`)).toBeNull(); // gigabytes
    expect(await verifyPassword({ kind: "scrypt", hash: "scrypt:garbage" }, "")).toBe(false);
  });
  it("compares clear-text passwords (env or demo) by value, through one scrypt like a hash", async () => {
    expect(await verifyPassword({ kind: "plain", value: "pw", source: "env" }, "pw")).toBe(true);
    expect(await verifyPassword({ kind: "plain", value: "pw", source: "env" }, "pw ")).toBe(false);
    expect(await verifyPassword({ kind: "plain", value: "pw", source: "env" }, "")).toBe(false);
  });
});

describe("session key", () => {
  it("generates one key per data dir, 0600, stable across loads; the env secret wins", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stepwatch-key-"));
    try {
      const db = path.join(dir, "sub", "stepwatch.db");
      const a = loadSessionKey(db, {});
      const b = loadSessionKey(db, {});
      expect(a.equals(b)).toBe(true);
      expect(a.length).toBe(32);
      expect(fs.statSync(path.join(dir, "sub", "session.key")).mode & 0o777).toBe(0o600);
      expect(loadSessionKey(db, { STEPWATCH_SESSION_SECRET: "a-long-enough-secret" }).toString()).toBe("a-long-enough-secret");
      expect(() => loadSessionKey(db, { STEPWATCH_SESSION_SECRET: "short" })).toThrow(/at least 16/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

