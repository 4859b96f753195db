/**
 * Storage faults under the real app (`next start`): the SQLite file stops taking writes while the
 * app runs, then takes them again.
 * - locked by another writer (portable: another connection holds BEGIN EXCLUSIVE);
 * - the disk is full (the DB lives on a small tmpfs that a filler file fills; mounting it needs
 *   root, as the test suite has on the project's machines and in CI).
 * Each time: polling and the live view go on, /api/fleet shows storageError, a restart cannot be
 * recorded and so is refused with a reason (nothing runs unrecorded), writes resume afterwards with
 * what was queued, and nothing stored before is damaged (integrity_check, earlier rows intact).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { toRows } from "@/lib/core/history";
import type { FleetResponse, HistoryResponse } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { askRestart, assertBuilt, getJson, nodeScript, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

interface Fault {
  name: string;
  /** Where the DB directory lives for this run. */
  prepare(dir: string): string;
  on(dbDir: string, dbFile: string): void;
  off(dbDir: string): void;
  cleanup(dbDir: string): void;
}

let locker: Database.Database | null = null;
const lockFault: Fault = {
  name: "locked by another writer",
  prepare: (dir) => path.join(dir, "db"),
  on(_dir, dbFile) {
    locker = new Database(dbFile);
    locker.exec("BEGIN EXCLUSIVE");
  },
  off() {
    locker?.exec("COMMIT");
    locker?.close();
    locker = null;
  },
  cleanup() {
    locker?.close();
  },
};

const diskFullFault: Fault = {
  name: "disk full (a 16 MB tmpfs filled up)",
  prepare(dir) {
    const mnt = path.join(dir, "tmpfs");
    fs.mkdirSync(mnt);
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt], { stdio: "pipe" });
    } catch (e) {
      // Not skipped where it cannot run: the suite runs as root (as CI does), which may mount.
      throw new Error(`the disk-full test mounts a 16 MB tmpfs and needs root with mount permission: ${(e as Error).message}`);
    }
    return mnt;
  },
  on(dbDir) {
    // Fill every free byte: SQLite's next page (WAL or checkpoint) has nowhere to go.
    const fd = fs.openSync(path.join(dbDir, "filler"), "w");
    const block = Buffer.alloc(64 * 1024);
    try {
      for (let i = 0; i < 1024; i++) fs.writeSync(fd, block);
      throw new Error("the 16 MB tmpfs did not fill up");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
    } finally {
      fs.closeSync(fd);
    }
  },
  off(dbDir) {
    fs.rmSync(path.join(dbDir, "filler"));
  },
  cleanup(dbDir) {
    try {
      execFileSync("umount", ["-l", dbDir], { stdio: "ignore" });
    } catch {
      /* not mounted */
    }
  },
};

const FAULTS = [lockFault, diskFullFault];

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe("the database stops taking writes", () => {
  it.each(FAULTS)("$name: polling and the live view go on, the error is shown, writes resume, nothing is damaged", async (fault) => {
    assertBuilt();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-faults-storage-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const sim: Simulator = await startSimulator();
    cleanups.push(() => sim.close());
    sim.load({ requests: 3, promptTokens: 200, maxTokens: 1_000_000 });
    const dbDir = fault.prepare(dir);
    cleanups.push(() => fault.cleanup(dbDir));
    const dbFile = path.join(dbDir, "stepwatch.db");
    const ranFile = path.join(dir, "ran.log");
    const configPath = path.join(dir, "stepwatch.config.json");
    fs.writeFileSync(
      configPath,
      JSON.stringify({
        pollIntervalSeconds: 1,
        stuckAfterSeconds: 30,
        backends: [{ id: "b", url: sim.url, restart: { command: nodeScript(dir, "ran", `require("fs").appendFileSync(process.argv[2],"ran\\n")`, [ranFile]) } }],
        operators: [{ name: "dora", password: "env:SW_DISK_PW" }],
      }),
    );
    const app: RunningApp = await startApp({
      STEPWATCH_CONFIG: configPath,
      STEPWATCH_DB: dbFile,
      STEPWATCH_SESSION_SECRET: "storage-test-session-secret-0123",
      SW_DISK_PW: "disk-pw",
    });
    cleanups.push(() => app.stop());
    const fleet = async () => (await getJson<FleetResponse>(`${app.url}/api/fleet`))!.body;
    // From the test's start: a short range is answered with raw samples, not minute buckets.
    const t0 = Date.now() - 60_000;
    const history = async () => (await getJson<HistoryResponse>(`${app.url}/api/backends/b/history?from=${t0}&to=${Date.now() + 60_000}`))!.body;
    const cookie = await signIn(app, "dora", "disk-pw");

    // Some history is stored before the fault.
    await waitFor("busy, with stored samples", async () => (await fleet()).backends[0].state === "busy" && (await history()).count >= 3, 30_000);
    const before = await history();

    fault.on(dbDir, dbFile);
    const faultAt = Date.now();
    const broken = await waitFor("storageError shown", async () => {
      const f = await fleet();
      return f.storageError ? f : null;
    }, 30_000);
    expect(broken.storageError).toMatch(/cannot write to the database/);

    // Polling and the live view go on: fresh reads, the backend still judged busy.
    await waitFor("reads go on during the fault", async () => {
      const b = (await fleet()).backends[0];
      return (b.lastReadAt ?? 0) > faultAt + 3000 && b.state === "busy";
    }, 20_000);
    expect(app.output()).toMatch(/polling goes on; writes are retried/);

    // A restart that cannot be recorded is refused with a reason, and nothing runs.
    const r = await askRestart(app, cookie, "b", { confirm: "b", note: "during the fault" });
    expect(r.status, r.text).toBe(503);
    expect((r.json as { message: string }).message).toMatch(/cannot record the restart/);
    expect(fs.existsSync(ranFile)).toBe(false);

    fault.off(dbDir);
    const healedAt = Date.now();
    await waitFor("storageError cleared", async () => (await fleet()).storageError === null, 30_000);
    expect(app.output()).toMatch(/storage writable again/);

    // What was read during the fault was kept in memory and written now.
    const after = await waitFor("samples from the fault window stored", async () => {
      const h = await history();
      return h.columns.at.some((at) => at > faultAt + 1000 && at < healedAt - 1000) ? h : null;
    }, 20_000);
    // Nothing stored before the fault changed.
    const beforeRows = toRows(before.columns);
    const earlier = toRows(after.columns).filter((p) => p.at <= beforeRows.at(-1)!.at);
    expect(earlier).toEqual(beforeRows);
    expect(after.transitions.slice(0, before.transitions.length)).toEqual(before.transitions);

    await app.stop();
    const check = new Database(dbFile, { readonly: true });
    try {
      expect(check.pragma("integrity_check", { simple: true })).toBe("ok");
      expect((check.prepare("SELECT COUNT(*) AS n FROM restart_events").get() as { n: number }).n).toBe(0);
    } finally {
      check.close();
    }
  }, 180_000);
});
