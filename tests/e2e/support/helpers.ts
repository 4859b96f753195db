import fs from "node:fs";
import path from "node:path";
import { expect, type APIRequestContext, type Page } from "@playwright/test";
import type { RestartEventDTO } from "../../../lib/api/types";
import { ARTIFACTS, OPERATOR, counterFile, simUrl, type SimId } from "./stack";

/** Drive a simulator through its admin API (POST /_sim/...). */
export async function sim(id: SimId, route: string, body: Record<string, unknown> = {}): Promise<unknown> {
  const res = await fetch(`${simUrl(id)}/_sim/${route}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`simulator ${id} ${route}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

export async function signInThroughPage(page: Page, next = "/", who: { name: string; password: string } = OPERATOR): Promise<void> {
  await page.goto(`/signin?next=${encodeURIComponent(next)}`);
  await page.getByTestId("signin-name").fill(who.name);
  await page.getByTestId("signin-password").fill(who.password);
  await page.getByTestId("signin-submit").click();
  await expect(page.getByTestId("operator-name")).toHaveText(who.name);
}

export async function signInApi(request: APIRequestContext): Promise<void> {
  const res = await request.post("/api/session", { data: { name: OPERATOR.name, password: OPERATOR.password } });
  expect(res.status()).toBe(200);
}

export function restartLines(id: SimId): string[] {
  const f = counterFile(id);
  return fs.existsSync(f) ? fs.readFileSync(f, "utf8").split("\n").filter(Boolean) : [];
}

export async function restartsOf(request: APIRequestContext, id: SimId): Promise<RestartEventDTO[]> {
  const res = await request.get(`/api/restarts?backend=${id}`);
  expect(res.status()).toBe(200);
  return (await res.json()) as RestartEventDTO[];
}

export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}
