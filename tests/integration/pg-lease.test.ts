/**
 * The leader lease on a real PostgreSQL 15 (started here): one leader at a time, by the database's
 * clock; a deposed leader's late write fails; a replica that loses the database stops acting before
 * anyone else can lead; bad settings are named. Leases are short (600-900 ms) to keep the file quick;
 * every wait is bounded and no assertion is about how long something took.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { openPg, type PgHandle } from "../../db/pg/client";
import { acquireLease, currentLease, fenced, LeaseLostError } from "../../db/pg/lease";
import { keepLease, replicaIdFrom, soleLeader } from "../../lib/cluster/leadership";
import { startPostgres, type TestPostgres } from "../support/postgres";
import { waitFor } from "./sim-support";

let pg: TestPostgres;
const handles: PgHandle[] = [];
const open = async () => {
  const h = await openPg(pg.url, { timeoutMs: 2000 });
  handles.push(h);
  return h;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  pg = await startPostgres();
  const h = await open();
  await h.db.execute(sql`CREATE TABLE IF NOT EXISTS actions (id serial PRIMARY KEY, by text NOT NULL, epoch bigint NOT NULL)`);
});

afterAll(async () => {
  for (const h of handles) await h.close().catch(() => {});
  pg?.destroy();
});

describe("opening the database", () => {
  it("names the setting for a URL that is not postgres://, a refused port and bad credentials, never the password", async () => {
    await expect(openPg("mysql://a:b@127.0.0.1/x", { setting: "database.url" })).rejects.toThrow(/database\.url must start with postgres:\/\//);
    await expect(openPg("not a url")).rejects.toThrow(/STEPWATCH_DATABASE_URL is not a URL/);
    const refused = `postgres://stepwatch:secret-pw@127.0.0.1:${pg.port + 1}/postgres`;
    const e1 = await openPg(refused, { timeoutMs: 2000 }).catch((e: Error) => e);
    expect((e1 as Error).message).toMatch(/STEPWATCH_DATABASE_URL \(postgres:\/\/stepwatch:\*\*\*@127\.0\.0\.1:\d+\/postgres\): cannot open the database: .*ECONNREFUSED/);
    const e2 = await openPg(pg.badPasswordUrl, { timeoutMs: 2000 }).catch((e: Error) => e);
    expect((e2 as Error).message).toMatch(/password authentication failed/);
    for (const e of [e1, e2]) expect((e as Error).message).not.toMatch(/secret-pw|:wrong@/);
  });

  it("migrates twice without harm (a second replica opening the same database)", async () => {
    const a = await open();
    const b = await open();
    expect(await currentLease(a.db)).toEqual(await currentLease(b.db));
  });
});

describe("the lease", () => {
  it("is granted to one holder at a time; the epoch stays while renewed and grows when it changes hands", async () => {
    const { db } = await open();
    await db.execute(sql`DELETE FROM cluster_lease`);
    const a1 = await acquireLease(db, "a", 600);
    expect(a1).toMatchObject({ holder: "a", epoch: 1 });
    expect(a1!.expiresAt.getTime() - a1!.dbNow.getTime()).toBe(600);
    expect(await acquireLease(db, "b", 600)).toBeNull();
    const a2 = await acquireLease(db, "a", 600);
    expect(a2?.epoch).toBe(1);
    const b1 = await waitFor("b to take the lapsed lease", () => acquireLease(db, "b", 600), 5000, 50);
    expect(b1).toMatchObject({ holder: "b", epoch: 2 });
    // a comes back after it lapsed: a new epoch, even for the same holder
    const a3 = await waitFor("a to take it back", () => acquireLease(db, "a", 600), 5000, 50);
    expect(a3?.epoch).toBe(3);
  });

  it("a deposed leader's late write fails and writes nothing; the holder's fenced write lands", async () => {
    const { db } = await open();
    await db.execute(sql`DELETE FROM cluster_lease`);
    const a = (await acquireLease(db, "a", 500))!;
    await fenced(db, "a", a.epoch, (tx) => tx.execute(sql`INSERT INTO actions (by, epoch) VALUES ('a', ${a.epoch})`));
    const b = (await waitFor("b to take over", () => acquireLease(db, "b", 5000), 5000, 50))!;
    const late = await fenced(db, "a", a.epoch, (tx) => tx.execute(sql`INSERT INTO actions (by, epoch) VALUES ('a-late', ${a.epoch})`)).catch((e) => e);
    expect(late).toBeInstanceOf(LeaseLostError);
    await fenced(db, "b", b.epoch, (tx) => tx.execute(sql`INSERT INTO actions (by, epoch) VALUES ('b', ${b.epoch})`));
    const { rows } = await db.execute<{ by: string }>(sql`SELECT by FROM actions ORDER BY id`);
    expect(rows.map((r) => r.by)).toEqual(expect.arrayContaining(["a", "b"]));
    expect(rows.map((r) => r.by)).not.toContain("a-late");
  });

  it("a takeover waits for the leader's fenced transaction that began in time (no write lands after a deposition)", async () => {
    const { db } = await open();
    const other = await open();
    await db.execute(sql`DELETE FROM cluster_lease`);
    const a = (await acquireLease(db, "a", 400))!;
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const write = fenced(db, "a", a.epoch, async (tx) => {
      await held; // the lease lapses while the transaction is open
      await tx.execute(sql`INSERT INTO actions (by, epoch) VALUES ('a-in-time', ${a.epoch})`);
      order.push("a committed");
    });
    await sleep(600); // past expiresAt by the database's clock
    const takeover = acquireLease(other.db, "b", 5000).then((g) => {
      order.push("b took over");
      return g;
    });
    await sleep(300);
    expect(order).toEqual([]); // b is waiting on the row a holds
    release();
    await write;
    const b = await takeover;
    expect(b).toMatchObject({ holder: "b", epoch: a.epoch + 1 });
    expect(order).toEqual(["a committed", "b took over"]);
  });
});

describe("keepLease: replicas", () => {
  it("two replicas: exactly one leads; when it stops renewing (its process died) the other leads, never both at once", async () => {
    const a = await open();
    const b = await open();
    await a.db.execute(sql`DELETE FROM cluster_lease`);
    const ra = keepLease(a.db, "replica-a", { leaseMs: 900, pollMs: 150 });
    await waitFor("a to lead", () => ra.isLeader(), 5000);
    const rb = keepLease(b.db, "replica-b", { leaseMs: 900, pollMs: 150 });
    await rb.tick();
    expect(ra.isLeader()).toBe(true);
    expect(rb.isLeader()).toBe(false);
    const view = await rb.view();
    expect(view.leader).toMatchObject({ id: "replica-a", epoch: ra.epoch() });
    expect(view.replicas.map((r) => [r.id, r.leader]).sort()).toEqual([["replica-a", true], ["replica-b", false]]);

    // "kill -9": a's connections die and it never renews (nor releases)
    await a.pool.end();
    let both = 0;
    const watch = setInterval(() => {
      if (ra.isLeader() && rb.isLeader()) both++;
    }, 10);
    try {
      await waitFor("a to stop acting on its own clock", () => !ra.isLeader(), 5000);
      await waitFor("b to lead", () => rb.isLeader(), 5000);
    } finally {
      clearInterval(watch);
    }
    expect(both).toBe(0);
    expect(rb.epoch()).toBeGreaterThan(view.leader!.epoch);
    await ra.stop();
    await rb.stop();
    // a clean stop releases the lease: nobody leads until the next replica asks
    expect((await b.db.execute(sql`SELECT 1 FROM cluster_lease WHERE expires_at > now()`)).rows).toEqual([]);
  });

  it("a replica whose database goes away stops acting within the lease, and leads again once it is back", async () => {
    const h = await open();
    await h.db.execute(sql`DELETE FROM cluster_lease`);
    const changes: string[] = [];
    const r = keepLease(h.db, "replica-c", { leaseMs: 900, pollMs: 150, onChange: (leading, why) => changes.push(`${leading}: ${why}`) });
    try {
      await waitFor("c to lead", () => r.isLeader(), 5000);
      pg.stop();
      await waitFor("c to stop acting", () => !r.isLeader(), 5000);
      expect(changes.at(-1)).toMatch(/^false: (cannot reach the database|the lease ran out)/);
      pg.start();
      await waitFor("c to lead again", () => r.isLeader(), 15_000, 50);
    } finally {
      await r.stop();
    }
  });

  it("with SQLite there is one replica and it always leads; the id is STEPWATCH_REPLICA_ID, else host and pid", async () => {
    expect(replicaIdFrom({ STEPWATCH_REPLICA_ID: "east-1" })).toBe("east-1");
    expect(replicaIdFrom({})).toMatch(new RegExp(`:${process.pid}$`));
    const sole = soleLeader("only");
    expect(sole.isLeader()).toBe(true);
    const v = await sole.view();
    expect(v.leader).toMatchObject({ id: "only", epoch: 1, expiresAt: null });
    expect(v.replicas).toEqual([expect.objectContaining({ id: "only", leader: true })]);
  });
});
