/** The tests' PostgreSQL: the same starter as `npm run demo:replicas` (scripts/postgres.ts). */
export * from "../../scripts/postgres";
