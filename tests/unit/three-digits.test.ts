/**
 * threeDigits computes what Number(x.toPrecision(3)) is without building a string: the same number
 * for every value, checked against toPrecision itself on seeded random values across magnitudes,
 * near ties, near powers of ten, and the edges of its fast path.
 */
import { describe, expect, it } from "vitest";
import { threeDigits } from "@/lib/core/history";

const reference = (x: number) => (x === 0 || !Number.isFinite(x) || Number.isInteger(x) ? x : Number(x.toPrecision(3)));

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("threeDigits", () => {
  it("is Number(x.toPrecision(3)) for random values of every magnitude", () => {
    const r = rng(14);
    const wrong: number[] = [];
    for (let i = 0; i < 300_000; i++) {
      const x = (r() - 0.5) * 10 ** Math.floor(r() * 44 - 22);
      if (!Object.is(threeDigits(x), reference(x))) wrong.push(x);
    }
    expect(wrong).toEqual([]);
  });

  it("is Number(x.toPrecision(3)) at ties, next to powers of ten, and at the fast path's edges", () => {
    const xs: number[] = [];
    for (let e = -17; e <= 17; e++) {
      const p = 10 ** e;
      for (const m of [1, 1.005, 1.235, 1.245, 9.995, 9.9949999, 9.9950001, 0.99949, 0.9995, 2.675, 1.115, 4.445, 9.999999]) {
        const v = m * p;
        xs.push(v, -v, v * (1 + Number.EPSILON), v * (1 - Number.EPSILON), v * (1 + 4 * Number.EPSILON), v * (1 - 4 * Number.EPSILON));
      }
    }
    xs.push(1e-15, 1e15 - 0.5, 999_999_999_999_999.9, 0.1 + 0.2, 1 / 3, 2 / 3, Math.PI, Math.E, 123.45, 0.000123456, 5e-324, 1.7976931348623157e308);
    for (const x of xs) expect(threeDigits(x), String(x)).toBe(reference(x));
  });

  it("leaves null, 0, integers and non-finite values as they are", () => {
    expect(threeDigits(null)).toBeNull();
    for (const x of [0, -0, 7, -12345, 2 ** 53, NaN, Infinity, -Infinity]) expect(Object.is(threeDigits(x), x)).toBe(true);
  });
});
