/**
 * Replicas on a real PostgreSQL 15 (started here): two and three real app processes (`next start`)
 * with one config and one database, watching real simulators. One leads at a time (the lease,
 * db/pg/lease.ts); `kill -9` of the leader hands the lead to another within the lease plus a poll;
 * a database that goes away takes the lead from everyone, the dashboards keep answering, and a
 * leader is back once it returns. The lease is 2 s here (STEPWATCH_LEASE_SECONDS) to keep the file
 * short; every wait is bounded and no assertion is about how long something took.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetResponse } from "@/lib/api/types";
import type { ClusterView } from "@/lib/core/cluster";
import { startSimulator, type Simulator } from "@/sim/server";
import { startPostgres, type TestPostgres } from "../support/postgres";
import { spawnApp } from "./app-support";
import { assertBuilt, getJson, killApp, startApp, waitFor, type RunningApp } from "./faults-support";

const LEASE_SECONDS = 2;

let pg: TestPostgres;
let dir: string;
let env: Record<string, string>;
const sims: Simulator[] = [];
const apps: RunningApp[] = [];

type ClusterAnswer = ClusterView & { answeredBy: string };

async function start(id: string): Promise<RunningApp> {
  const a = await startApp({ ...env, STEPWATCH_REPLICA_ID: id });
  apps.push(a);
  return a;
}

async function cluster(a: RunningApp): Promise<ClusterAnswer | null> {
  const r = await getJson<ClusterAnswer>(`${a.url}/api/cluster`);
  return r?.status === 200 ? r.body : null;
}

/** stepwatch_leader of one replica: 1 while it leads, by its own judgement; null when it does not answer. */
async function leading(a: RunningApp): Promise<number | null> {
  try {
    const text = await (await fetch(`${a.url}/metrics`, { signal: AbortSignal.timeout(3000) })).text();
    const m = /^stepwatch_leader(?:\{[^}]*\})? (\d)/m.exec(text);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Samples every live replica's own view until `until` holds, failing at once if two lead at one sample. */
async function watchLeaders(live: RunningApp[], until: (flags: Array<number | null>) => boolean, what: string, timeoutMs = 30_000): Promise<Array<number | null>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const flags = await Promise.all(live.map(leading));
    expect(flags.filter((f) => f === 1).length, `two replicas lead at once: ${JSON.stringify(flags)}`).toBeLessThanOrEqual(1);
    if (until(flags)) return flags;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(flags)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

beforeAll(async () => {
  assertBuilt();
  pg = await startPostgres();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-replicas-"));
  for (let i = 0; i < 2; i++) sims.push(await startSimulator({ weightsLoadSeconds: 0 }));
  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 5,
      backends: sims.map((s, i) => ({ id: `gpu-${i}`, url: s.url })),
    }),
  );
  env = {
    STEPWATCH_CONFIG: configPath,
    STEPWATCH_DATABASE_URL: pg.url,
    STEPWATCH_SESSION_SECRET: "replicas-test-session-secret-0123456789",
    STEPWATCH_LEASE_SECONDS: String(LEASE_SECONDS),
    // Nothing of the SQLite default: a replica that wrote the file instead would be caught below.
    STEPWATCH_DB: path.join(dir, "must-not-exist", "stepwatch.db"),
  };
}, 180_000);

afterAll(async () => {
  await Promise.allSettled(apps.map((a) => a.stop()));
  await Promise.allSettled(sims.map((s) => s.close()));
  pg?.destroy();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("replicas on PostgreSQL", () => {
  it("two replicas: one leads, both serve the fleet and name who leads; kill -9 of the leader hands the lead over", async () => {
    const a = await start("replica-a");
    const b = await start("replica-b");
    const flags = await watchLeaders([a, b], (f) => f.filter((x) => x === 1).length === 1 && f.every((x) => x !== null), "one leader of two");
    const [leader, standby] = flags[0] === 1 ? [a, b] : [b, a];

    const views = await waitFor("both replicas seen by both", async () => {
      const vs = await Promise.all([cluster(a), cluster(b)]);
      return vs.every((v) => v && v.replicas.length === 2 && v.leader) ? (vs as ClusterAnswer[]) : null;
    });
    expect(views.map((v) => v.answeredBy).sort()).toEqual(["replica-a", "replica-b"]);
    expect(views[0].leader!.id).toBe(views[1].leader!.id);
    const before = views[0].leader!;
    expect(before.id).toBe(leader === a ? "replica-a" : "replica-b");
    expect(views[0].replicas.filter((r) => r.leader).map((r) => r.id)).toEqual([before.id]);

    // Each page's top bar says which replica answered and who leads.
    const idOf = (r: RunningApp) => (r === a ? "replica-a" : "replica-b");
    const badge = async (r: RunningApp) => /data-testid="replica"[^>]*>([^<]*)</.exec(await (await fetch(`${r.url}/restarts`)).text())?.[1];
    expect(await badge(leader)).toBe(`${idOf(leader)} (leader)`);
    expect(await badge(standby)).toBe(`${idOf(standby)} · leader ${idOf(leader)}`);

    // Both serve the dashboard's data, the standby included.
    for (const r of [leader, standby]) {
      const f = await waitFor("the fleet judged", async () => {
        const body = (await getJson<FleetResponse>(`${r.url}/api/fleet`))?.body;
        return body?.backends.length === 2 && body.backends.every((x) => x.state === "idle") ? body : null;
      });
      expect(f.backends.map((x) => x.id).sort()).toEqual(["gpu-0", "gpu-1"]);
    }
    expect(fs.existsSync(path.join(dir, "must-not-exist"))).toBe(false);

    await killApp(leader);
    apps.splice(apps.indexOf(leader), 1);
    await watchLeaders([standby], (f) => f[0] === 1, "the standby to lead");
    const after = await waitFor("the new leader in /api/cluster", async () => {
      const v = await cluster(standby);
      return v?.leader?.id === (standby === a ? "replica-a" : "replica-b") ? v.leader : null;
    });
    expect(after.epoch).toBeGreaterThan(before.epoch);
    await standby.stop();
    apps.splice(apps.indexOf(standby), 1);
  }, 180_000);

  it("three replicas: never two leaders while the leader is killed; a database that goes away leaves nobody acting and the dashboards serving", async () => {
    const rs = [await start("r1"), await start("r2"), await start("r3")];
    const flags = await watchLeaders(rs, (f) => f.filter((x) => x === 1).length === 1 && f.every((x) => x !== null), "one leader of three");
    const leader = rs[flags.indexOf(1)];
    const rest = rs.filter((r) => r !== leader);
    await killApp(leader);
    apps.splice(apps.indexOf(leader), 1);
    await watchLeaders(rest, (f) => f.includes(1), "one of the two left to lead");

    pg.stop();
    // Nobody acts without the database: each replica's own clock ends its grant.
    await watchLeaders(rest, (f) => f.every((x) => x === 0), "no replica leading without the database");
    for (const r of rest) {
      const fleet = await getJson<FleetResponse>(`${r.url}/api/fleet`);
      expect(fleet?.status).toBe(200);
      expect(fleet!.body.backends.map((x) => x.id).sort()).toEqual(["gpu-0", "gpu-1"]);
    }
    pg.start();
    await watchLeaders(rest, (f) => f.includes(1), "a leader again once the database is back");
  }, 180_000);

  it("a wrong URL, a refused connection, bad credentials or no session secret stop the start with the setting named, never the password", async () => {
    const cases: Array<{ env: Record<string, string>; says: RegExp }> = [
      { env: { STEPWATCH_DATABASE_URL: "mysql://stepwatch@127.0.0.1/x" }, says: /STEPWATCH_DATABASE_URL must start with postgres:\/\// },
      { env: { STEPWATCH_DATABASE_URL: pg.badPasswordUrl }, says: /STEPWATCH_DATABASE_URL \(postgres:\/\/stepwatch:\*\*\*@127\.0\.0\.1.*password authentication failed/ },
      { env: { STEPWATCH_DATABASE_URL: "postgres://stepwatch:hunter2-secret@127.0.0.1:1/postgres" }, says: /STEPWATCH_DATABASE_URL \(postgres:\/\/stepwatch:\*\*\*@127\.0\.0\.1:1\/postgres\).*ECONNREFUSED/ },
      { env: { STEPWATCH_SESSION_SECRET: "" }, says: /set STEPWATCH_SESSION_SECRET, the same on every replica/ },
    ];
    for (const c of cases) {
      const a = await spawnApp({ ...env, ...c.env });
      const code = await Promise.race([a.exited, new Promise<string>((r) => setTimeout(() => r("still running"), 60_000))]);
      const out = a.output();
      if (code === "still running") await a.stop();
      expect(code, out).toBe(1);
      expect(out).toMatch(c.says);
      expect(out).not.toContain("hunter2-secret");
      expect(out).not.toContain("stepwatch-test-password");
    }
  }, 180_000);
});
