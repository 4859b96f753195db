import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { cppDouble } from "@/sim/engines/llamacpp";
import { ENGINE_CONFIG_DEFAULTS, parseEngineKind } from "@/sim/engines";

describe("llama.cpp's value format (ostream << double, precision 6)", () => {
  it.each([
    [0, "0"],
    [12, "12"],
    [425.5, "425.5"],
    [2903.63, "2903.63"],
    [2.3715126, "2.37151"],
    [100000, "100000"],
    [1234567, "1.23457e+06"],
    [999999.5, "1e+06"],
    [0.0001234, "0.0001234"],
    [0.00001, "1e-05"],
  ])("%d prints as %s, which the exposition parser reads back", (value, text) => {
    expect(cppDouble(value)).toBe(text);
    const parsed = parsePrometheus(`llamacpp:n_decode_total ${text}\n`);
    expect(parsed.errors).toEqual([]);
    // Six significant digits: off by at most half a unit in the sixth.
    expect(Math.abs(parsed.samples[0].value - value)).toBeLessThanOrEqual(Math.abs(value) * 5e-6);
  });

  it("agrees with C's printf %g (what std::ostream's default precision is) past a million and below 1e-4", () => {
    for (const v of [1_234_567, 123_456_789, 1e6, 999_999.5, 2.3715126, 0.00001, 0.009595, 1.99916, 48211, 3.2145678e12]) {
      expect(cppDouble(v), String(v)).toBe(execFileSync("printf", ["%g", String(v)], { encoding: "utf8", env: { ...process.env, LC_ALL: "C" } }));
    }
  });

  it("hides a counter's last digits past a million: two different counts print the same", () => {
    expect(cppDouble(1_234_561)).toBe(cppDouble(1_234_564));
  });
});

describe("engine kinds", () => {
  it("names the field and the choices for an unknown engine; llama.cpp and Ollama default to their own parallelism", () => {
    expect(parseEngineKind("tgi")).toBe("tgi");
    expect(() => parseEngineKind("vLLM", "engine")).toThrow('engine must be one of vllm, llamacpp, sglang, tgi, ollama, got "vLLM"');
    expect(ENGINE_CONFIG_DEFAULTS.llamacpp.maxNumSeqs).toBe(4);
    expect(ENGINE_CONFIG_DEFAULTS.ollama.maxNumSeqs).toBe(1);
  });
});
