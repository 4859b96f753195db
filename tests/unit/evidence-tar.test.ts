/**
 * The evidence download's .tar.gz (lib/api/tar.ts, a hand-written ustar) read back by Debian's own
 * `tar`, and the config of evidence commands: errors name the field.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { evidenceTarGz } from "@/lib/api/evidence";
import type { EvidenceDTO } from "@/lib/api/types";
import { ConfigError, parseConfig } from "@/lib/config";
import { safeText } from "@/lib/core/evidence";

const DTO: EvidenceDTO = {
  id: 7,
  sizeBytes: 1234,
  expiresAt: 2_000_000_000_000,
  backendId: "gb10-a",
  trigger: "stuck",
  startedAt: 1_796_000_000_000,
  finishedAt: 1_796_000_003_000,
  state: "stuck",
  reasons: [{ rule: "no-progress-stuck", text: "no progress across 2 waits" }],
  timeline: [{ at: 1_796_000_000_000, from: "busy", to: "stuck", reasons: [] }],
  metrics: [{ at: 1_796_000_000_000, state: "stuck", cut: false, body: "vllm:num_requests_running 2\n" }],
  status: [{ path: "/v1/models", outcome: "ok", status: 200, latencyMs: 3, body: '{"data":[]}' }],
  commands: [
    { name: "py-spy", argv: ["py-spy", "dump"], startedAt: 1, finishedAt: 2, durationMs: 1, exitCode: 0, error: null, timedOut: false, output: "Thread 1\n".repeat(300), outputBytes: 2700 },
    { name: "nvidia-smi", argv: ["nvidia-smi"], startedAt: 1, finishedAt: 3, durationMs: 2, exitCode: null, error: "timed out after 2 s; process group killed", timedOut: true, output: "", outputBytes: 0 },
  ],
  notes: [],
};

describe("the evidence .tar.gz", () => {
  it("untars with Debian's tar into the bundle's files, byte for byte", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-evidence-tar-"));
    try {
      const { name, bytes } = evidenceTarGz(DTO);
      expect(name).toBe("stepwatch-gb10-a-evidence-7.tar.gz");
      const file = path.join(dir, name);
      fs.writeFileSync(file, bytes);
      const listed = execFileSync("tar", ["-tzf", file], { encoding: "utf8" }).trim().split("\n").sort();
      expect(listed).toEqual(
        [
          "evidence-7/bundle.json",
          "evidence-7/timeline.json",
          `evidence-7/metrics/1-${DTO.metrics[0].at}.prom`,
          "evidence-7/status/1-v1_models.txt",
          "evidence-7/commands/py-spy.out",
          "evidence-7/commands/py-spy.json",
          "evidence-7/commands/nvidia-smi.out",
          "evidence-7/commands/nvidia-smi.json",
        ].sort(),
      );
      execFileSync("tar", ["-xzf", file, "-C", dir]);
      const read = (p: string) => fs.readFileSync(path.join(dir, "evidence-7", p), "utf8");
      expect(JSON.parse(read("bundle.json"))).toEqual(DTO);
      expect(read("commands/py-spy.out")).toBe(DTO.commands[0].output);
      expect(JSON.parse(read("commands/nvidia-smi.json"))).toMatchObject({ exitCode: null, timedOut: true });
      expect(read(`metrics/1-${DTO.metrics[0].at}.prom`)).toBe(DTO.metrics[0].body);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("safeText", () => {
  it("writes control characters (escape codes, CSI, NUL, CR) as \\xNN and keeps tabs and newlines", () => {
    expect(safeText("a\u001b[2Jb\u009bc\u0000d\re\tf\n")).toBe("a\\x1b[2Jb\\x9bc\\x00d\\x0de\tf\n");
  });
});

describe("evidence in the config", () => {
  const problems = (evidence: unknown, env: Record<string, string> = {}): string[] => {
    try {
      parseConfig({ backends: [{ id: "a", url: "http://127.0.0.1:1", evidence }] }, "test", { env });
      return [];
    } catch (e) {
      if (e instanceof ConfigError) return e.problems;
      throw e;
    }
  };

  it("accepts commands with defaults; an env:NAME value is a secret kept apart", () => {
    const c = parseConfig(
      { backends: [{ id: "a", url: "http://127.0.0.1:1", evidence: { commands: [{ name: "smi", command: ["nvidia-smi"], env: { TOKEN: "env:SW_T", MODE: "full" } }] } }] },
      "test",
      { env: { SW_T: "tok-123" } },
    );
    expect(c.backends[0].evidence).toEqual({
      commands: [{ name: "smi", command: ["nvidia-smi"], timeoutSeconds: 10, env: { TOKEN: "tok-123", MODE: "full" }, secretValues: ["tok-123"] }],
      maxBytes: 4 * 1024 * 1024,
      retentionDays: 30,
    });
    expect(c.secretEnvNames).toContain("SW_T");
    expect(c.evidenceTimeoutSeconds).toBe(30);
  });

  it("names the field of each problem", () => {
    expect(problems({ commands: [{ name: "a b", command: ["x"] }] })).toEqual([expect.stringMatching(/^backends\[0\]\.evidence\.commands\[0\]\.name: /)]);
    expect(problems({ commands: [{ name: "x", command: [] }] })).toEqual(["backends[0].evidence.commands[0].command: must name the program to run"]);
    expect(problems({ commands: [{ name: "x", command: ["x"], timeoutSeconds: 0 }] })).toEqual([expect.stringMatching(/^backends\[0\]\.evidence\.commands\[0\]\.timeoutSeconds: /)]);
    expect(problems({ commands: [{ name: "x", command: ["x"], env: { T: "env:SW_UNSET" } }] })).toEqual(["backends[0].evidence.commands[0].env.T: environment variable SW_UNSET is not set"]);
    expect(problems({ commands: [{ name: "x", command: ["x"] }, { name: "x", command: ["y"] }] })).toEqual(['backends[0].evidence.commands[1].name: "x" appears twice']);
    expect(problems({ maxBytes: 10 })).toEqual([expect.stringMatching(/^backends\[0\]\.evidence\.maxBytes: /)]);
    expect(problems({ commands: [{ name: "x", command: ["x"], shell: true }] })).toEqual(["backends[0].evidence.commands[0].shell: unknown field"]);
  });
});
