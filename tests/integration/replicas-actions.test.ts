/**
 * What only the leader does, with two real app processes (`next start`) on a real PostgreSQL 15
 * (started here), real simulators, a real restart command and a real webhook receiver: an
 * operator's restart asked on the standby is run once, by the leader; `kill -9` of the leader
 * leaves a page it could not deliver to the next leader, which sends it with the same id and pages
 * nothing twice; a leader killed while its restart command runs leaves the restart `unknown` to the
 * next one, never run again. Every wait is bounded; nothing asserts how long anything took.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RestartEventDTO } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { startPostgres, type TestPostgres } from "../support/postgres";
import { startHttpReceiver, type HttpReceiver } from "../support/receivers";
import { askRestart, assertBuilt, getJson, killApp, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

let pg: TestPostgres;
let dir: string;
let env: Record<string, string>;
let hook: HttpReceiver;
const sims: Simulator[] = [];
const apps: RunningApp[] = [];
const strayPids: number[] = [];
const PASSWORD = "replicas-actions-pw";

beforeAll(async () => {
  assertBuilt();
  pg = await startPostgres();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-replica-actions-"));
  hook = await startHttpReceiver();
  for (let i = 0; i < 3; i++) sims.push(await startSimulator({ weightsLoadSeconds: 0 }));
  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      startupGraceSeconds: 0,
      operators: [{ name: "olga", password: "env:SW_REPLICA_PW" }],
      backends: [
        { id: "gpu-0", url: sims[0].url, restart: { command: ["/bin/sh", "-c", `echo ran >> '${path.join(dir, "restarted.txt")}'`] } },
        { id: "gpu-1", url: sims[1].url },
        // Runs past the leader's kill: its pid first, so the test can end it.
        { id: "gpu-2", url: sims[2].url, restart: { timeoutSeconds: 120, command: ["/bin/sh", "-c", `echo $$ >> '${path.join(dir, "slow.txt")}'; exec sleep 100`] } },
      ],
      notifications: { groupWaitSeconds: 0, channels: [{ id: "hook", type: "webhook", url: `${hook.url}/hook` }] },
    }),
  );
  env = {
    STEPWATCH_CONFIG: configPath,
    STEPWATCH_DATABASE_URL: pg.url,
    STEPWATCH_SESSION_SECRET: "replica-actions-session-secret-0123456789",
    STEPWATCH_LEASE_SECONDS: "2",
    SW_REPLICA_PW: PASSWORD,
  };
}, 180_000);

afterAll(async () => {
  for (const pid of strayPids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
  await Promise.allSettled(apps.map((a) => a.stop()));
  await Promise.allSettled(sims.map((s) => s.close()));
  await hook?.close();
  pg?.destroy();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function start(id: string): Promise<RunningApp> {
  const a = await startApp({ ...env, STEPWATCH_REPLICA_ID: id });
  apps.push(a);
  return a;
}

/** Two replicas by id; which leads, as they say (GET /api/cluster). */
async function leaderOf(rs: Record<string, RunningApp>): Promise<{ leader: RunningApp; standby: RunningApp; id: string }> {
  const ids = Object.keys(rs);
  const id = await waitFor(
    "one of them leading",
    async () => {
      const lead = (await getJson<{ leader: { id: string } | null }>(`${rs[ids[0]].url}/api/cluster`))?.body.leader?.id;
      return lead && ids.includes(lead) ? lead : null;
    },
    30_000,
  );
  return { leader: rs[id], standby: rs[ids.find((x) => x !== id)!], id };
}

async function stopApp(a: RunningApp): Promise<void> {
  apps.splice(apps.indexOf(a), 1);
  await a.stop();
}

const lines = (name: string) => {
  const f = path.join(dir, name);
  return fs.existsSync(f) ? fs.readFileSync(f, "utf8").trim().split("\n") : [];
};
const ranLines = () => lines("restarted.txt").length;
const downPages = () => hook.received.filter((r) => r.body && JSON.parse(r.body).event === "down" && JSON.parse(r.body).backendId === "gpu-1");
/** A few of a replica's polls: its fleet's newest reading moves on. */
async function polls(a: RunningApp, n: number): Promise<void> {
  const at = async () => (await getJson<{ backends: Array<{ id: string; lastReadAt: number | null }> }>(`${a.url}/api/fleet`))?.body.backends.find((b) => b.id === "gpu-0")?.lastReadAt ?? null;
  for (let i = 0; i < n; i++) {
    const before = await at();
    await waitFor(`poll ${i + 1} of ${n}`, async () => (await at()) !== before, 15_000, 100);
  }
}

describe("replicas on PostgreSQL: only the leader acts", () => {
  it("a restart asked on the standby is written there and run once, by the leader; a kill -9 of the leader leaves its undelivered page to the next, same id, paged once", async () => {
    const { leader, standby, id: leaderId } = await leaderOf({ "replica-a": await start("replica-a"), "replica-b": await start("replica-b") });

    const cookie = await signIn(standby, "olga", PASSWORD);
    const r = await askRestart(standby, cookie, "gpu-0");
    expect(r.status, r.text).toBe(202);
    const asked = (r.json as { event: RestartEventDTO }).event;
    expect(asked.evidenceId).toBeNull(); // the leader captures it, not the replica asked
    const done = await waitFor(
      "the leader ran it",
      async () => (await getJson<RestartEventDTO[]>(`${standby.url}/api/restarts?backend=gpu-0`))?.body.find((e) => e.id === asked.id && e.commandFinishedAt !== null),
      30_000,
    );
    expect(done).toMatchObject({ startedBy: leaderId, commandExitCode: 0 });
    await polls(standby, 3);
    expect(ranLines()).toBe(1);

    // The receiver is down while the leader lives: its page of gpu-1 stays pending.
    hook.failFirst = 1_000_000;
    await sims[1].crash();
    await waitFor("the leader's page tried", () => downPages().length > 0, 30_000);
    const id = downPages()[0].headers["x-stepwatch-notification-id"];
    await killApp(leader);
    apps.splice(apps.indexOf(leader), 1);
    hook.failFirst = 0;
    const sent = await waitFor("the new leader's delivery", () => downPages().find((p) => p.status === 200), 60_000);
    expect(sent.headers["x-stepwatch-notification-id"]).toBe(id);
    await polls(standby, 3);
    expect(downPages().filter((p) => p.status === 200)).toHaveLength(1);
    expect(ranLines()).toBe(1);
    await stopApp(standby);
  }, 240_000);

  it("a leader killed while its restart command runs: the next leader resolves it outcome unknown and never runs it again", async () => {
    const { leader, standby, id: leaderId } = await leaderOf({ "replica-c": await start("replica-c"), "replica-d": await start("replica-d") });
    const cookie = await signIn(leader, "olga", PASSWORD);
    const r = await askRestart(leader, cookie, "gpu-2");
    expect(r.status, r.text).toBe(202);
    const eventId = (r.json as { event: RestartEventDTO }).event.id;
    await waitFor("the command running", () => lines("slow.txt").length === 1, 30_000);
    strayPids.push(Number(lines("slow.txt")[0]));
    await killApp(leader);
    apps.splice(apps.indexOf(leader), 1);
    const event = await waitFor(
      "the restart resolved by the next leader",
      async () => (await getJson<RestartEventDTO[]>(`${standby.url}/api/restarts?backend=gpu-2`))?.body.find((e) => e.id === eventId && e.outcome !== null),
      60_000,
    );
    expect(event).toMatchObject({ outcome: "unknown", startedBy: leaderId, commandFinishedAt: null, commandExitCode: null });
    expect(event.resolution).toMatch(/outcome unknown/);
    await polls(standby, 3);
    expect(lines("slow.txt")).toHaveLength(1);
    await stopApp(standby);
  }, 240_000);
});
