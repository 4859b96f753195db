/** The Configuration page in Chromium: what is loaded, secrets hidden, "Reload now" for an operator only. */
import { expect, test } from "@playwright/test";
import { screenshot, signInThroughPage } from "./support/helpers";
import { OPERATOR, OPERATOR_ENV } from "./support/stack";

test("the Configuration page shows the loaded config; an operator reloads it from there", async ({ page }) => {
  await page.goto("/config");
  await expect(page.getByRole("heading", { name: "Configuration" })).toBeVisible();
  await expect(page.getByTestId("config-backend-gb10-a")).toBeVisible();
  await expect(page.getByTestId("config-operators")).toContainText(`env:${OPERATOR_ENV}`);
  await expect(page.locator("body")).not.toContainText(OPERATOR.password);
  await expect(page.getByTestId("config-reload")).toHaveCount(0); // not signed in: read-only

  await signInThroughPage(page, "/config");
  const reload = page.getByTestId("config-reload");
  await expect(reload).toBeVisible();
  await reload.click();
  await expect(page.getByTestId("config-reload-result")).toHaveText(/Reloaded: no target changed\./);
  await expect(page.getByTestId("config-source")).toContainText(`(operator ${OPERATOR.name})`);
  await screenshot(page, "config");
});
