/**
 * The fleet page made for many backends, in Chromium: counts by state (each a filter, in the URL),
 * the table view (in the URL, sortable), the tab title in the HTML the server sends (a tab opened
 * while something is stuck says so before any script); and a signed-in viewer, who is offered no
 * Restart, Acknowledge or Maintenance button (the API would answer 403) and is told who can act.
 * Leaves gb10-c idle for the other specs.
 */
import { expect, test } from "@playwright/test";
import type { FleetResponse } from "../../lib/api/types";
import { screenshot, sim, signInThroughPage } from "./support/helpers";
import { VIEWER } from "./support/stack";

test.describe.configure({ mode: "serial" });

test("counts filter the fleet, the table sorts, the title counts what is stuck from the first byte", async ({ page, request }) => {
  await page.goto("/");
  await expect(page.getByTestId("state-gb10-c")).toHaveText(/Idle|Busy/, { timeout: 60_000 });

  await test.step("a hung backend: the served HTML's title counts it", async () => {
    await sim("gb10-c", "load", { requests: 2, maxTokens: 5000 });
    await sim("gb10-c", "mode", { mode: "hang" });
    await expect
      .poll(async () => ((await (await request.get("/api/fleet")).json()) as FleetResponse).backends.find((b) => b.id === "gb10-c")?.state, { timeout: 30_000 })
      .toBe("stuck");
    // The page as the server sends it, no script run: the title is already the count.
    const html = await (await request.get("/")).text();
    expect(html).toContain("<title>1 stuck · stepwatch</title>");
    await page.goto("/");
    await expect(page).toHaveTitle("1 stuck · stepwatch");
  });

  await test.step("the counts bar: each state a filter, kept in the URL", async () => {
    await expect(page.getByTestId("count-all")).toContainText("3");
    await expect(page.getByTestId("count-stuck")).toContainText("1");
    await page.getByTestId("count-stuck").click();
    await expect(page).toHaveURL(/state=stuck/);
    await expect(page.locator('[data-testid^="backend-card-"]')).toHaveCount(1);
    await expect(page.getByTestId("backend-card-gb10-c")).toBeVisible();
    await page.reload();
    await expect(page.getByTestId("count-stuck")).toHaveAttribute("aria-pressed", "true");
    await expect(page.locator('[data-testid^="backend-card-"]')).toHaveCount(1);
    await page.getByTestId("count-all").click();
    await expect(page).not.toHaveURL(/state=/);
  });

  await test.step("the table view: one row per backend, sortable, in the URL", async () => {
    await page.getByTestId("fleet-view-table").click();
    await expect(page).toHaveURL(/view=table/);
    const rows = page.locator('[data-testid^="fleet-row-"]');
    await expect(rows).toHaveCount(3);
    await expect(page.locator('[data-testid^="backend-card-"]')).toHaveCount(0);
    // Attention order first: the stuck one on top.
    await expect(rows.first()).toHaveAttribute("data-testid", "fleet-row-gb10-c");
    await page.getByTestId("sort-state").click();
    await page.getByTestId("sort-state").click();
    await expect(page).toHaveURL(/col=state&dir=desc/);
    await expect(rows.last()).toHaveAttribute("data-testid", "fleet-row-gb10-c");
    await page.reload();
    await expect(page.getByTestId("fleet-table")).toBeVisible();
    await expect(rows.last()).toHaveAttribute("data-testid", "fleet-row-gb10-c");
    await screenshot(page, "fleet-table");
  });

  await sim("gb10-c", "mode", { mode: "normal" });
  await expect(page).toHaveTitle("stepwatch", { timeout: 30_000 });
});

test("a viewer sees who can act, and no Restart, Acknowledge or Maintenance button", async ({ page }) => {
  await signInThroughPage(page, "/", VIEWER);
  await expect(page.getByTestId("backend-card-gb10-a")).toBeVisible();
  await expect(page.getByTestId("who-can-restart-gb10-a")).toHaveText("operators can restart");
  await expect(page.locator('[data-testid^="restart-"]')).toHaveCount(0);
  await page.getByTestId("fleet-view-table").click();
  await expect(page.locator('[data-testid^="restart-"]')).toHaveCount(0);

  await page.goto("/backends/gb10-a");
  await expect(page.getByTestId("who-can-restart-gb10-a")).toHaveText("operators can restart");
  await expect(page.getByTestId("restart-gb10-a")).toHaveCount(0);
  const panel = page.getByTestId("oncall-panel");
  await expect(panel.getByTestId("who-can-act")).toHaveText("operators can acknowledge or start maintenance");
  await expect(panel.getByTestId("acknowledge")).toHaveCount(0);
  await expect(panel.getByTestId("maintenance-start")).toHaveCount(0);
  await screenshot(page, "backend-viewer");
});

test("an operator is offered the same buttons", async ({ page }) => {
  await signInThroughPage(page, "/backends/gb10-a");
  await expect(page.getByTestId("restart-gb10-a")).toBeVisible();
  await expect(page.getByTestId("oncall-panel").getByTestId("maintenance-start")).toBeVisible();
  await expect(page.getByTestId("who-can-act")).toHaveCount(0);
});
