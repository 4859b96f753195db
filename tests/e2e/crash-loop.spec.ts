/**
 * A crash loop as a person sees it (issue 32, lib/core/crash-loop.ts), in Chromium: one simulated
 * vLLM server that crashes and comes back by itself three times (the default rule: 3 new processes
 * within 5 minutes, none asked for by stepwatch) gets the "crash loop" badge in the fleet table and
 * the crash-loop line on its card. Its own simulator and `next start` (bench/child.ts,
 * bench/dashboard.ts startApp), beside the stack of playwright.config.ts: a loop on a shared e2e
 * backend would stay open for 5 minutes and reach into the other specs.
 */
import fs from "node:fs";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { startSimulatorFleet, type Child } from "../../bench/child";
import { startApp, type App } from "../../bench/dashboard";
import type { FleetBackend, FleetResponse } from "../../lib/api/types";
import { screenshot } from "./support/helpers";
import { TMP } from "./support/stack";

let sims: Child | null = null;
let app: App | null = null;
let simUrl = "";

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({}, testInfo) => {
  testInfo.setTimeout(180_000);
  const workDir = path.join(TMP, "crash-loop");
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(workDir, { recursive: true });
  const fleet = await startSimulatorFleet(1, 60_000);
  sims = fleet.child;
  simUrl = fleet.urls[0];
  app = await startApp({ urls: fleet.urls, workDir, name: "crash-loop", pollIntervalSeconds: 1 });
});

test.afterAll(async () => {
  await app?.stop();
  await sims?.stop();
});

async function b000(): Promise<FleetBackend> {
  const f = (await (await fetch(`${app!.base}/api/fleet`)).json()) as FleetResponse;
  return f.backends[0];
}

test("a server that keeps crashing and coming back by itself shows a crash loop in the table and on its card", async ({ page }) => {
  test.setTimeout(180_000);
  await expect.poll(async () => (await b000()).state, { timeout: 60_000 }).toMatch(/^(idle|busy)$/);
  for (let i = 0; i < 3; i++) {
    const before = (await b000()).processStartTime;
    const res = await fetch(`${simUrl}/_sim/crash`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ forSeconds: 2 }) });
    expect(res.ok).toBe(true);
    // Read back up as a new process (the watcher saw the new start time): one start not caused by stepwatch.
    await expect
      .poll(async () => {
        const b = await b000();
        return b.processStartTime !== null && b.processStartTime !== before && (b.state === "idle" || b.state === "busy");
      }, { timeout: 60_000 })
      .toBe(true);
  }
  await expect.poll(async () => (await b000()).crashLoop?.restarts ?? 0, { timeout: 30_000 }).toBeGreaterThanOrEqual(3);

  await page.goto(`${app!.base}/?view=table`);
  const badge = page.getByTestId("row-crash-loop-b000");
  await expect(badge).toBeVisible();
  await expect(badge).toHaveText("crash loop");
  await expect(badge).toHaveAttribute("title", /^\d+ new processes not restarted by stepwatch$/);
  await screenshot(page, "crash-loop-table");

  await page.goto(`${app!.base}/`);
  await expect(page.getByTestId("crash-loop-b000")).toContainText(/crash loop: \d+ new processes since .* not restarted by stepwatch \(3 in 5 min\)/);
  await screenshot(page, "crash-loop-card");
});
