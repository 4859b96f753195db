/**
 * The dashboard an operator lives in (issue 15), in a real Chromium against the real app:
 * - browsers in two time zones other than the server's: no hydration error, one time format that
 *   names its zone, a UTC/local choice that survives a reload;
 * - the fleet's search, state filter and grouping; the tab title counting what needs attention;
 * - the backend page: separate token panels, a window held in the URL, a folded/filterable timeline;
 * - the restart dialog: focus on Cancel, the action, the cooldown and the expected outage;
 * - an unknown backend id; the restart log as cards on a phone;
 * screenshots of every page (light and dark, desktop and phone) in tests/e2e/artifacts/;
 * and on every page of every test, no Content-Security-Policy violation (the nonce CSP, issue 16).
 */
import { expect, test, type Page } from "@playwright/test";
import { screenshot, signInApi, sim } from "./support/helpers";

/** Console errors and uncaught exceptions of a page: a hydration mismatch shows here (React #418). */
function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  return errors;
}

/**
 * Every page of every test here runs under the nonce CSP of proxy.ts (no 'unsafe-inline' scripts):
 * nothing the dashboard needs (its charts, dialogs, time zones, phone layout) may be blocked.
 */
const cspViolations = new WeakMap<Page, string[]>();
test.beforeEach(async ({ page }) => {
  const seen: string[] = [];
  cspViolations.set(page, seen);
  await page.exposeFunction("reportCspViolation", (v: string) => seen.push(v));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      (window as unknown as { reportCspViolation: (v: string) => void }).reportCspViolation(`${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`),
    );
  });
});
test.afterEach(async ({ page }) => {
  expect(cspViolations.get(page)).toEqual([]);
});

const ONE_FORMAT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|GMT[+-]\d+(:\d\d)?|[A-Z]{3,4})$/;

async function allTimes(page: Page): Promise<string[]> {
  return page.locator("time").allInnerTexts();
}

for (const timezoneId of ["Asia/Tokyo", "America/New_York"]) {
  test.describe(`a browser in ${timezoneId}`, () => {
    test.use({ timezoneId });

    test("renders without a hydration error, in one format naming its zone, and keeps the zone chosen", async ({ page }) => {
      const errors = collectErrors(page);
      await page.goto("/");
      await expect(page.getByTestId("state-gb10-a")).toHaveText(/Idle|Busy|Unknown|Stalled/, { timeout: 30_000 });
      const lastRead = page.getByTestId("last-read");
      await expect(lastRead).toContainText(/last read \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
      await expect(lastRead).toContainText("this page refreshes every 1.5 s");

      // The operator picks local time: every time follows, and a reload keeps the choice.
      await page.getByTestId("zone-local").click();
      const local = timezoneId === "Asia/Tokyo" ? "GMT+9" : /E[SD]T/;
      await expect(lastRead).toContainText(local);
      await page.reload();
      await expect(page.getByTestId("zone-local")).toHaveAttribute("aria-pressed", "true");
      await expect(lastRead).toContainText(local);

      await page.goto("/backends/gb10-a?range=15m");
      await expect(page.getByTestId("timeline")).toBeVisible({ timeout: 20_000 });
      const times = await allTimes(page);
      expect(times.length).toBeGreaterThan(0);
      for (const t of times) expect(t).toMatch(ONE_FORMAT);
      expect(times.every((t) => (timezoneId === "Asia/Tokyo" ? t.endsWith("GMT+9") : /E[SD]T$/.test(t)))).toBe(true);

      await page.getByTestId("zone-utc").click();
      await expect.poll(async () => (await allTimes(page)).every((t) => t.endsWith(" UTC"))).toBe(true);
      await page.goto("/restarts");
      await page.reload();
      expect(errors.filter((e) => /418|hydrat/i.test(e))).toEqual([]);
      expect(errors).toEqual([]);
    });
  });
}

test("the fleet filters, groups and counts what needs attention in the tab title", async ({ page }) => {
  await page.goto("/");
  await expect(page.getByTestId("state-gb10-b")).toHaveText(/Idle|Busy/, { timeout: 30_000 });
  await expect(page).toHaveTitle(/stepwatch$/);
  await page.getByTestId("fleet-search").fill("gb10-b");
  await expect(page.locator('[data-testid^="backend-card-"]')).toHaveCount(1);
  await expect(page).toHaveURL(/q=gb10-b/);
  await page.getByTestId("fleet-search").fill("");
  await page.getByTestId("fleet-state").selectOption("stuck");
  await expect(page.getByTestId("fleet-none-match")).toBeVisible();
  await page.getByTestId("fleet-state").selectOption("");
  await page.getByTestId("fleet-group").check();
  await expect(page.getByTestId("fleet-group-section").first()).toBeVisible();
  await expect(page).toHaveURL(/group=model/);
  // The view is in the URL: a reload (or a shared link) shows the same.
  await page.reload();
  await expect(page.getByTestId("fleet-group")).toBeChecked();
  await page.getByTestId("fleet-group").uncheck();
  await screenshot(page, "fleet-filters");

  // A hang: the tab title counts it, and its card comes first.
  await sim("gb10-c", "load", { requests: 2, maxTokens: 300 });
  await expect(page.getByTestId("state-gb10-c")).toHaveText("Busy", { timeout: 20_000 });
  await sim("gb10-c", "mode", { mode: "hang" });
  await expect(page).toHaveTitle("1 stuck · stepwatch", { timeout: 30_000 });
  await expect(page.locator('[data-testid^="backend-card-"]').first()).toHaveAttribute("data-testid", "backend-card-gb10-c");
  await screenshot(page, "fleet-stuck-first");
  await sim("gb10-c", "mode", { mode: "normal" });
  await expect(page).toHaveTitle("stepwatch", { timeout: 30_000 });
});

test("the backend page: token panels apart, a held window, a text alternative for each chart", async ({ page }) => {
  await page.goto("/backends/gb10-b?range=15m");
  const charts = page.getByTestId("history-chart");
  await expect(charts.first().locator("canvas")).toBeVisible({ timeout: 20_000 });
  await expect(page.getByRole("heading", { name: "Generation tokens per second" })).toBeVisible();
  await expect(page.getByRole("heading", { name: "Prompt tokens per second" })).toBeVisible();
  const labels = await charts.evaluateAll((els) => els.map((e) => e.getAttribute("aria-label") ?? ""));
  for (const label of labels) expect(label).toMatch(/gb10-b: .+(now|no data)/);
  // The history's spans decoded into values: the polled server's running requests are drawn.
  expect(labels[0]).toMatch(/running: now \d/);
  await expect(page.getByTestId("marker-legend")).toContainText("restart");
  await page.getByTestId("hold-window").click();
  await expect(page).toHaveURL(/from=\d+&to=\d+/);
  const held = page.url();
  await expect(page.getByTestId("fixed-window")).toBeVisible();
  await page.goto(held);
  await expect(page.getByTestId("fixed-window")).toBeVisible();
  await expect(charts.first().locator("canvas")).toBeVisible();
  await expect(page.getByTestId("state-gb10-b")).toBeVisible();
  await expect(page.getByTestId("range-15m")).toHaveAttribute("aria-pressed", "false");
  await screenshot(page, "backend-window");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.reload();
  await expect(charts.first().locator("canvas")).toBeVisible();
  await expect(page.getByTestId("state-gb10-b")).toBeVisible();
  await screenshot(page, "backend-window-dark");
});

test("the restart dialog starts on Cancel and says what will run, the outage to expect and the cooldown", async ({ page }) => {
  await signInApi(page.request);
  await page.goto("/");
  await expect(page.getByTestId("state-gb10-b")).toHaveText(/Idle|Busy/, { timeout: 30_000 });
  await page.getByTestId("restart-gb10-b").click();
  const dialog = page.getByTestId("restart-dialog");
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId("restart-cancel")).toBeFocused();
  await expect(dialog.getByTestId("restart-plan-action")).toContainText(/^command: .*restart-sim\.mjs/);
  await expect(dialog.getByTestId("restart-plan-outage")).toContainText(/about .+ \(the last restart's downtime\)|not known yet/);
  await expect(dialog.getByTestId("restart-plan-cooldown")).toContainText("a cooldown of 10 min starts");
  await screenshot(page, "dialog");
  // Enter on the focused Cancel closes the dialog; nothing is restarted.
  await page.keyboard.press("Enter");
  await expect(dialog).toBeHidden();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByTestId("restart-gb10-b").click();
  await expect(dialog.getByTestId("restart-cancel")).toBeFocused();
  await screenshot(page, "dialog-phone");
  await page.keyboard.press("Escape");
});

test("an unknown backend id says so and lists the known ones", async ({ page }) => {
  const res = await page.goto("/backends/no-such-box");
  expect(res?.status()).toBe(404);
  await expect(page.getByTestId("unknown-backend")).toContainText("No backend named “no-such-box”");
  await expect(page.getByTestId("known-backends")).toContainText("gb10-a");
  await screenshot(page, "unknown-backend");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.reload();
  await screenshot(page, "unknown-backend-dark");
});

test("the restart log becomes stacked cards on a phone", async ({ page }) => {
  await signInApi(page.request);
  const res = await page.request.post("/api/backends/gb10-c/restart", { data: { confirm: "gb10-c", overrideCooldown: true, note: "cards on a phone" } });
  expect([202, 409]).toContain(res.status());
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto("/restarts");
  const outcome = page.getByTestId("restart-outcome").first();
  await expect(outcome).toBeVisible({ timeout: 20_000 });
  // At 1280 px the outcome column is inside the table's box, not cut off behind a scrollbar.
  const wrap = await page.locator(".table-wrap").first().boundingBox();
  const cell = await outcome.boundingBox();
  expect(cell!.x + cell!.width).toBeLessThanOrEqual(wrap!.x + wrap!.width + 1);
  await screenshot(page, "restarts-1280");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  const row = page.locator('[data-testid^="restart-row-"]').first();
  await expect(row).toBeVisible();
  expect(await row.evaluate((el) => getComputedStyle(el).display)).toBe("block");
  const rowBox = await row.boundingBox();
  expect(rowBox!.width).toBeLessThanOrEqual(390);
  await screenshot(page, "restarts-phone");
});

test("a crash that came back by itself is an outage on the history page and the backend page", async ({ page }) => {
  await page.goto("/");
  await expect(page.getByTestId("state-gb10-c")).toHaveText(/Idle|Busy/, { timeout: 60_000 });
  await sim("gb10-c", "crash", { forSeconds: 3 });
  await page.goto("/history?range=24h");
  // The crash (refused reads: down), not the restart asked for earlier from stepwatch.
  const row = page.locator('[data-testid="outage-row"][data-backend="gb10-c"][data-state="down"]').first();
  await expect(row).toBeVisible({ timeout: 60_000 });
  // The outage review points at the backend's evidence bundles.
  await expect(row.getByTestId("outage-evidence")).toHaveAttribute("href", "/backends/gb10-c#evidence");
  await expect(page.getByTestId("uptime-gb10-c-24h")).not.toHaveText("100%");
  await expect(page.getByTestId("outages-csv")).toHaveAttribute("href", /format=csv/);
  await expect(page).toHaveTitle("History · stepwatch");
  await screenshot(page, "history");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await expect(row).toBeVisible();
  await screenshot(page, "history-phone-dark");
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.emulateMedia({ colorScheme: "light" });
  // The backend link holds a window around the outage.
  await row.getByRole("link", { name: "gb10-c" }).click();
  await expect(page).toHaveURL(/\/backends\/gb10-c\?from=\d+&to=\d+/);
  await expect(page.getByTestId("backend-outages").locator('[data-testid="outage-row"][data-state="down"]').first()).toBeVisible();
  // The backend page holds its evidence panel (issue 32): a bundle, or says when one is captured.
  await expect(page.getByTestId("evidence-panel")).toBeVisible();
  await expect(page.getByTestId("evidence-panel").getByRole("heading", { name: "Evidence" })).toBeVisible();
  await expect(page.getByTestId("history-chart").first().locator("canvas")).toBeVisible();
  // Hovering a marker line says what it was: sweep the first chart until the tip shows (bounded).
  const over = (await page.locator(".u-over").first().boundingBox())!;
  const tip = page.getByTestId("marker-tip");
  for (let x = over.x + 1; x < over.x + over.width && !(await tip.isVisible()); x += 3) {
    await page.mouse.move(x, over.y + over.height / 2);
  }
  await expect(tip).toBeVisible();
  await expect(tip).toContainText(/^(Restart.*asked by ana|State: \S+.*→)/);
  await screenshot(page, "backend-marker-hover");
  await screenshot(page, "backend-outage");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.reload();
  await expect(page.getByTestId("history-chart").first().locator("canvas")).toBeVisible();
  await screenshot(page, "backend-outage-dark");
});

test("the backend page's What if panel replays the recorded readings and advises settings (issue 34)", async ({ page }) => {
  const errors = collectErrors(page);
  await page.goto("/backends/gb10-c");
  const panel = page.getByTestId("replay-panel");
  await expect(panel.getByRole("heading", { name: /What if/ })).toBeVisible({ timeout: 30_000 });
  // Another stuckAfterSeconds than the configured one, judged over the readings stored so far.
  await panel.getByTestId("replay-seconds").selectOption("120");
  await panel.getByTestId("replay-run").click();
  await expect(panel.getByTestId("replay-summary")).toHaveText(/\S/, { timeout: 30_000 });
  await expect(panel.getByTestId("replay-result")).toContainText(/\d+ of \d+ readings judged/);
  await panel.getByTestId("advice-run").click();
  await expect(panel.getByTestId("advice-result")).toContainText(/stuckAfterSeconds: \d+ s/, { timeout: 30_000 });
  await expect(panel.getByTestId("advice-kubernetes")).toHaveText(/\S/);
  await expect(panel.getByTestId("replay-error")).toHaveCount(0);
  await screenshot(page, "backend-what-if");
  expect(errors).toEqual([]);
});

test("the availability report shows each backend's day in a real browser (issue 32)", async ({ page }) => {
  await page.goto("/availability");
  await expect(page).toHaveTitle(/Availability/);
  await expect(page.getByTestId("availability-table")).toBeVisible({ timeout: 30_000 });
  await expect(page.locator('[data-testid="availability-row"][data-backend="gb10-c"]').first()).toBeVisible();
  await expect(page.getByTestId("availability-csv")).toHaveAttribute("href", /format=csv/);
});
