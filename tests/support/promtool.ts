/**
 * Runs Debian's real promtool (package `prometheus`; .ci/run installs it when missing). Bounded:
 * killed after timeoutMs. Never throws for a non-zero exit: the caller asserts on it.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";

export const PROMTOOL = process.env.PROMTOOL_PATH ?? "/usr/bin/promtool";
export const PROMETHEUS = process.env.PROMETHEUS_PATH ?? "/usr/bin/prometheus";

export function assertPromtool(): void {
  if (!fs.existsSync(PROMTOOL)) throw new Error(`promtool is missing at ${PROMTOOL}: install Debian's 'prometheus' package (.ci/run does)`);
}

export interface ToolResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function promtool(args: string[], stdin?: string, timeoutMs = 30_000): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(PROMTOOL, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    p.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`promtool ${args.join(" ")} did not finish in ${timeoutMs} ms`));
    }, timeoutMs);
    p.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    p.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    p.stdin.on("error", () => {}); // promtool may exit before reading all of stdin
    p.stdin.end(stdin ?? "");
  });
}
