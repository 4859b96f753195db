/**
 * A real PostgreSQL 15 for the replica tests and `npm run demo:replicas`, started by them: Debian's `initdb` and
 * `pg_ctl` run as the `postgres` user (PostgreSQL refuses root) into a temporary folder, listening on
 * 127.0.0.1 on a free port, with a password-protected role and database. `.ci/run` installs the
 * package when missing (scripts/ensure-postgres.sh); a missing one fails loudly, never skips.
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../sim/free-port";

export const PG_BIN = process.env.STEPWATCH_PG_BIN ?? "/usr/lib/postgresql/15/bin";

export interface TestPostgres {
  url: string;
  port: number;
  dir: string;
  /** A URL for the same server with the wrong password (bad credentials). */
  badPasswordUrl: string;
  /** Stops the server fast (`pg_ctl -m immediate`: the database "goes away"). */
  stop(): void;
  /** Starts it again on the same port and folder. */
  start(): void;
  /** Stops it and removes its folder. */
  destroy(): void;
}

function uidOf(user: string): { uid: number; gid: number } {
  const uid = Number(execFileSync("id", ["-u", user]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", user]).toString().trim());
  return { uid, gid };
}

/** Runs a PostgreSQL program as the postgres user (the tests run as root on the project's machines). */
function asPostgres(bin: string, args: string[]): string {
  const program = path.join(PG_BIN, bin);
  if (process.getuid?.() === 0) return execFileSync("runuser", ["-u", "postgres", "--", program, ...args], { stdio: "pipe", timeout: 60_000 }).toString();
  return execFileSync(program, args, { stdio: "pipe", timeout: 60_000 }).toString();
}

export async function startPostgres(): Promise<TestPostgres> {
  if (!existsSync(path.join(PG_BIN, "initdb"))) {
    throw new Error(`PostgreSQL 15 is not installed at ${PG_BIN}: run scripts/ensure-postgres.sh (Debian's postgresql-15), or set STEPWATCH_PG_BIN`);
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "stepwatch-pg-"));
  const data = path.join(dir, "data");
  const pwfile = path.join(dir, "pw");
  const password = "stepwatch-test-password";
  writeFileSync(pwfile, password + "\n");
  if (process.getuid?.() === 0) {
    const { uid, gid } = uidOf("postgres");
    chownSync(dir, uid, gid);
    chownSync(pwfile, uid, gid);
  }
  asPostgres("initdb", ["-D", data, "-U", "stepwatch", "--pwfile", pwfile, "-A", "scram-sha-256", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  const start = () => {
    asPostgres("pg_ctl", [
      "-D", data, "-w", "-t", "30", "-l", path.join(dir, "log"),
      "-o", `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c max_connections=60`,
      "start",
    ]);
  };
  const stop = () => {
    try {
      asPostgres("pg_ctl", ["-D", data, "-m", "immediate", "-w", "-t", "30", "stop"]);
    } catch {
      // already stopped
    }
  };
  start();
  const url = `postgres://stepwatch:${password}@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    dir,
    badPasswordUrl: `postgres://stepwatch:wrong@127.0.0.1:${port}/postgres`,
    stop,
    start,
    destroy() {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
