/**
 * npm run db:copy-to-pg -- [--from FILE] [--to URL]
 * Copies stepwatch's SQLite database (STEPWATCH_DB, else data/stepwatch.db; migrated to the current
 * schema first, as the app does at start) into an empty PostgreSQL database (STEPWATCH_DATABASE_URL),
 * in one transaction. Stop stepwatch first: rows written during the copy would not be in it.
 */
import { openDb, resolveDbPath } from "../db/client";
import { openPg, redactUrl } from "../db/pg/client";
import { copySqliteToPg } from "../db/pg/copy";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<number> {
  const from = arg("--from") ?? resolveDbPath();
  const to = arg("--to") ?? process.env.STEPWATCH_DATABASE_URL;
  if (!to) {
    console.error("stepwatch copy: no target: set STEPWATCH_DATABASE_URL or pass --to postgres://user:password@host/db");
    return 2;
  }
  const source = openDb(from);
  try {
    const target = await openPg(to, { setting: arg("--to") ? "--to" : "STEPWATCH_DATABASE_URL" });
    try {
      const report = await copySqliteToPg(source.sqlite, target, (t, n) => console.log(`  ${t}: ${n} row(s)`));
      const total = report.tables.reduce((s, t) => s + t.rows, 0);
      console.log(`stepwatch copy: ${total} row(s) from ${from} into ${redactUrl(to)}`);
      return 0;
    } finally {
      await target.close();
    }
  } catch (e) {
    console.error(`stepwatch copy: ${(e as Error).message}`);
    return 1;
  } finally {
    source.close();
  }
}

main().then((code) => process.exit(code));
