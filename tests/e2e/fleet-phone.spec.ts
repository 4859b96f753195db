/**
 * The fleet's table view on a phone (Pixel 7's viewport, touch, device scale), in Chromium: the
 * page itself never scrolls sideways, the table scrolls inside its own box, the name and state
 * columns are on screen without scrolling, and what is tapped (the sort headers, a row's link, the
 * view toggle, the counts) is at least 24 x 24 CSS px (WCAG 2.2 target size, AA) and answers a tap.
 */
import { devices, expect, test, type Locator, type Page } from "@playwright/test";
import { screenshot } from "./support/helpers";

// The project's browser (Debian's Chromium) with the phone's viewport, touch and user agent.
const { defaultBrowserType: _chromium, ...pixel7 } = devices["Pixel 7"];
test.use(pixel7);

const MIN_TARGET_PX = 24;

async function box(l: Locator) {
  const b = await l.boundingBox();
  expect(b, "on the page").not.toBeNull();
  return b!;
}

async function pageWidths(page: Page) {
  return page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
}

test("the table view on a phone: scrolls inside its box, name and state on screen, tap targets big enough", async ({ page }) => {
  await page.goto("/?view=table");
  const rows = page.locator('[data-testid^="fleet-row-"]');
  await expect(rows).toHaveCount(3, { timeout: 30_000 });
  await expect(page.getByTestId("row-state-gb10-a")).toBeVisible();
  const viewport = page.viewportSize()!;

  await test.step("the page does not scroll sideways; the table does, inside its own box", async () => {
    const w = await pageWidths(page);
    expect(w.scrollWidth, "the document is no wider than the screen").toBeLessThanOrEqual(w.innerWidth);
    const wrap = page.getByTestId("fleet-table-wrap");
    const b = await box(wrap);
    expect(b.x).toBeGreaterThanOrEqual(0);
    expect(b.x + b.width).toBeLessThanOrEqual(viewport.width + 0.5);
    const scroll = await wrap.evaluate((el) => ({ overflowX: getComputedStyle(el).overflowX, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth }));
    // Either it fits, or it scrolls in its box.
    if (scroll.scrollWidth > scroll.clientWidth) expect(["auto", "scroll"]).toContain(scroll.overflowX);
  });

  await test.step("the name and state columns are on screen before any scrolling", async () => {
    for (const l of [page.getByTestId("fleet-row-gb10-a").getByRole("link", { name: "gb10-a" }), page.getByTestId("row-state-gb10-a")]) {
      const b = await box(l);
      expect(b.width, "a column squeezed to nothing is not shown").toBeGreaterThanOrEqual(MIN_TARGET_PX);
      expect(b.x).toBeGreaterThanOrEqual(0);
      expect(b.x + b.width).toBeLessThanOrEqual(viewport.width);
    }
  });

  await test.step("every control is a tap target of at least 24 x 24 px", async () => {
    const targets = [
      ...(await page.locator('[data-testid^="sort-"]').all()),
      ...(await page.locator('[data-testid^="fleet-row-"] a').all()),
      page.getByTestId("fleet-view-cards"),
      page.getByTestId("fleet-view-table"),
      ...(await page.locator('[data-testid^="count-"]').all()),
    ];
    expect(targets.length).toBeGreaterThan(10);
    const small: string[] = [];
    for (const t of targets) {
      const b = await box(t);
      if (b.width < MIN_TARGET_PX || b.height < MIN_TARGET_PX) small.push(`${(await t.getAttribute("data-testid")) ?? (await t.textContent())}: ${Math.round(b.width)} x ${Math.round(b.height)}`);
    }
    expect(small, "targets under 24 x 24 px").toEqual([]);
  });

  await test.step("a tap sorts, a tap on a name opens the backend", async () => {
    await page.getByTestId("sort-state").tap();
    await expect(page).toHaveURL(/col=state/);
    await screenshot(page, "fleet-table-phone");
    await page.getByTestId("fleet-row-gb10-a").getByRole("link", { name: "gb10-a" }).tap();
    await expect(page).toHaveURL(/\/backends\/gb10-a/);
  });
});
