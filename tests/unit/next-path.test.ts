/**
 * safeNextPath (`/signin?next=`) returns a same-origin path for every input, in one call: a
 * property test over strings built from the pieces that make URLs ambiguous (slashes, backslashes,
 * dot segments, percent escapes, control characters, schemes), plus the cases found by hand.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { safeNextPath } from "@/lib/core/next-path";

const OTHER_BASE = "https://a.example";

/** What a browser would do with the answer: a single "/" then a non-separator, and our own origin. */
function assertSafe(out: string): void {
  expect(out === "/" || (out[0] === "/" && out[1] !== "/" && out[1] !== "\\"), out).toBe(true);
  expect(new URL(out, OTHER_BASE).origin, out).toBe(OTHER_BASE);
}

const PIECES = ["/", "//", "\\", ".", "..", "./", "../", "/./", "/../", "%2e", "%2F", "%5C", "%09", "\t", "\n", "\r", " ", "?", "#", "@", ":", "evil.example", "a", "http:", "javascript:", "\u0000", "\u3002", "\uff0f", "．"];
const urlish = fc.array(fc.constantFrom(...PIECES), { maxLength: 12 }).map((p) => p.join(""));
const leadingSlash = urlish.map((s) => `/${s}`);

describe("safeNextPath returns a safe same-origin path for every input", () => {
  it.each([
    ["/.//evil.example", "/"],
    ["/./\\/evil.example", "/"],
    ["/..//evil.example", "/"],
    ["/a/..//evil.example", "/"],
    ["/%2e//evil.example", "/"],
    ["/.%2e//evil.example", "/"],
    ["/./evil.example", "/evil.example"],
    ["/backends/a/../b?x=1#h", "/backends/b?x=1#h"],
  ])("%j -> %s", (input, want) => {
    expect(safeNextPath(input)).toBe(want);
    assertSafe(safeNextPath(input));
  });

  it("property: any string (URL-ish pieces, or anything at all) gives a safe path", () => {
    fc.assert(
      fc.property(fc.oneof(urlish, leadingSlash, fc.string({ unit: "binary", maxLength: 40 })), (s) => {
        assertSafe(safeNextPath(s));
      }),
      { numRuns: 5000 },
    );
  });

  it("property: the answer is a fixed point (calling it twice changes nothing)", () => {
    fc.assert(
      fc.property(fc.oneof(urlish, leadingSlash), (s) => {
        expect(safeNextPath(safeNextPath(s))).toBe(safeNextPath(s));
      }),
      { numRuns: 2000 },
    );
  });
});
