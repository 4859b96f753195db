/**
 * Things built once per SQLite connection, prepared statements mostly. They live in a WeakMap keyed
 * on the better-sqlite3 connection: two connections (a test's, the CLI's, the server's) never
 * share a statement, and a closed connection takes its statements with it. CONTRIBUTING: a query
 * run per poll, or per backend at start, is prepared through one of these.
 */
import type Database from "better-sqlite3";

/** `build` runs on the first call for a connection; later calls with that connection get its result. */
export function perConnection<D extends { $client: Database.Database }, T>(build: (db: D) => T): (db: D) => T {
  const built = new WeakMap<Database.Database, T>();
  return (db) => {
    let value = built.get(db.$client);
    if (value === undefined) built.set(db.$client, (value = build(db)));
    return value;
  };
}
