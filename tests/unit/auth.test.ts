import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { hashPassword, parseScryptHash, verifyPassword } from "@/lib/auth/password";
import { loadSessionKey, signSession, verifySession } from "@/lib/auth/session";
import { SignInThrottle, failureDelayMs, throttleKey } from "@/lib/auth/throttle";
import { signIn } from "@/lib/auth/signin";
import { isForeignOrigin } from "@/lib/auth/origin";
import { DomainError } from "@/lib/errors";

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
  it("compares clear-text passwords (env or demo) by value", async () => {
    expect(await verifyPassword({ kind: "plain", value: "pw", source: "env" }, "pw")).toBe(true);
    expect(await verifyPassword({ kind: "plain", value: "pw", source: "env" }, "pw ")).toBe(false);
    expect(await verifyPassword({ kind: "plain", value: "pw", source: "env" }, "")).toBe(false);
  });
});

describe("sessions", () => {
  const key = Buffer.alloc(32, 7);
  it("round-trips, expires, and rejects tampering or another key", () => {
    const token = signSession({ name: "ana", expiresAt: 10_000 }, key);
    expect(verifySession(token, key, 9_999)).toEqual({ name: "ana", expiresAt: 10_000 });
    expect(verifySession(token, key, 10_000)).toBeNull();
    expect(verifySession(token, Buffer.alloc(32, 8), 0)).toBeNull();
    const forged = Buffer.from(JSON.stringify({ n: "root", e: 10_000 })).toString("base64url") + token.slice(token.indexOf("."));
    expect(verifySession(forged, key, 0)).toBeNull();
    expect(verifySession("", key, 0)).toBeNull();
    expect(verifySession("abc", key, 0)).toBeNull();
  });
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

describe("sign-in throttle", () => {
  it("refuses a name+address after 5 failures in the window, until the oldest leaves it", () => {
    const t = new SignInThrottle({ maxFailures: 5, windowMs: 60_000, maxKeys: 100 });
    const k = throttleKey("ana", "10.0.0.1");
    for (let i = 0; i < 5; i++) {
      expect(t.retryAfterMs(k, i * 1000)).toBeNull();
      t.fail(k, i * 1000);
    }
    expect(t.retryAfterMs(k, 5_000)).toBe(55_000);
    expect(t.retryAfterMs(throttleKey("ana", "10.0.0.2"), 5_000)).toBeNull(); // another address
    expect(t.retryAfterMs(k, 60_000)).toBeNull(); // the first failure left the window
  });
  it("keeps at most maxKeys keys", () => {
    const t = new SignInThrottle({ maxFailures: 1, windowMs: 60_000, maxKeys: 2 });
    t.fail("a", 0);
    t.fail("b", 0);
    t.fail("c", 0);
    expect(t.retryAfterMs("a", 1)).toBeNull();
    expect(t.retryAfterMs("c", 1)).not.toBeNull();
  });
  it("answers failures later the more there are, capped", () => {
    expect(failureDelayMs(1)).toBeLessThan(failureDelayMs(3));
    expect(failureDelayMs(100)).toBe(3_000);
  });
});

describe("signIn", () => {
  const key = Buffer.alloc(32, 1);
  it("signs in, slows and then rate-limits failures", async () => {
    const hash = await hashPassword("s3cret", FAST);
    const slept: number[] = [];
    const deps = {
      operators: [{ name: "ana", password: { kind: "scrypt" as const, hash } }],
      throttle: new SignInThrottle({ maxFailures: 2, windowMs: 60_000, maxKeys: 10 }),
      key,
      sleep: async (ms: number) => void slept.push(ms),
    };
    const ok = await signIn({ name: "ana", password: "s3cret", clientAddress: "ip", now: 0 }, deps);
    expect(verifySession(ok.token, key, 1)?.name).toBe("ana");
    const codeOf = (p: Promise<unknown>) => p.then(() => "ok", (e: DomainError) => e.code);
    expect(await codeOf(signIn({ name: "ana", password: "nope", clientAddress: "ip", now: 1 }, deps))).toBe("unauthenticated");
    expect(await codeOf(signIn({ name: "bob", password: "nope", clientAddress: "ip", now: 1 }, deps))).toBe("unauthenticated");
    expect(await codeOf(signIn({ name: "ana", password: "nope", clientAddress: "ip", now: 2 }, deps))).toBe("unauthenticated");
    expect(slept).toEqual([failureDelayMs(1), failureDelayMs(1), failureDelayMs(2)]);
    // Locked now, even with the right password.
    expect(await codeOf(signIn({ name: "ana", password: "s3cret", clientAddress: "ip", now: 3 }, deps))).toBe("rate-limited");
  });
});

describe("isForeignOrigin", () => {
  it("allows no Origin and our own, refuses others", () => {
    expect(isForeignOrigin(null, "127.0.0.1:3000")).toBe(false);
    expect(isForeignOrigin("http://127.0.0.1:3000", "127.0.0.1:3000")).toBe(false);
    expect(isForeignOrigin("http://evil.example", "127.0.0.1:3000")).toBe(true);
    expect(isForeignOrigin("http://127.0.0.1:3001", "127.0.0.1:3000")).toBe(true);
    expect(isForeignOrigin("null", "127.0.0.1:3000")).toBe(true);
    expect(isForeignOrigin("http://127.0.0.1:3000", null)).toBe(true);
  });
});
