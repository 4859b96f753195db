/**
 * "Is this backend silenced at `now`, and why" (OnCallBook.silenced, lib/oncall/book.ts): the one
 * answer the watcher's notify, the policy, the fleet view and the unattended restart use. On a real
 * SQLite file, table-driven.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import type { DbHandle } from "@/db/types";
import { insertMaintenance } from "@/db/queries/oncall";
import { parseConfig } from "@/lib/config";
import { OnCallBook, type MaintenanceNow } from "@/lib/oncall/book";

const T0 = Date.parse("2026-12-01T03:00:00Z"); // a Tuesday
const M = 60_000;
let dir: string;
let h: DbHandle;
let book: OnCallBook;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-silenced-"));
  h = await openTestDb(path.join(dir, "t.db"));
  const config = parseConfig(
    {
      backends: ["a", "b", "c", "d"].map((id, i) => ({ id, url: `http://127.0.0.1:${i + 1}` })),
      // Tuesdays 02:30-03:30 UTC for b and c.
      maintenance: [{ backends: ["b", "c"], weekly: { days: ["tue"], at: "02:30", minutes: 60 }, note: "reflash" }],
    },
    "t",
    { env: {} },
  );
  insertMaintenance(h.db, { backendId: "a", startsAt: T0 - 10 * M, endsAt: T0 + 20 * M, by: "ana", note: "driver update" });
  // c: an API period ending after the config window: the later end wins.
  insertMaintenance(h.db, { backendId: "c", startsAt: T0 - 5 * M, endsAt: T0 + 60 * M, by: "bo", note: null });
  insertMaintenance(h.db, { backendId: "d", startsAt: T0 - 60 * M, endsAt: T0 + 60 * M, by: "cy", note: null, endedAt: T0 - 30 * M, endedBy: "cy" });
  book = new OnCallBook(h.db, config.maintenance, ["a", "b", "c", "d"], () => T0);
});
afterAll(() => {
  h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const rows: Array<[string, string, number, MaintenanceNow | null]> = [
  ["an API period in force", "a", T0, { until: T0 + 20 * M, by: "ana", note: "driver update", source: "api" }],
  ["an API period over", "a", T0 + 20 * M, null],
  ["a config window in force", "b", T0, { until: T0 + 30 * M, by: null, note: "reflash", source: "config" }],
  ["a config window over", "b", T0 + 30 * M, null],
  ["both: the later end wins", "c", T0, { until: T0 + 60 * M, by: "bo", note: null, source: "api" }],
  ["a period ended early by an operator", "d", T0, null],
  ["nothing configured", "e", T0, null],
];

describe("OnCallBook.silenced", () => {
  it.each(rows)("%s", (_, id, now, want) => {
    expect(book.silenced(id, now)).toEqual(want);
  });
});
