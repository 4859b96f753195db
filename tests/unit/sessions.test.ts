import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { listAudit, recordAudit, sessionsOf } from "@/db/queries/auth";
import type { OperatorConfig } from "@/lib/config";
import { MAX_SESSIONS_PER_OPERATOR, SESSION_TTL_MS, createSession, endSessionByToken, resolveSession } from "@/lib/auth/session";

let dir: string;
let h: DbHandle;
const key = Buffer.alloc(32, 3);
const ana: OperatorConfig = { name: "ana", password: { kind: "plain", value: "pw", source: "env" }, role: "operator" };

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-sess-"));
  h = await openTestDb(path.join(dir, "t.db"));
});
afterEach(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("server-side sessions", () => {
  it("a token works until sign-out, then never again", () => {
    const { token, session } = createSession(h.db, { operator: ana, key, now: 1000, address: "10.0.0.1", userAgent: "t" });
    expect(resolveSession(h.db, token, { operators: [ana], key, now: 2000 })).toMatchObject({ name: "ana", expiresAt: 1000 + SESSION_TTL_MS, id: session.id });
    expect(endSessionByToken(h.db, token)).toBe(true);
    expect(resolveSession(h.db, token, { operators: [ana], key, now: 3000 })).toBeNull();
  });
  it("ends on a changed password, on removal from the config, and at the fixed expiry", () => {
    const a = createSession(h.db, { operator: ana, key, now: 0 });
    const changed: OperatorConfig = { name: "ana", password: { kind: "plain", value: "new", source: "env" }, role: "operator" };
    expect(resolveSession(h.db, a.token, { operators: [changed], key, now: 1 })).toBeNull();
    expect(resolveSession(h.db, a.token, { operators: [ana], key, now: 2 })).toBeNull(); // deleted, not just refused
    const b = createSession(h.db, { operator: ana, key, now: 0 });
    expect(resolveSession(h.db, b.token, { operators: [], key, now: 1 })).toBeNull();
    const c = createSession(h.db, { operator: ana, key, now: 0 });
    expect(resolveSession(h.db, c.token, { operators: [ana], key, now: SESSION_TTL_MS - 1 })).not.toBeNull();
    expect(resolveSession(h.db, c.token, { operators: [ana], key, now: SESSION_TTL_MS })).toBeNull();
  });
  it("refuses made-up tokens and keeps only the hash", () => {
    const { token } = createSession(h.db, { operator: ana, key, now: 0 });
    expect(resolveSession(h.db, "x".repeat(43), { operators: [ana], key, now: 1 })).toBeNull();
    expect(resolveSession(h.db, "", { operators: [ana], key, now: 1 })).toBeNull();
    const raw = JSON.stringify(h.sqlite.prepare("SELECT * FROM sessions").all());
    expect(raw).not.toContain(token);
  });
  it("keeps at most MAX_SESSIONS_PER_OPERATOR per operator (the oldest end)", () => {
    const first = createSession(h.db, { operator: ana, key, now: 0 });
    for (let i = 1; i <= MAX_SESSIONS_PER_OPERATOR; i++) createSession(h.db, { operator: ana, key, now: i });
    expect(sessionsOf(h.db, "ana", 100)).toHaveLength(MAX_SESSIONS_PER_OPERATOR);
    expect(resolveSession(h.db, first.token, { operators: [ana], key, now: 100 })).toBeNull();
  });
});

describe("audit log", () => {
  it("records, clips what a client sent, pages back by id", () => {
    recordAudit(h.db, { at: 1, actor: "n".repeat(5000), actorKind: "anonymous", action: "signin.failed", address: "10.0.0.1" });
    recordAudit(h.db, { at: 2, actor: "ana", actorKind: "operator", action: "signin.ok" });
    const rows = listAudit(h.db, { limit: 10 });
    expect(rows.map((r) => r.action)).toEqual(["signin.ok", "signin.failed"]);
    expect(rows[1].actor!.length).toBeLessThan(300);
    expect(listAudit(h.db, { limit: 10, before: rows[0].id }).map((r) => r.action)).toEqual(["signin.failed"]);
  });
});
