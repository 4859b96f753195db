// The e2e stack's fixed facts, shared by playwright.config.ts, prepare.ts and the specs.
import path from "node:path";
export const ROOT = path.resolve(__dirname, "../../..");
/** Gitignored (".tmp/" in .gitignore): config, database, restart counters of one run. */
export const TMP = path.join(ROOT, "tests/e2e/.tmp");
export const ARTIFACTS = path.join(ROOT, "tests/e2e/artifacts");
export const CONFIG_FILE = path.join(TMP, "stepwatch.e2e.json");
export const DB_FILE = path.join(TMP, "e2e.db");

export const APP_PORT = 18430;
export const APP_URL = `http://127.0.0.1:${APP_PORT}`;
export const OPERATOR = { name: "ana", password: "e2e-Operator-pw-7431" };
export const OPERATOR_ENV = "STEPWATCH_E2E_PASSWORD";
/** A signed-in viewer (role "viewer"): reads everything, is offered no action (fleet-scale.spec.ts). */
export const VIEWER = { name: "vic", password: "e2e-Viewer-pw-2280" };
export const VIEWER_ENV = "STEPWATCH_E2E_VIEWER_PASSWORD";

/** a: the person's path (busy, hang, restart). b: typed confirmation. c: API answers and races. */
export const SIMS = {
  "gb10-a": 18431,
  "gb10-b": 18432,
  "gb10-c": 18433,
};
export const SIM_WEIGHTS_LOAD_SECONDS = 2;
/**
 * How long each backend refuses connections after its restart command. gb10-a's is longer than
 * several watcher reads (1 s) plus UI polls (1.5 s), so "Restarting" is on screen long enough to
 * be seen every time, not only when the polls happen to line up.
 */
export const RESTART_LOAD_SECONDS: Record<keyof typeof SIMS, number> = { "gb10-a": 8, "gb10-b": 2, "gb10-c": 2 };

export type SimId = keyof typeof SIMS;
export const simUrl = (id: SimId): string => `http://127.0.0.1:${SIMS[id]}`;
export const counterFile = (id: SimId): string => path.join(TMP, `restarts-${id}.log`);
