/**
 * POST /api/backends/{id}/restart answers exactly as docs/api.md says, and two (here: six)
 * concurrent confirms run the restart command once.
 */
import { expect, test } from "@playwright/test";
import { APP_URL, OPERATOR } from "./support/stack";
import { restartLines, restartsOf, signInApi } from "./support/helpers";

test.describe.configure({ mode: "serial" });

const URL_C = "/api/backends/gb10-c/restart";

test("401 without a session, 403 from a foreign Origin, 404 unknown, 422 untyped healthy id", async ({ request }) => {
  const noSession = await request.post(URL_C, { data: { confirm: "gb10-c" } });
  expect(noSession.status()).toBe(401);

  await signInApi(request);
  const me = await (await request.get("/api/session")).json();
  expect(me.operator).toBe("ana");

  const foreign = await request.post(URL_C, { data: { confirm: "gb10-c" }, headers: { origin: "http://evil.example" } });
  expect(foreign.status()).toBe(403);
  const own = await request.post("/api/backends/nope/restart", { data: {}, headers: { origin: APP_URL } });
  expect(own.status()).toBe(404); // our own Origin passes the guard

  // Wait until the watcher has judged gb10-c healthy (idle), then an untyped restart is refused.
  await expect
    .poll(async () => (await (await request.get("/api/fleet")).json()).backends.find((b: { id: string }) => b.id === "gb10-c")?.state, {
      timeout: 30_000,
    })
    .toBe("idle");
  const untyped = await request.post(URL_C, { data: {} });
  expect(untyped.status()).toBe(422);
  expect((await untyped.json()).error).toBe("confirmation-required");
  const wrong = await request.post(URL_C, { data: { confirm: "gb10-a" } });
  expect(wrong.status()).toBe(422);

  const badBody = await request.post(URL_C, { data: { confirm: "gb10-c", shell: "; rm -rf /" } });
  expect(badBody.status()).toBe(400);
  const huge = await request.post(URL_C, { data: { confirm: "gb10-c", note: "x".repeat(10_000) } });
  expect(huge.status()).toBe(413);
  expect(restartLines("gb10-c")).toHaveLength(0);
});

test("concurrent confirms: one 202, the rest 409 'already restarting', the command runs once", async ({ request }) => {
  await signInApi(request);
  const answers = await Promise.all(
    Array.from({ length: 6 }, () => request.post(URL_C, { data: { confirm: "gb10-c", overrideCooldown: true } })),
  );
  const statuses = answers.map((a) => a.status()).sort();
  expect(statuses).toEqual([202, 409, 409, 409, 409, 409]);
  const accepted = answers.find((a) => a.status() === 202)!;
  const { event } = await accepted.json();
  expect(event).toMatchObject({ backendId: "gb10-c", requestedBy: "ana", healthyAtRequest: true, confirmedHealthy: true, outcome: null });
  for (const a of answers.filter((x) => x.status() === 409)) {
    expect((await a.json()).message).toMatch(/already restarting/);
  }
  // Wait until the command has finished and been recorded, then count its runs.
  await expect.poll(async () => (await restartsOf(request, "gb10-c")).find((r) => r.id === event.id)?.commandFinishedAt ?? null, { timeout: 30_000 }).not.toBeNull();
  expect(restartLines("gb10-c")).toHaveLength(1);
  expect(await restartsOf(request, "gb10-c")).toHaveLength(1);

  const again = await request.post(URL_C, { data: { confirm: "gb10-c" } });
  expect(again.status()).toBe(409);
});

test("sign-in: 401 on a wrong password; an httpOnly SameSite=Strict cookie; sign-out clears it", async ({ request }) => {
  const bad = await request.post("/api/session", { data: { name: "ana", password: "wrong" } });
  expect(bad.status()).toBe(401);
  const ok = await request.post("/api/session", { data: { name: "ana", password: OPERATOR.password } });
  expect(ok.status()).toBe(200);
  const cookie = ok.headers()["set-cookie"];
  expect(cookie).toMatch(/^stepwatch_session=/);
  expect(cookie).toMatch(/HttpOnly/i);
  expect(cookie).toMatch(/SameSite=Strict/i);
  expect(cookie).toMatch(/Expires=/i);
  const out = await request.delete("/api/session");
  expect(out.status()).toBe(200);
  expect((await (await request.get("/api/session")).json()).operator).toBeNull();
  expect((await request.post(URL_C, { data: { confirm: "gb10-c" } })).status()).toBe(401);
});

test("pages carry the security headers (no framing, no sniffing, own origin only)", async ({ request }) => {
  const res = await request.get("/");
  expect(res.status()).toBe(200);
  const h = res.headers();
  expect(h["content-security-policy"]).toContain("frame-ancestors 'none'");
  expect(h["content-security-policy"]).toContain("default-src 'self'");
  expect(h["x-content-type-options"]).toBe("nosniff");
  expect(h["referrer-policy"]).toBe("same-origin");
  expect(h["x-powered-by"]).toBeUndefined();
});
