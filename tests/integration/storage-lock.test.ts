/**
 * Issue 31, item 6: another process holding SQLite's write lock must not stall the server.
 * better-sqlite3 waits on the event loop, so the wait is bounded by the connection's busy timeout
 * (db/client.ts BUSY_TIMEOUT_MS); past it a write fails at once and loses nothing. The lock is
 * held here by a second real connection to the same file (BEGIN IMMEDIATE), exactly what another
 * process does; it is held across the write, so a write that waited for it could never succeed.
 */
import Database from "better-sqlite3";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BUSY_TIMEOUT_MS, openDb } from "@/db/client";
import { type DbHandle } from "@/db/types";
import { lastTransition } from "@/db/queries/readings";
import { errorResponse } from "@/lib/api/respond";
import { WatchStore } from "@/lib/watcher/store";
import { reason } from "@/lib/core/types";

let dir: string;
let h: DbHandle;
let other: Database.Database;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-lock-"));
  h = openDb(path.join(dir, "s.db"));
  other = new Database(path.join(dir, "s.db"));
});

afterEach(() => {
  if (other.inTransaction) other.exec("ROLLBACK");
  other.close();
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("a write lock held by another connection", () => {
  it("the server's connection waits at most the busy timeout (tens of milliseconds, not seconds)", () => {
    expect(BUSY_TIMEOUT_MS).toBeLessThanOrEqual(100);
    expect(h.sqlite.pragma("busy_timeout", { simple: true })).toBe(BUSY_TIMEOUT_MS);
  });

  it("the watcher's flush fails at once while it is held, keeps its queue, and writes it all once it is released", () => {
    const logs: string[] = [];
    const store = new WatchStore(h.db, undefined, (m) => logs.push(m));
    store.enqueueTransition({ kind: "backend", targetId: "a", at: 5000, fromState: "busy", toState: "stuck", reasons: [reason("no-progress-stuck", "no progress")] });
    other.exec("BEGIN IMMEDIATE");
    expect(store.flush()).toBe(false);
    expect(store.storageError).toMatch(/database is locked/);
    expect(store.queued).toBe(1);
    other.exec("COMMIT");
    expect(store.flush()).toBe(true);
    expect(lastTransition(h.db, "backend", "a")?.toState).toBe("stuck");
    expect(store.storageError).toBeNull();
  });

  it("a route's write that meets the lock answers 503 with the reason, not 500", async () => {
    other.exec("BEGIN IMMEDIATE");
    let err: unknown;
    try {
      h.sqlite.prepare("INSERT INTO audit_log (at, actor_kind, action) VALUES (1, 'system', 'x')").run();
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe("SQLITE_BUSY");
    const res = errorResponse(err);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await res.json()).toEqual({ error: "unavailable", message: "the database cannot be used now (SQLITE_BUSY): try again shortly" });
  });
});
