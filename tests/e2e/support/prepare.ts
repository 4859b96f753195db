// Run by playwright's webServer right before `next start`: a fresh database and a config for the
// e2e simulators, every run (old state would make the specs depend on each other's leftovers).
import fs from "node:fs";
import path from "node:path";
import { ARTIFACTS, CONFIG_FILE, DB_FILE, OPERATOR, OPERATOR_ENV, VIEWER, VIEWER_ENV, ROOT, SIMS, RESTART_LOAD_SECONDS, TMP, type SimId, counterFile, simUrl } from "./stack";

fs.rmSync(TMP, { recursive: true, force: true });
fs.mkdirSync(TMP, { recursive: true });
fs.mkdirSync(ARTIFACTS, { recursive: true });

const restartScript = path.join(ROOT, "tests/e2e/support/restart-sim.mjs");
const config = {
  // Fast timings so a hang is called stuck in seconds, not minutes.
  pollIntervalSeconds: 1,
  stuckAfterSeconds: 3,
  probeTimeoutSeconds: 3,
  idleProbeSeconds: 2,
  restartCooldownSeconds: 600,
  recoveryTimeoutSeconds: 60,
  backends: (Object.keys(SIMS) as SimId[]).map((id) => ({
    id,
    url: simUrl(id),
    restart: {
      command: [process.execPath, restartScript, counterFile(id), simUrl(id), String(RESTART_LOAD_SECONDS[id])],
      timeoutSeconds: 20,
    },
  })),
  proxies: [],
  // One channel nobody listens on (port 9), for gb10-c's stuck only: the fleet must show it failing
  // (oncall.spec.ts). A short flap debounce so a recovery clears an acknowledgement in seconds; no
  // group window, so its first attempt is at once (grouping: tests/integration/notify-grouping*.test.ts).
  notifications: {
    recoveredAfterSeconds: 2,
    groupWaitSeconds: 0,
    channels: [{ id: "pager", type: "webhook", url: "http://127.0.0.1:9/nobody-listens", events: ["stuck"], backends: ["gb10-c"] }],
  },
  operators: [
    { name: OPERATOR.name, password: `env:${OPERATOR_ENV}` },
    { name: VIEWER.name, password: `env:${VIEWER_ENV}`, role: "viewer" },
  ],
};
fs.writeFileSync(CONFIG_FILE, JSON.stringify(config, null, 2));
console.log(`e2e: wrote ${CONFIG_FILE}; database ${DB_FILE}`);
