import { describe, expect, it } from "vitest";
import { z } from "zod";
import { readJson } from "@/app/api/_lib/body";
import { DomainError } from "@/lib/core/errors";

const Body = z.strictObject({ confirm: z.string().max(64).optional(), overrideCooldown: z.boolean().optional() });
const post = (body: string, headers: Record<string, string> = {}) =>
  new Request("http://127.0.0.1/x", { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
const codeOf = (p: Promise<unknown>) => p.then(() => "ok", (e: DomainError) => `${e.code}: ${e.message}`);

describe("readJson", () => {
  it("parses and validates", async () => {
    expect(await readJson(post('{"confirm":"a","overrideCooldown":true}'), Body)).toEqual({ confirm: "a", overrideCooldown: true });
    expect(await readJson(post(""), Body)).toEqual({});
  });
  it("names what is wrong", async () => {
    expect(await codeOf(readJson(post("{"), Body))).toBe("bad-request: the body is not valid JSON");
    expect(await codeOf(readJson(post('{"overrideCooldown":"yes"}'), Body))).toMatch(/^bad-request: overrideCooldown: /);
    expect(await codeOf(readJson(post('{"cmd":"x"}'), Body))).toMatch(/^bad-request: /);
  });
  it("refuses bodies over the cap, declared or not", async () => {
    expect(await codeOf(readJson(post("{}", { "content-length": "999999" }), Body, 100))).toMatch(/^too-large/);
    expect(await codeOf(readJson(post(JSON.stringify({ confirm: "x".repeat(500) })), Body, 100))).toMatch(/^too-large/);
  });
});
