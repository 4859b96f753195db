/**
 * End-to-end: the real dashboard (`next start`, needs a prior `next build`) over real simulated
 * vLLM servers (sim), driven in Debian's Chromium. Never `playwright install`: there is no
 * browser download here; CHROMIUM_PATH points elsewhere if needed.
 */
import { defineConfig, devices } from "@playwright/test";
import { APP_PORT, APP_URL, CONFIG_FILE, DB_FILE, OPERATOR, OPERATOR_ENV, SIMS, SIM_WEIGHTS_LOAD_SECONDS, VIEWER, VIEWER_ENV } from "./tests/e2e/support/stack";

const ports = Object.values(SIMS);
/** One simulator process serving every e2e backend (each on its own port, as separate servers). */
const simServer = {
  command: `node ./node_modules/tsx/dist/cli.mjs sim/cli.ts ${ports.map((p) => `--port ${p}`).join(" ")} --weights-load-seconds ${SIM_WEIGHTS_LOAD_SECONDS} --model e2e/llama`,
  url: `http://127.0.0.1:${ports[ports.length - 1]}/health`,
  reuseExistingServer: false,
  timeout: 30_000,
  stdout: "ignore" as const,
};

export default defineConfig({
  testDir: "./tests/e2e",
  testMatch: /.*\.spec\.ts$/,
  outputDir: "./test-results",
  timeout: 120_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  use: {
    baseURL: APP_URL,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
  },
  projects: [
    {
      name: "debian-chromium",
      use: {
        ...devices["Desktop Chrome"],
        launchOptions: {
          executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
          args: [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
          ],
        },
      },
    },
  ],
  webServer: [
    simServer,
    {
      // prepare.ts writes a fresh config and removes the old database; `exec` makes next-server
      // the process Playwright stops (no orphan behind a shell).
      command: `node ./node_modules/tsx/dist/cli.mjs tests/e2e/support/prepare.ts && exec ./node_modules/.bin/next start -p ${APP_PORT} -H 127.0.0.1`,
      url: `${APP_URL}/api/fleet`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "pipe",
      env: {
        STEPWATCH_CONFIG: CONFIG_FILE,
        STEPWATCH_DB: DB_FILE,
        [OPERATOR_ENV]: OPERATOR.password,
        [VIEWER_ENV]: VIEWER.password,
        NEXT_TELEMETRY_DISABLED: "1",
      },
    },
  ],
});
