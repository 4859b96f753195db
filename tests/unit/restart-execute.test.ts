import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { callWebhook, describeAction, executeAction, restartCommandEnv, runCommand } from "@/lib/restart/execute";

const node = process.execPath;

/**
 * Whether `pid` still runs. A zombie does not: a killed grandchild is reparented to PID 1, and it
 * stays in the process table, answering kill(pid, 0), until PID 1 gets round to reaping it.
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false; // gone between the two looks
  }
}

async function until(cond: () => boolean, what: string, deadlineMs = 10_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("runCommand", () => {
  it("runs the argv without a shell: metacharacters stay plain arguments", async () => {
    const r = await runCommand([node, "-e", "console.log(JSON.stringify(process.argv.slice(1)))", "a; rm -rf /", "$(id)"], {
      timeoutMs: 10_000,
    });
    expect(r).toMatchObject({ ok: true, exitCode: 0, error: null });
    expect(JSON.parse(r.output)).toEqual(["a; rm -rf /", "$(id)"]);
  });

  it("reports a non-zero exit with its output", async () => {
    const r = await runCommand([node, "-e", "console.error('unit vllm not found'); process.exit(5)"], { timeoutMs: 10_000 });
    expect(r).toMatchObject({ ok: false, exitCode: 5, error: "exited with status 5" });
    expect(r.output).toContain("unit vllm not found");
  });

  it("reports a program that cannot be started", async () => {
    const r = await runCommand(["/nonexistent/restart-vllm"], { timeoutMs: 10_000 });
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/cannot run \/nonexistent\/restart-vllm: .*ENOENT/);
  });

  it("truncates long output and says how much was dropped", async () => {
    const r = await runCommand([node, "-e", "process.stdout.write('x'.repeat(20000))"], { timeoutMs: 10_000, maxOutputBytes: 1000 });
    expect(r.ok).toBe(true);
    expect(r.output.startsWith("x".repeat(1000))).toBe(true);
    expect(r.output).toContain("[19000 more bytes not kept]");
  });

  it("kills the whole process group on timeout, grandchildren included", async () => {
    // The deadline expires once the grandchild runs (the script says so in a file), not after a
    // fixed 500 ms: on a loaded machine node can take longer than that to start, and a command
    // killed before it spawned anything tests nothing.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-exec-"));
    const pidFile = path.join(dir, "grandchild.pid");
    const started = () => {
      try {
        return Number(fs.readFileSync(pidFile, "utf8")) > 0;
      } catch {
        return false;
      }
    };
    const script = `const c=require('child_process').spawn('sleep',['60'],{stdio:'inherit'});console.log(c.pid);require('fs').writeFileSync(${JSON.stringify(pidFile)},String(c.pid));setInterval(()=>{},1000)`;
    try {
      const r = await runCommand([node, "-e", script], {
        timeoutMs: 500,
        deadline: (expire) => {
          let cancelled = false;
          // Expire even if the script never got there (the assertions below then say so).
          void until(() => cancelled || started(), "the command to start its grandchild", 20_000)
            .catch(() => {})
            .finally(() => cancelled || expire());
          return () => (cancelled = true);
        },
      });
      expect(r.ok).toBe(false);
      expect(r.error).toMatch(/timed out after .*process group killed/);
      const grandchild = Number(r.output.trim().split("\n")[0]);
      expect(grandchild).toBeGreaterThan(0);
      await until(() => !alive(grandchild), "the grandchild to die");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("does not wait for (or kill) a server the script left running in the background", async () => {
    const script =
      "const c=require('child_process').spawn('sleep',['60'],{stdio:'inherit',detached:true});c.unref();console.log(c.pid);process.exit(0)";
    const r = await runCommand([node, "-e", script], { timeoutMs: 20_000 });
    expect(r).toMatchObject({ ok: true, exitCode: 0 });
    const bg = Number(r.output.trim().split("\n")[0]);
    try {
      expect(alive(bg)).toBe(true);
    } finally {
      process.kill(bg, "SIGKILL");
    }
  });
});

describe("the restart command's environment", () => {
  const base = {
    PATH: "/usr/bin:/bin",
    DEPLOY_TOKEN: "kept-for-the-command",
    STEPWATCH_SESSION_SECRET: "session-secret",
    STEPWATCH_CONFIG: "/etc/stepwatch.json",
    VLLM_KEY: "sk-from-config",
    OPERATOR_PW: "pw-from-config",
  };

  it("drops STEPWATCH_* and every variable the config read a secret from; keeps the rest", () => {
    expect(restartCommandEnv(base, ["VLLM_KEY", "OPERATOR_PW", "NOT_SET"])).toEqual({ PATH: "/usr/bin:/bin", DEPLOY_TOKEN: "kept-for-the-command" });
    expect(base.VLLM_KEY).toBe("sk-from-config"); // a copy: stepwatch's own environment is untouched
  });

  it("executeAction runs the command with exactly the environment it is given", async () => {
    const action = { kind: "command" as const, command: [node, "-e", "process.stdout.write(JSON.stringify(Object.keys(process.env).sort()))"], timeoutSeconds: 10 };
    const r = await executeAction(action, { backendId: "a", eventId: 1, requestedBy: "ana" }, { env: restartCommandEnv(base, ["VLLM_KEY", "OPERATOR_PW"]) });
    expect(r.ok).toBe(true);
    expect(JSON.parse(r.output)).not.toContain("VLLM_KEY");
    expect(JSON.parse(r.output)).not.toContain("STEPWATCH_SESSION_SECRET");
    expect(JSON.parse(r.output)).toContain("DEPLOY_TOKEN");
  });
});

describe("callWebhook", () => {
  it("posts ids only (never the note) and reports a non-2xx as failed", async () => {
    const seen: Array<{ method?: string; body: string; auth?: string }> = [];
    let status = 202;
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        seen.push({ method: req.method, body, auth: req.headers.authorization });
        res.writeHead(status).end("queued");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/restart?token=secret`;
    try {
      const action = { kind: "webhook" as const, url, method: "POST" as const, headers: { authorization: "Bearer s3" }, timeoutSeconds: 30 };
      const ok = await callWebhook(action, { backendId: "a", eventId: 7, requestedBy: "ana" });
      expect(ok).toMatchObject({ ok: true, exitCode: null, error: null });
      expect(ok.output).toBe("HTTP 202\nqueued");
      expect(seen[0]).toEqual({ method: "POST", body: JSON.stringify({ backend: "a", event: 7, requestedBy: "ana" }), auth: "Bearer s3" });
      status = 500;
      const bad = await callWebhook(action, { backendId: "a", eventId: 8, requestedBy: "ana" });
      expect(bad).toMatchObject({ ok: false, error: "HTTP 500" });
      // The description kept for the audit row shows neither headers nor the query string (nor userinfo).
      expect(describeAction(action)).toBe(`webhook: POST ${url.split("?")[0]}?***`);
      expect(describeAction({ ...action, url: url.replace("//", "//ops:pw@") })).toBe(`webhook: POST ${url.split("?")[0].replace("//", "//***@")}?***`);
    } finally {
      server.close();
    }
  });

  it("gives up at the webhook's own timeoutSeconds", async () => {
    const held: http.ServerResponse[] = [];
    const server = http.createServer((req, res) => {
      req.resume();
      held.push(res); // headers never come
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/never`;
    try {
      const r = await callWebhook({ kind: "webhook", url, method: "POST", headers: {}, timeoutSeconds: 0.3 }, { backendId: "a", eventId: 1, requestedBy: "ana" });
      expect(r).toMatchObject({ ok: false, error: "no complete answer within 300 ms" });
    } finally {
      for (const res of held) res.destroy();
      server.close();
    }
  });
});

describe("runCommand killOnExit (evidence commands)", () => {
  /** Starts a node process that runs one hung command through runCommand, then exits as stepwatch would. */
  async function leftoverAfterExit(killOnExit: boolean): Promise<number> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-killonexit-"));
    const pidFile = path.join(dir, "pid");
    const script = path.join(dir, "run.ts");
    const hang = `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`;
    fs.writeFileSync(
      script,
      `import fs from "node:fs";
import { runCommand } from ${JSON.stringify(path.resolve("lib/restart/execute.ts"))};
void runCommand([${JSON.stringify(node)}, "-e", ${JSON.stringify(hang)}], { timeoutMs: 600_000, killOnExit: ${killOnExit} });
const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(pidFile)}) && fs.readFileSync(${JSON.stringify(pidFile)}, "utf8")) { clearInterval(t); process.exit(0); } }, 20);
setTimeout(() => process.exit(3), 60_000);
`,
    );
    const { spawnSync } = await import("node:child_process");
    const r = spawnSync(node, ["--import", "tsx", script], { timeout: 90_000, stdio: "pipe" });
    expect(r.status, r.stderr.toString()).toBe(0);
    const pid = Number(fs.readFileSync(pidFile, "utf8"));
    fs.rmSync(dir, { recursive: true, force: true });
    return pid;
  }

  it("kills a hung evidence command when stepwatch exits (without it, the command outlives stepwatch)", async () => {
    const kept = await leftoverAfterExit(false);
    try {
      expect(alive(kept)).toBe(true);
    } finally {
      process.kill(-kept, "SIGKILL");
    }
    const killed = await leftoverAfterExit(true);
    const deadline = Date.now() + 10_000;
    while (alive(killed) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(alive(killed)).toBe(false);
  }, 120_000);
});
