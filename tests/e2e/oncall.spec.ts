/**
 * The on-call buttons on the backend page, in Chromium: start maintenance (the page and the fleet
 * card say "maintenance until HH:MM (ana: driver update)"), end it; a hung backend is acknowledged
 * with a note (who and when shown, the button gone, the stuck notification listed); a channel
 * that keeps failing is shown on the fleet; a recovery clears the acknowledgement. Leaves gb10-c
 * idle for the other specs.
 */
import { expect, test } from "@playwright/test";
import { screenshot, sim, signInThroughPage } from "./support/helpers";
import { OPERATOR } from "./support/stack";

test.describe.configure({ mode: "serial" });

test("maintenance and acknowledge through the backend page's buttons", async ({ page }) => {
  await signInThroughPage(page, "/backends/gb10-c");
  await expect(page.getByTestId("state-gb10-c")).toHaveText(/Idle|Busy/, { timeout: 30_000 });
  const panel = page.getByTestId("oncall-panel");

  await test.step("start maintenance with a note; the page and the fleet card show until when, who and why", async () => {
    await panel.getByTestId("maintenance-minutes").selectOption("30");
    await panel.getByTestId("oncall-note").fill("driver update");
    await panel.getByTestId("maintenance-start").click();
    const line = panel.getByTestId("maintenance-gb10-c");
    await expect(line).toHaveText(new RegExp(`^maintenance until \\d\\d:\\d\\d \\S+ \\(${OPERATOR.name}: driver update\\)$`));
    await page.goto("/");
    await expect(page.getByTestId("maintenance-gb10-c")).toHaveText(/maintenance until \d\d:\d\d \S+ \(ana: driver update\)/);
    await screenshot(page, "fleet-maintenance");
    await page.goto("/backends/gb10-c");
    await panel.getByTestId("maintenance-end").click();
    await expect(panel.getByTestId("maintenance-gb10-c")).toHaveCount(0);
  });

  await test.step("a hung backend is acknowledged with a note", async () => {
    await sim("gb10-c", "load", { requests: 2, maxTokens: 5000 });
    await sim("gb10-c", "mode", { mode: "hang" });
    await expect(page.getByTestId("state-gb10-c")).toHaveText("Stuck", { timeout: 30_000 });
    await expect(panel.getByTestId("problem")).toContainText("stuck");
    await panel.getByTestId("oncall-note").fill("on it");
    await panel.getByTestId("acknowledge").click();
    await expect(panel.getByTestId("ack-gb10-c")).toHaveText(new RegExp(`^acknowledged by ${OPERATOR.name} at \\d\\d:\\d\\d \\S+: on it$`));
    await expect(panel.getByTestId("acknowledge")).toHaveCount(0);
    await expect(page.getByTestId("notification-stuck").first()).toBeVisible({ timeout: 15_000 });
    await expect(page.getByTestId("notification-stuck").first()).toContainText("pager: pending");
    await screenshot(page, "backend-acknowledged");
  });

  await test.step("the channel that keeps failing is shown on the fleet", async () => {
    await page.goto("/");
    // Three attempts (at once, +5 s, +10 s later) fail: then the banner shows, with the error.
    const banner = page.getByTestId("channel-failing-pager");
    await expect(banner).toContainText("notification channel pager (webhook) keeps failing", { timeout: 45_000 });
    await expect(banner).toContainText("Messages are kept and retried");
    await screenshot(page, "fleet-channel-failing");
    await page.goto("/backends/gb10-c");
  });

  await test.step("once healthy again the acknowledgement is cleared", async () => {
    await sim("gb10-c", "mode", { mode: "restart", weightsLoadSeconds: 1 });
    await expect(page.getByTestId("state-gb10-c")).toHaveText("Idle", { timeout: 60_000 });
    await expect(panel.getByTestId("ack-gb10-c")).toHaveCount(0, { timeout: 20_000 });
    await expect(page.getByTestId("notification-recovered").first()).toBeVisible({ timeout: 15_000 });
  });
});
