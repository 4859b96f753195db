/**
 * The Configuration page in Chromium: what is loaded, secrets hidden, "Reload now" for an operator
 * only; backends (with their labels) and proxies added, edited and removed by an operator.
 */
import fs from "node:fs";
import { expect, test } from "@playwright/test";
import { screenshot, signInThroughPage } from "./support/helpers";
import { CONFIG_FILE, OPERATOR, OPERATOR_ENV, simUrl } from "./support/stack";

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

/** The config file as written by the page (JSON, the e2e stack's). */
function configFile(): { backends: Array<{ id: string; labels?: Record<string, string> }>; proxies: Array<{ id: string; url: string; backends?: string[] }> } {
  return JSON.parse(fs.readFileSync(CONFIG_FILE, "utf8"));
}

test("an operator gives a backend labels from the Configuration page, checked by the config's schema", async ({ page }) => {
  await signInThroughPage(page, "/config");
  await page.getByTestId("backend-add").click();
  await page.getByTestId("backend-form-id").fill("ui-labelled");
  await page.getByTestId("backend-form-url").fill(simUrl("gb10-c"));

  await test.step("what the form cannot read, and what the schema refuses, name the field", async () => {
    await page.getByTestId("backend-form-labels").fill("site:ams\nh100");
    await page.getByTestId("backend-save").click();
    await expect(page.getByTestId("backend-form-error")).toHaveText('labels: line 2 "h100" is not key:value');
    await page.getByTestId("backend-form-labels").fill("Site:ams");
    await page.getByTestId("backend-save").click();
    await expect(page.getByTestId("backend-form-error")).toContainText("labels.Site: a label key must be");
    expect(configFile().backends.map((b) => b.id)).not.toContain("ui-labelled");
  });

  await test.step("saved: in the file, on the page, and on the fleet's card", async () => {
    await page.getByTestId("backend-form-labels").fill("site:ams\ngpu: h100");
    await page.getByTestId("backend-save").click();
    await expect(page.getByTestId("config-labels-ui-labelled")).toHaveText("gpu:h100site:ams");
    expect(configFile().backends.find((b) => b.id === "ui-labelled")?.labels).toEqual({ site: "ams", gpu: "h100" });
    await page.goto("/");
    await expect(page.getByTestId("labels-ui-labelled")).toHaveText("gpu:h100site:ams");
  });

  await test.step("edited: the form shows them one per line; emptied, they are gone from the file", async () => {
    await page.goto("/config");
    await page.getByTestId("backend-edit-ui-labelled").click();
    await expect(page.getByTestId("backend-form-labels")).toHaveValue("gpu:h100\nsite:ams");
    await page.getByTestId("backend-form-labels").fill("site:fra");
    await page.getByTestId("backend-save").click();
    await expect(page.getByTestId("config-labels-ui-labelled")).toHaveText("site:fra");
    await page.getByTestId("backend-edit-ui-labelled").click();
    await page.getByTestId("backend-form-labels").fill("");
    await page.getByTestId("backend-save").click();
    await expect(page.getByTestId("config-labels-ui-labelled")).toHaveText("none");
    expect(configFile().backends.find((b) => b.id === "ui-labelled")).not.toHaveProperty("labels");
  });

  page.once("dialog", (d) => void d.accept());
  await page.getByTestId("backend-remove-ui-labelled").click();
  await expect(page.getByTestId("config-backend-ui-labelled")).toHaveCount(0);
});

test("an operator adds, edits and removes a proxy from the Configuration page", async ({ page }) => {
  await page.goto("/config");
  await expect(page.getByTestId("config-backend-gb10-a")).toBeVisible();
  await expect(page.getByTestId("proxy-add")).toHaveCount(0); // not signed in: no buttons

  await signInThroughPage(page, "/config");
  await page.getByTestId("proxy-add").click();
  await page.getByTestId("proxy-form-id").fill("ui-proxy");
  await page.getByTestId("proxy-form-url").fill(simUrl("gb10-c"));
  await page.getByTestId("proxy-form-backends").fill("gb10-c, nope");
  await page.getByTestId("proxy-save").click();
  // The schema's own words, naming the field.
  await expect(page.getByTestId("proxy-form-error")).toContainText('proxies[0].backends[1]: no backend "nope" in backends');
  await page.getByTestId("proxy-form-apiKey").fill("sk-typed-into-a-form");
  await page.getByTestId("proxy-form-backends").fill("gb10-c");
  await page.getByTestId("proxy-save").click();
  await expect(page.getByTestId("proxy-form-error")).toContainText("apiKey");
  await page.getByTestId("proxy-form-apiKey").fill("");
  await page.getByTestId("proxy-save").click();
  await expect(page.getByTestId("config-proxy-ui-proxy")).toContainText(simUrl("gb10-c"));
  await expect(page.getByTestId("config-proxy-ui-proxy")).toContainText("gb10-c");
  await expect(page.getByTestId("config-last-change")).toContainText("added proxy ui-proxy");
  expect(configFile().proxies).toEqual([{ id: "ui-proxy", url: simUrl("gb10-c"), backends: ["gb10-c"] }]);
  await screenshot(page, "config-proxies");

  // Polled: the fleet page shows it, asked GET /v1/models.
  await page.goto("/");
  await expect(page.getByTestId("proxy-ui-proxy")).toContainText("e2e/llama", { timeout: 30_000 });

  await page.goto("/config");
  await page.getByTestId("proxy-edit-ui-proxy").click();
  await expect(page.getByTestId("proxy-form-id")).toBeDisabled();
  await expect(page.getByTestId("proxy-form-backends")).toHaveValue("gb10-c");
  await page.getByTestId("proxy-form-backends").fill("");
  await page.getByTestId("proxy-save").click();
  await expect(page.getByTestId("config-proxy-ui-proxy")).toContainText("not said");
  expect(configFile().proxies).toEqual([{ id: "ui-proxy", url: simUrl("gb10-c") }]);

  page.once("dialog", (d) => void d.accept());
  await page.getByTestId("proxy-remove-ui-proxy").click();
  await expect(page.getByTestId("config-proxy-ui-proxy")).toHaveCount(0);
  expect(configFile().proxies).toEqual([]);
  await expect(page.locator("body")).not.toContainText("sk-typed-into-a-form");
});
