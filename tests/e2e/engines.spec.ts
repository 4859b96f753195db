/** The fleet page says which engine each backend runs (detected from its /metrics: the simulators speak vLLM). */
import { expect, test } from "@playwright/test";

test("every card names its engine once it was read", async ({ page }) => {
  await page.goto("/");
  const engine = page.getByTestId("engine-gb10-b");
  await expect(engine).toHaveText(/vLLM/, { timeout: 30_000 });
  const fleet = await (await page.request.get("/api/fleet")).json();
  const b = fleet.backends.find((x: { id: string }) => x.id === "gb10-b");
  expect(b).toMatchObject({ engine: "vllm", configProblem: null });
  expect(b.models.length).toBeGreaterThan(0);
});
