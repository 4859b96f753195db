/**
 * db/pg/sync-client.ts on a real PostgreSQL 15 (started here): what better-sqlite3's surface
 * promises that PostgreSQL does not give by itself. A transaction whose connection is lost and
 * replaced midway is never half written (the rest of it would otherwise run on the new connection
 * outside any transaction, and COMMIT there only warns); runMany writes many rows as few statements;
 * a unique index's refusal carries better-sqlite3's code. Every wait is bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgStore } from "../../db/pg/store";
import type { SyncPgClient } from "../../db/pg/sync-client";
import type { DbHandle } from "../../db/types";
import { startPostgres, type TestPostgres } from "../support/postgres";

let pg: TestPostgres;
let h: DbHandle;
let admin: DbHandle;
const client = () => h.sqlite as unknown as SyncPgClient;

/** Sleeps this thread (the client is synchronous: so is the test's body inside a transaction). */
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

beforeAll(async () => {
  pg = await startPostgres();
  h = await openPgStore(pg.url, { timeoutMs: 5000 });
  admin = await openPgStore(pg.url, { timeoutMs: 5000 });
  h.sqlite.exec("CREATE TABLE tx_probe (id bigint PRIMARY KEY, note text)");
});

afterAll(() => {
  h?.close();
  admin?.close();
  pg?.destroy();
});

describe("a transaction on the synchronous client", () => {
  it("is refused whole when its connection is replaced midway, and the next one runs", () => {
    const myPid = (h.sqlite.prepare("SELECT pg_backend_pid() AS pid").get() as { pid: number }).pid;
    const write = h.sqlite.transaction(() => {
      h.sqlite.prepare("INSERT INTO tx_probe (id, note) VALUES (?, ?)").run(1, "before the loss");
      admin.sqlite.prepare("SELECT pg_terminate_backend(?)").get(myPid);
      // Wait (bounded) until the thread has noticed and reconnected on its own.
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        pause(50);
        if (client().connected && (admin.sqlite.prepare("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE pid = ?").get(myPid) as { n: number }).n === 0) break;
      }
      h.sqlite.prepare("INSERT INTO tx_probe (id, note) VALUES (?, ?)").run(2, "after the loss");
    });
    expect(write).toThrow(/lost inside a transaction/);
    expect(h.sqlite.prepare("SELECT id FROM tx_probe ORDER BY id").all()).toEqual([]);
    // The client is usable again, in and out of transactions.
    h.sqlite.transaction(() => h.sqlite.prepare("INSERT INTO tx_probe (id, note) VALUES (?, ?)").run(3, "later"))();
    expect(h.sqlite.prepare("SELECT id FROM tx_probe ORDER BY id").pluck().all()).toEqual([3]);
  });
});

describe("runMany and errors", () => {
  it("writes every row once, across statements, and a unique refusal has better-sqlite3's code", () => {
    const insert = h.sqlite.prepare("INSERT INTO tx_probe (id, note) VALUES (?, ?)") as unknown as { runMany(rows: unknown[][]): { changes: number } };
    const rows = Array.from({ length: 40_000 }, (_, i) => [100 + i, `n${i}`]);
    expect(insert.runMany(rows).changes).toBe(rows.length);
    expect(h.sqlite.prepare("SELECT COUNT(*) AS n, MIN(id) AS lo, MAX(id) AS hi FROM tx_probe WHERE id >= 100").get()).toEqual({ n: 40_000, lo: 100, hi: 40_099 });
    expect(() => insert.runMany([[100, "again"]])).toThrow(expect.objectContaining({ code: "SQLITE_CONSTRAINT_UNIQUE", pgCode: "23505" }));
  });
});
