/** Restarting a healthy backend needs its id typed; Esc closes the dialog without restarting. */
import { expect, test } from "@playwright/test";
import { restartLines, restartsOf, screenshot, signInThroughPage } from "./support/helpers";
import { OPERATOR } from "./support/stack";

test("a healthy backend is restarted only after its id is typed", async ({ page }) => {
  await signInThroughPage(page, "/");
  const state = page.getByTestId("state-gb10-b");
  await expect(state).toHaveText(/Idle|Busy/, { timeout: 30_000 });

  const open = page.getByTestId("restart-gb10-b");
  await open.click();
  const dialog = page.getByTestId("restart-dialog");
  await expect(dialog).toBeVisible();
  // Keyboard: Esc closes, nothing ran, focus is back on the button.
  await page.keyboard.press("Escape");
  await expect(dialog).toBeHidden();
  expect(restartLines("gb10-b")).toHaveLength(0);

  await open.click();
  const input = dialog.getByTestId("restart-confirm-input");
  const submit = dialog.getByTestId("restart-submit");
  // Focus starts on Cancel: a stray Enter closes the dialog, it never restarts.
  await expect(dialog.getByTestId("restart-cancel")).toBeFocused();
  await expect(submit).toBeDisabled();
  await input.fill("gb10-");
  await expect(submit).toBeDisabled();
  await input.fill("gb10-b");
  await expect(submit).toBeEnabled();
  await screenshot(page, "dialog-healthy");
  await submit.click();
  await expect(dialog).toBeHidden();
  // The event records that a healthy backend was restarted on purpose, and the command ran once.
  await expect.poll(() => restartLines("gb10-b").length, { timeout: 20_000 }).toBe(1);
  const [event] = await restartsOf(page.request, "gb10-b");
  expect(event).toMatchObject({ requestedBy: OPERATOR.name, healthyAtRequest: true, confirmedHealthy: true });
});
