/**
 * lib/api/admission.ts's CSP nonces: cut from a pool the CSPRNG refills, never one twice, always
 * 18 bytes (24 base64 characters), across refills. The admission decision itself is exercised over
 * real HTTP (tests/integration/security-*.test.ts, fleet-fast-lane.test.ts).
 */
import { describe, expect, it } from "vitest";
import { freshNonce } from "@/lib/api/admission";

describe("freshNonce", () => {
  it("gives 18 fresh bytes each time, across several refills of the pool", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const n = freshNonce();
      expect(n).toMatch(/^[A-Za-z0-9+/]{24}$/);
      expect(Buffer.from(n, "base64")).toHaveLength(18);
      seen.add(n);
    }
    expect(seen.size).toBe(2000);
  });
});
