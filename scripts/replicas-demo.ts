/**
 * `npm run demo:replicas`: the demo fleet watched by two replicas sharing one PostgreSQL, on
 * http://localhost:3000 and :3001 (PORT and PORT+1). A PostgreSQL 15 of its own is started in a
 * temporary folder (Debian's postgresql-15: scripts/ensure-postgres.sh installs it), the demo fleet
 * once in this process (both replicas watch the same servers), then `next start` twice. Ctrl-C stops
 * everything and removes the folder. Kill the leader (`kill -9`, its pid is printed) and watch the
 * other take over on its dashboard or at /api/cluster.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startDemoFleet } from "../sim/demo";
import { startPostgres } from "./postgres";

const ROOT = path.resolve(__dirname, "..");
const NEXT_CLI = require.resolve("next/dist/bin/next", { paths: [ROOT] });

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, ".next", "BUILD_ID"))) throw new Error("no production build: run `npm run build` first (the npm script does)");
  const port = Number(process.env.PORT ?? 3000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stepwatch-replicas-"));
  const pg = await startPostgres();
  const demo = await startDemoFleet();
  const configPath = path.join(dir, "stepwatch.config.json");
  // The demo's operator signs in with "demo" as on `npm run demo`; a config file names passwords by variable.
  const config = { ...demo.config, operators: demo.config.operators.map((o) => ({ ...o, password: "env:STEPWATCH_DEMO_PASSWORD" })) };
  fs.writeFileSync(configPath, JSON.stringify(config, null, 2));
  const env = {
    ...process.env,
    NODE_ENV: "production" as const,
    NEXT_TELEMETRY_DISABLED: "1",
    STEPWATCH_CONFIG: configPath,
    STEPWATCH_DATABASE_URL: pg.url,
    STEPWATCH_SESSION_SECRET: randomBytes(24).toString("hex"),
    STEPWATCH_DEMO_PASSWORD: "demo",
  };
  const children: ChildProcess[] = [];
  let stopping = false;
  // Synchronous, first thing: Ctrl-C reaches npm too, and nothing may outlive this process (the
  // simulators are servers in it, gone with it). Run with `node --import tsx`, not tsx's CLI, whose
  // relay of Ctrl-C killed this process in the middle of this.
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const c of children) c.kill("SIGKILL");
    // PostgreSQL's immediate shutdown by signal (pg_ctl waits a second or more, and npm may kill
    // this process meanwhile), then its folder and ours.
    try {
      const pid = Number(fs.readFileSync(path.join(pg.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
      if (pid > 0) {
        process.kill(pid, "SIGQUIT");
        // Gone before its folder is (it writes there while it stops): a few hundred ms, bounded.
        const tick = new Int32Array(new SharedArrayBuffer(4));
        for (let i = 0; i < 50 && alive(pid); i++) Atomics.wait(tick, 0, 0, 50);
      }
    } catch {
      pg.stop();
    }
    for (const d of [pg.dir, dir]) {
      try {
        fs.rmSync(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
      } catch (e) {
        console.error(`stepwatch: could not remove ${d}: ${(e as Error).message}`);
      }
    }
    process.exit(code);
  };
  process.on("SIGINT", () => stop(0));
  process.on("SIGTERM", () => stop(0));
  process.on("SIGHUP", () => stop(0));
  for (const [i, id] of ["replica-a", "replica-b"].entries()) {
    const p = port + i;
    const child = spawn(process.execPath, [NEXT_CLI, "start", "-p", String(p)], { cwd: ROOT, env: { ...env, STEPWATCH_REPLICA_ID: id }, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    const prefix = (chunk: Buffer) => chunk.toString().replace(/^(?=.)/gm, `[${id}] `);
    child.stdout!.on("data", (c: Buffer) => process.stdout.write(prefix(c)));
    child.stderr!.on("data", (c: Buffer) => process.stderr.write(prefix(c)));
    child.on("exit", (code, signal) => console.log(`[${id}] exited (${signal ?? code}); the other replica leads within the lease (15 s)`));
    console.log(`${id}: http://localhost:${p} (pid ${child.pid})`);
  }
  console.log(`PostgreSQL: ${pg.url.replace(/:[^:@/]*@/, ":***@")} (folder ${pg.dir}); who leads: http://localhost:${port}/api/cluster; Ctrl-C stops all`);
}

main().catch((e) => {
  console.error(`stepwatch: ${(e as Error).message}`);
  process.exit(1);
});
