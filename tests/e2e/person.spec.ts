/**
 * The operator's path: the fleet shows busy and idle live; a backend hangs and is called stuck
 * with its reason; the operator signs in, restarts it through the dialog; it shows restarting,
 * then idle; the restart is on the restarts page with who and why. Screenshots of the three pages
 * go to tests/e2e/artifacts/ (not committed).
 */
import { expect, test } from "@playwright/test";
import { OPERATOR } from "./support/stack";
import { restartLines, screenshot, sim, signInThroughPage } from "./support/helpers";

test.describe.configure({ mode: "serial" });

test("a hung backend is shown stuck, restarted by an operator, and recorded", async ({ page }) => {
  const state = page.getByTestId("state-gb10-a");

  await test.step("the fleet shows busy and idle live, without reloading", async () => {
    await page.goto("/");
    await expect(state).toHaveText("Idle", { timeout: 30_000 });
    // ~80 tokens at ~8 tok/s each: busy for several poll intervals, so no read can miss it.
    await sim("gb10-a", "load", { requests: 2, maxTokens: 80 });
    await expect(state).toHaveText("Busy", { timeout: 20_000 });
    await expect(page.getByTestId("running-gb10-a")).not.toHaveText("0");
    await expect(state).toHaveText("Idle", { timeout: 60_000 });
  });

  await test.step("a hang is called stuck, with its reason and a restart recommendation", async () => {
    await sim("gb10-a", "load", { requests: 2, maxTokens: 5000 });
    await expect(state).toHaveText("Busy", { timeout: 20_000 });
    await sim("gb10-a", "mode", { mode: "hang" });
    await expect(state).toHaveText("Stuck", { timeout: 30_000 });
    const recommend = page.getByTestId("recommend-gb10-a");
    await expect(recommend).toContainText("Restart recommended");
    await expect(recommend).toContainText(/running/);
    await screenshot(page, "fleet-stuck");
  });

  await test.step("the operator signs in and restarts it through the dialog", async () => {
    await signInThroughPage(page, "/");
    await expect(state).toHaveText("Stuck");
    await page.getByTestId("restart-gb10-a").click();
    const dialog = page.getByTestId("restart-dialog");
    await expect(dialog).toBeVisible();
    await expect(dialog.getByTestId("restart-evidence")).toContainText(/running/);
    await expect(dialog.getByTestId("restart-inflight")).toContainText("2 running requests will fail");
    // Not healthy: no id to type, the button is ready.
    await expect(dialog.getByTestId("restart-confirm-input")).toHaveCount(0);
    await dialog.getByTestId("restart-note").fill("hung during the e2e run");
    await dialog.getByTestId("restart-submit").click();
    await expect(dialog).toBeHidden();
  });

  await test.step("it shows restarting, then idle again", async () => {
    await expect(state).toHaveText("Restarting", { timeout: 15_000 });
    await expect(page.getByTestId("restart-gb10-a")).toBeDisabled();
    await expect(state).toHaveText("Idle", { timeout: 60_000 });
    expect(restartLines("gb10-a")).toHaveLength(1);
    await screenshot(page, "fleet");
  });

  await test.step("the restart is on the restarts page with who and why", async () => {
    await page.goto("/restarts?backend=gb10-a");
    const row = page.locator('[data-testid^="restart-row-"][data-backend="gb10-a"]');
    await expect(row).toHaveCount(1);
    await expect(row.getByTestId("restart-who")).toHaveText(OPERATOR.name);
    await expect(row.getByTestId("restart-why")).toContainText("Stuck");
    await expect(row.getByTestId("restart-why")).toContainText("hung during the e2e run");
    await expect(row.getByTestId("restart-outcome")).toContainText("Recovered", { timeout: 30_000 });
    await screenshot(page, "restarts");
  });

  await test.step("the backend page charts the range with the restart marked, and the timeline", async () => {
    await page.goto("/backends/gb10-a?range=15m");
    await expect(page.getByTestId("range-15m")).toHaveAttribute("aria-pressed", "true");
    await expect(page.getByTestId("history-chart").first().locator("canvas")).toBeVisible();
    await expect(page.getByTestId("timeline")).toContainText("Stuck");
    await expect(page.getByTestId("timeline")).toContainText("Restarting");
    await expect(page.getByTestId("restarts-table")).toContainText(OPERATOR.name);
    await screenshot(page, "backend");
    await page.getByTestId("range-1h").click();
    await expect(page).toHaveURL(/range=1h/);
    await expect(page.getByTestId("range-1h")).toHaveAttribute("aria-pressed", "true");
    await page.emulateMedia({ colorScheme: "dark" });
    await page.reload();
    await expect(page.getByTestId("history-chart").first().locator("canvas")).toBeVisible();
    await screenshot(page, "backend-dark");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto("/");
    await expect(state).toHaveText("Idle");
    await screenshot(page, "fleet-phone-dark");
  });
});
