import { defineConfig } from "drizzle-kit";

/** The PostgreSQL migrations (replicas): `npx drizzle-kit generate --config drizzle.pg.config.ts`. */
export default defineConfig({
  dialect: "postgresql",
  schema: "./db/pg/schema.ts",
  out: "./db/pg/migrations",
});
