/**
 * Security in a real Chromium against the real app:
 * - after signing in, `?next=` can only lead to a path of this site: "/\t/other.host" (the
 *   browser drops the tab and would read "//other.host", another site) lands on "/";
 * - the pages run under a CSP without 'unsafe-inline' scripts: every script Next renders carries
 *   the answer's nonce, the page hydrates (the sign-in form works, live data arrives), the browser
 *   reports no CSP violation, and an injected inline script does not run.
 */
import { expect, test } from "@playwright/test";
import { APP_URL, OPERATOR } from "./support/stack";

test("?next= pointing at another host (with a tab) lands on this site's / after sign-in", async ({ page, context }) => {
  await context.clearCookies();
  await page.goto(`/signin?next=${encodeURIComponent("/\t/other.host/steal")}`);
  await page.getByTestId("signin-name").fill(OPERATOR.name);
  await page.getByTestId("signin-password").fill(OPERATOR.password);
  await page.getByTestId("signin-submit").click();
  await expect(page.getByTestId("operator-name")).toHaveText(OPERATOR.name);
  await expect.poll(() => new URL(page.url()).origin).toBe(APP_URL);
  expect(new URL(page.url()).pathname).toBe("/");

  // A same-site path is kept.
  await context.clearCookies();
  await page.goto(`/signin?next=${encodeURIComponent("/restarts")}`);
  await page.getByTestId("signin-name").fill(OPERATOR.name);
  await page.getByTestId("signin-password").fill(OPERATOR.password);
  await page.getByTestId("signin-submit").click();
  await expect.poll(() => new URL(page.url()).pathname).toBe("/restarts");
});

test("pages hydrate under a nonce CSP with 'strict-dynamic', and an injected inline script is blocked", async ({ page }) => {
  const violations: string[] = [];
  await page.exposeFunction("reportViolation", (v: string) => violations.push(v));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => (window as unknown as { reportViolation: (v: string) => void }).reportViolation(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const res = await page.goto("/");
  const csp = res!.headers()["content-security-policy"] ?? "";
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
  expect(nonce).toBeTruthy();
  expect(csp).toContain("'strict-dynamic'");
  expect(csp.split(";").find((d) => d.trim().startsWith("script-src"))).not.toContain("unsafe-inline");
  const html = await res!.text();
  const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
  expect(scripts.length).toBeGreaterThan(0);
  for (const s of scripts) expect(s, s).toContain(`nonce="${nonce}"`);
  // Hydrated: live fleet data replaced the server render's placeholders (SWR runs only in the browser).
  await expect(page.getByTestId("state-gb10-a")).toBeVisible({ timeout: 30_000 });
  // An inline script written into the page without the nonce must not run.
  const ran = await page.evaluate(async () => {
    const w = window as unknown as { injected?: boolean };
    const div = document.createElement("div");
    div.innerHTML = "<img src=x onerror=\"window.injected=true\">";
    document.body.appendChild(div);
    await new Promise((r) => setTimeout(r, 300));
    return w.injected === true;
  });
  expect(ran).toBe(false);
  expect(violations.some((v) => v.startsWith("script-src"))).toBe(true); // the blocked handler, reported
  expect(violations.filter((v) => !v.includes("inline"))).toEqual([]);
});
