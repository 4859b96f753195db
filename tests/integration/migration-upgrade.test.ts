/**
 * An upgrade of a real SQLite file across db/migrations/0011_restart_started.sql: before it, a
 * pending restart's action ran as soon as it was asked for, so the migration marks such a row
 * started (at its asking). Without that, the first leader of the new code would find a pending row
 * nobody started and run its action a second time (lib/restart/request.ts carryOutWaiting).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDb } from "@/db/client";
import { restartEventById } from "@/db/queries/restarts";

const MIGRATIONS = path.join(process.cwd(), "db", "migrations");
const UPGRADE = "0011_restart_started";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-upgrade-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** db/migrations as it was before `tag`: its SQL files and journal entries up to, not including, it. */
function migrationsBefore(tag: string): string {
  const folder = path.join(dir, "migrations-before");
  fs.mkdirSync(path.join(folder, "meta"), { recursive: true });
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS, "meta", "_journal.json"), "utf8")) as { entries: Array<{ idx: number; tag: string }> };
  const cut = journal.entries.findIndex((e) => e.tag === tag);
  if (cut < 0) throw new Error(`no migration ${tag}`);
  const kept = journal.entries.slice(0, cut);
  for (const e of kept) fs.copyFileSync(path.join(MIGRATIONS, `${e.tag}.sql`), path.join(folder, `${e.tag}.sql`));
  fs.writeFileSync(path.join(folder, "meta", "_journal.json"), JSON.stringify({ ...journal, entries: kept }));
  return folder;
}

describe(`upgrading a database across ${UPGRADE}`, () => {
  it("marks a restart pending before the upgrade as started at its asking, and leaves resolved ones alone", () => {
    const file = path.join(dir, "sw.db");
    const old = openDb(file, { migrationsFolder: migrationsBefore(UPGRADE) });
    const columns = (old.sqlite.prepare("PRAGMA table_info(restart_events)").all() as Array<{ name: string }>).map((c) => c.name);
    expect(columns).not.toContain("started_at"); // really the schema from before
    const insert = old.sqlite.prepare(
      `INSERT INTO restart_events (backend_id, requested_at, requested_by, state_at_request, healthy_at_request, evidence, override_cooldown, confirmed_healthy, action, outcome, resolved_at)
       VALUES (?, ?, 'ana', 'stuck', 0, '{"reasons":[],"readings":[]}', 0, 0, 'command: /bin/true', ?, ?)`,
    );
    const pending = Number(insert.run("gb10", 1_700_000_000_000, null, null).lastInsertRowid);
    const resolved = Number(insert.run("gb11", 1_700_000_100_000, "recovered", 1_700_000_200_000).lastInsertRowid);
    old.close();

    const upgraded = openDb(file);
    try {
      expect(restartEventById(upgraded.db, pending)).toMatchObject({ startedAt: 1_700_000_000_000, startedBy: null, startedEpoch: null, outcome: null });
      expect(restartEventById(upgraded.db, resolved)).toMatchObject({ startedAt: null, outcome: "recovered" });
    } finally {
      upgraded.close();
    }
  });
});
