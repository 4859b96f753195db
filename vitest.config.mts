import { defineConfig } from "vitest/config";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";

// vite 7 (pinned so `npm ci` works with npm 11) has no resolve.tsconfigPaths: alias "@" by hand.
// "server-only" exists only inside Next; in tests it is an empty module.
/**
 * The storage tests: those whose subject is the database. They run twice, on SQLite (the project
 * "stepwatch", with everything else) and on PostgreSQL (the project "storage-pg": a fresh database
 * per test from tests/support/test-db.ts, one server per run from pg-global-setup.ts). Tests that
 * read the SQLite file itself (the write lock, pragmas, file modes) stay SQLite-only.
 */
export const STORAGE_TESTS = [
  "tests/unit/queries.test.ts",
  "tests/unit/seed-queries.test.ts",
  "tests/unit/restart-request.test.ts",
  "tests/unit/sessions.test.ts",
  "tests/unit/oncall-transactions.test.ts",
  "tests/unit/oncall-silenced.test.ts",
  "tests/unit/oncall-audit.test.ts",
  "tests/unit/outages-db.test.ts",
  "tests/unit/availability.test.ts",
  "tests/unit/rollups.test.ts",
  "tests/unit/replay.test.ts",
  "tests/unit/latency-store.test.ts",
  "tests/unit/history-columns.test.ts",
  "tests/unit/watcher.test.ts",
  "tests/integration/evidence.test.ts",
  "tests/integration/crash-loop.test.ts",
  "tests/integration/notify-channels.test.ts",
  "tests/integration/notify-grouping.test.ts",
  "tests/integration/notify-grouping-fleet.test.ts",
];

export default defineConfig({
  resolve: {
    alias: {
      "@": fileURLToPath(new URL("./", import.meta.url)),
      "server-only": fileURLToPath(new URL("./tests/support/server-only.ts", import.meta.url)),
    },
  },
  test: {
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Vitest's default ran one file at a time on this 2-core machine (8.7 min of CI). The slow
    // files mostly wait on child processes (next start, simulators, SMTP, promtool), so two at
    // once took 4.6 min here, green on each of two runs in a row. More cores, more workers.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        test: { name: "stepwatch", include: ["tests/unit/**/*.test.ts", "tests/integration/**/*.test.ts", "lib/**/*.test.ts"] },
      },
      {
        extends: true,
        test: {
          name: "storage-pg",
          include: STORAGE_TESTS,
          env: { STEPWATCH_TEST_ENGINE: "postgresql" },
          globalSetup: ["tests/support/pg-global-setup.ts"],
        },
      },
    ],
  },
});
