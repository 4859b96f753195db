/**
 * The bundled CLI (`npm run build:cli` -> dist/stepwatch.cjs, the package's `stepwatch` bin) is one
 * file that runs without the repository: copied alone into an empty directory (as a Kubernetes exec
 * probe copies it into an image) and run with plain `node` against the simulator, it answers as
 * `npm run check` does (tests/integration/cli-check.test.ts holds the full contract).
 */
import { execFile, execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@/sim/server";

const ROOT = path.resolve(__dirname, "../..");
let dir = "";
let bundle = "";

beforeAll(() => {
  execFileSync("npm", ["run", "--silent", "build:cli"], { cwd: ROOT, timeout: 120_000, stdio: "pipe" });
  dir = mkdtempSync(path.join(tmpdir(), "stepwatch-bundle-"));
  bundle = path.join(dir, "stepwatch.cjs");
  copyFileSync(path.join(ROOT, "dist/stepwatch.cjs"), bundle);
}, 130_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sims: Simulator[] = [];
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

/** `node stepwatch.cjs check <url> --json ...`, run from the empty directory (no node_modules anywhere up from it). */
function run(...args: string[]): Promise<{ code: number; json: { state: string; reads: number; probeSent: boolean; healthy: boolean } }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [bundle, "check", ...args, "--json"], { cwd: dir, timeout: 60_000, env: { PATH: process.env.PATH ?? "", NODE_ENV: "production" } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      try {
        resolve({ code, json: JSON.parse(stdout) });
      } catch {
        reject(new Error(`bundle exited ${code} without JSON: ${stdout}\n${stderr}`));
      }
    });
  });
}

describe("the bundled CLI, alone in an empty directory", () => {
  it("idle: one probe answers, exit 0", async () => {
    const s = await startSimulator({ weightsLoadSeconds: 0.2 });
    sims.push(s);
    const r = await run(s.url, "--wait", "0.3");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ state: "idle", healthy: true, probeSent: true });
  });

  it("down: nothing listens, exit 2", async () => {
    const s = await startSimulator({ weightsLoadSeconds: 0.2 });
    const url = s.url;
    await s.close();
    const r = await run(url, "--wait", "0");
    expect(r.code).toBe(2);
    expect(r.json.state).toBe("down");
  });

  it("a usage error exits 64", async () => {
    const r = await new Promise<number>((resolve) => execFile(process.execPath, [bundle, "check"], { cwd: dir, timeout: 30_000 }, (err) => resolve(typeof err?.code === "number" ? err.code : 0)));
    expect(r).toBe(64);
  });
});
