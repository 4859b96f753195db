import { defineConfig } from "vitest/config";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";

// vite 7 (pinned so `npm ci` works with npm 11) has no resolve.tsconfigPaths: alias "@" by hand.
// "server-only" exists only inside Next; in tests it is an empty module.
export default defineConfig({
  resolve: {
    alias: {
      "@": fileURLToPath(new URL("./", import.meta.url)),
      "server-only": fileURLToPath(new URL("./tests/support/server-only.ts", import.meta.url)),
    },
  },
  test: {
    environment: "node",
    include: ["tests/unit/**/*.test.ts", "tests/integration/**/*.test.ts", "lib/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Vitest's default ran one file at a time on this 2-core machine (8.7 min of CI). The slow
    // files mostly wait on child processes (next start, simulators, SMTP, promtool), so two at
    // once took 4.6 min here, green on each of two runs in a row. More cores, more workers.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
