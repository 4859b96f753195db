/**
 * New processes the watcher saw (table process_starts): written with the poll's batch, read back
 * to seed the crash-loop rule at start and to count restarts by others in the availability report.
 */
import { and, asc, count, eq, gte, lt, sql } from "drizzle-orm";
import type { Db } from "../types";
import { perConnection } from "../per-connection";
import { processStarts, type ProcessStartRow } from "../schema";

export type NewProcessStart = typeof processStarts.$inferInsert;

/** The seed read runs once per backend at start: prepared once per connection (see statementsOf in ./readings.ts). */
const seedStatements = perConnection((db: Db) => ({
  othersSince: db
    .select({ at: processStarts.at })
    .from(processStarts)
    .where(and(eq(processStarts.backendId, sql.placeholder("backendId")), eq(processStarts.byStepwatch, false), gte(processStarts.at, sql.placeholder("since"))))
    .orderBy(asc(processStarts.at))
    .limit(sql.placeholder("limit"))
    .prepare(),
}));

export function insertProcessStart(db: Db, row: NewProcessStart): void {
  db.insert(processStarts).values(row).run();
}

/** When the new processes stepwatch did not cause were seen, since `since`, oldest first, at most `limit`. */
export function othersStartsSince(db: Db, backendId: string, since: number, limit: number): number[] {
  return seedStatements(db)
    .othersSince.all({ backendId, since, limit })
    .map((r) => r.at);
}

/** The new processes of a backend seen in [from, to), oldest first. */
export function processStartsBetween(db: Db, backendId: string, from: number, to: number): ProcessStartRow[] {
  return db
    .select()
    .from(processStarts)
    .where(and(eq(processStarts.backendId, backendId), gte(processStarts.at, from), lt(processStarts.at, to)))
    .orderBy(asc(processStarts.at), asc(processStarts.id))
    .all();
}

/** How many new processes of a backend were seen in [from, to), by stepwatch's restarts and by others. */
export function processStartCounts(db: Db, backendId: string, from: number, to: number): { byStepwatch: number; byOthers: number } {
  const rows = db
    .select({ byStepwatch: processStarts.byStepwatch, n: count() })
    .from(processStarts)
    .where(and(eq(processStarts.backendId, backendId), gte(processStarts.at, from), lt(processStarts.at, to)))
    .groupBy(processStarts.byStepwatch)
    .all();
  return { byStepwatch: rows.find((r) => r.byStepwatch)?.n ?? 0, byOthers: rows.find((r) => !r.byStepwatch)?.n ?? 0 };
}
