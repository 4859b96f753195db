/** The Configuration page in Chromium: what is loaded, secrets hidden, "Reload now" for an operator only. */
import { expect, test } from "@playwright/test";
import { screenshot, signInThroughPage } from "./support/helpers";
import { OPERATOR, OPERATOR_ENV, simUrl } from "./support/stack";

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

test("an operator adds, edits and removes a backend from the Configuration page; a secret only as env:NAME", async ({ page }) => {
  await page.goto("/config");
  await expect(page.getByTestId("config-backend-gb10-a")).toBeVisible();
  await expect(page.getByTestId("backend-add")).toHaveCount(0); // not signed in: no buttons
  await expect(page.getByTestId("backend-edit-gb10-a")).toHaveCount(0);

  await signInThroughPage(page, "/config");
  await page.getByTestId("backend-add").click();
  await page.getByTestId("backend-form-id").fill("ui-added");
  await page.getByTestId("backend-form-url").fill(simUrl("gb10-c"));
  // A key typed as a value is refused next to the form, and never stored.
  await page.getByTestId("backend-form-apiKey").fill("sk-typed-into-a-form");
  await page.getByTestId("backend-save").click();
  await expect(page.getByTestId("backend-form-error")).toContainText("apiKey");
  await page.getByTestId("backend-form-apiKey").fill("");
  await page.getByTestId("backend-save").click();
  await expect(page.getByTestId("config-backend-ui-added")).toContainText(simUrl("gb10-c"));
  await expect(page.getByTestId("config-last-change")).toContainText("added backend ui-added");

  await page.getByTestId("backend-edit-ui-added").click();
  await expect(page.getByTestId("backend-form-id")).toBeDisabled();
  await page.getByTestId("backend-form-probe").selectOption("none");
  await page.getByTestId("backend-save").click();
  await expect(page.getByTestId("config-backend-ui-added")).toContainText("none");

  page.once("dialog", (d) => void d.accept());
  await page.getByTestId("backend-remove-ui-added").click();
  await expect(page.getByTestId("config-backend-ui-added")).toHaveCount(0);
  await expect(page.locator("body")).not.toContainText("sk-typed-into-a-form");
});
