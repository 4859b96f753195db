/**
 * Every sign-in comparison costs exactly one scrypt with the default parameters, whether the name
 * is unknown, the operator's password is a hash, or a clear-text env value: the timing of the
 * answer cannot tell them apart (the red team measured 404 ms vs 476 ms before). Counted, not timed.
 */
import { beforeEach, describe, expect, it, vi } from "vitest";

const calls: Array<{ N: number | undefined }> = [];
vi.mock("node:crypto", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:crypto")>();
  const scrypt = (...args: unknown[]) => {
    calls.push({ N: (args[3] as { N?: number }).N });
    return (real.scrypt as unknown as (...a: unknown[]) => void)(...args);
  };
  return { ...real, default: { ...real, scrypt }, scrypt };
});

const { hashPassword, warmPasswords, verifyPassword, burnPasswordCheck } = await import("@/lib/auth/password");

describe("one scrypt per comparison", () => {
  beforeEach(() => void (calls.length = 0));

  it("clear-text (after the warm-up at start), a default hash and an unknown name cost the same", async () => {
    const plain = { kind: "plain" as const, value: "pw-1", source: "env" as const };
    const hash = { kind: "scrypt" as const, hash: await hashPassword("pw-2") };
    await warmPasswords([plain, hash]);
    calls.length = 0;
    expect(await verifyPassword(plain, "guess")).toBe(false);
    const plainCost = calls.splice(0);
    expect(await verifyPassword(hash, "guess")).toBe(false);
    const hashCost = calls.splice(0);
    await burnPasswordCheck("guess");
    const unknownCost = calls.splice(0);
    expect(plainCost).toEqual([{ N: 1 << 15 }]);
    expect(hashCost).toEqual([{ N: 1 << 15 }]);
    expect(unknownCost).toEqual([{ N: 1 << 15 }]);
    expect(await verifyPassword(plain, "pw-1")).toBe(true);
    expect(await verifyPassword(hash, "pw-2")).toBe(true);
  }, 60_000);
});
