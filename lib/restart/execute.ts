/**
 * Running a configured restart action, once. A command is an argv run with spawn (never a shell:
 * nothing from a request can become shell syntax, and the operator's note never reaches argv), in
 * its own process group so a timeout kills the whole tree, with stdout+stderr captured up to a cap.
 * A webhook goes through lib/net/http (timeout, size cap, no redirects). Never throws: the result
 * is data recorded on the restart event.
 */
import { spawn } from "node:child_process";
import type { RestartAction } from "../config";
import { httpRequest } from "../net/http";
import { publicUrl } from "../net/public-url";

/** An environment for a child process (Next's ProcessEnv type would also demand NODE_ENV). */
export type Env = Record<string, string | undefined>;

export const MAX_OUTPUT_BYTES = 8 * 1024;
/** After SIGTERM to the group, how long before SIGKILL. */
const KILL_GRACE_MS = 2_000;
/** After the command exits, how long to wait for its pipes to drain (a backgrounded child may hold them). */
const DRAIN_MS = 500;

export interface ActionResult {
  ok: boolean;
  exitCode: number | null;
  output: string;
  error: string | null;
  finishedAt: number;
  /** Bytes a command printed, kept or not (an evidence bundle records them). */
  outputBytes?: number;
}

/** A short description for the audit row and the UI: no header values, no URL userinfo or query (tokens live there). */
export function describeAction(action: RestartAction): string {
  if (action.kind === "command") {
    const text = action.command.map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(" ");
    return `command: ${text.length > 200 ? `${text.slice(0, 200)}…` : text}`;
  }
  return `webhook: ${action.method} ${publicUrl(action.url)}`;
}

/** Appends chunks up to `max` bytes and remembers how much was dropped. */
class Capture {
  private chunks: Buffer[] = [];
  private kept = 0;
  dropped = 0;
  constructor(private readonly max: number) {}
  push(chunk: Buffer): void {
    const room = this.max - this.kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(part);
      this.kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(0, room));
  }
  get total(): number {
    return this.kept + this.dropped;
  }
  text(): string {
    const s = Buffer.concat(this.chunks).toString("utf8");
    return this.dropped ? `${s}\n… [${this.dropped} more bytes not kept]` : s;
  }
}

export interface CommandOptions {
  timeoutMs: number;
  maxOutputBytes?: number;
  now?: () => number;
  env?: Env;
  /**
   * Starts the command's deadline: calls `expire` when its time is up and returns a cancel
   * (default: a timer of timeoutMs from the spawn). The clock, injected: a test expires it on an
   * event (the command has started what it must kill), which a fixed timer cannot promise on a
   * loaded machine.
   */
  deadline?: (expire: () => void, timeoutMs: number) => () => void;
  /**
   * Kill the command's process group if stepwatch exits while it runs (evidence commands: a hung
   * `py-spy dump` must not outlive the process whose timer was to kill it). Not for a restart
   * command, which may be bringing the server back as stepwatch stops. Nothing can do this after a
   * `kill -9` of stepwatch; the command's own timeout is gone with it.
   */
  killOnExit?: boolean;
}

/** Process groups to kill when this process exits (CommandOptions.killOnExit). */
const killOnExit = new Set<number>();
let exitHookInstalled = false;
function killLeftoversOnExit(pid: number): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // "exit" handlers run synchronously; process.kill is synchronous.
    process.once("exit", () => {
      for (const p of killOnExit) {
        try {
          process.kill(-p, "SIGKILL");
        } catch {
          /* already gone */
        }
      }
    });
  }
  killOnExit.add(pid);
  return () => killOnExit.delete(pid);
}

function timerDeadline(expire: () => void, timeoutMs: number): () => void {
  const t = setTimeout(expire, timeoutMs);
  return () => clearTimeout(t);
}

export function runCommand(argv: string[], opts: CommandOptions): Promise<ActionResult> {
  const now = opts.now ?? Date.now;
  const out = new Capture(opts.maxOutputBytes ?? MAX_OUTPUT_BYTES);
  return new Promise((resolve) => {
    let settled = false;
    let timedOut = false;
    let cancelDeadline = () => {};
    const finish = (r: Omit<ActionResult, "output" | "finishedAt">) => {
      if (settled) return;
      settled = true;
      cancelDeadline();
      clearTimeout(killTimer);
      resolve({ ...r, output: out.text(), outputBytes: out.total, finishedAt: now() });
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(argv[0], argv.slice(1), {
        shell: false,
        detached: true, // its own process group: process.kill(-pid) reaches the whole tree
        stdio: ["ignore", "pipe", "pipe"],
        env: (opts.env ?? process.env) as NodeJS.ProcessEnv,
      });
    } catch (e) {
      resolve({ ok: false, exitCode: null, output: "", error: `cannot run ${argv[0]}: ${(e as Error).message}`, finishedAt: now() });
      return;
    }
    let killTimer: NodeJS.Timeout | undefined;
    if (opts.killOnExit && child.pid) {
      const forget = killLeftoversOnExit(child.pid);
      child.once("exit", forget);
    }
    const killGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, signal);
      } catch {
        /* already gone */
      }
    };
    cancelDeadline = (opts.deadline ?? timerDeadline)(() => {
      if (settled) return;
      timedOut = true;
      killGroup("SIGTERM");
      killTimer = setTimeout(() => killGroup("SIGKILL"), KILL_GRACE_MS);
    }, opts.timeoutMs);
    child.stdout?.on("data", (c: Buffer) => out.push(c));
    child.stderr?.on("data", (c: Buffer) => out.push(c));
    child.on("error", (e) => finish({ ok: false, exitCode: null, error: `cannot run ${argv[0]}: ${e.message}` }));
    child.on("exit", (code, signal) => {
      // Resolve on exit, not on pipe close: a restart script that starts the server in the
      // background leaves a child holding our pipes, and that child must neither be waited for
      // nor killed. Give the pipes a moment to drain, then let go of them.
      const result =
        timedOut
          ? { ok: false, exitCode: code, error: `timed out after ${Math.round(opts.timeoutMs / 1000)} s; process group killed` }
          : code === 0
            ? { ok: true, exitCode: 0, error: null }
            : { ok: false, exitCode: code, error: code === null ? `killed by ${signal}` : `exited with status ${code}` };
      const drained = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(result);
      }, DRAIN_MS);
      child.once("close", () => {
        clearTimeout(drained);
        finish(result);
      });
    });
  });
}

export interface WebhookContext {
  backendId: string;
  eventId: number;
  requestedBy: string;
}

export async function callWebhook(
  action: Extract<RestartAction, { kind: "webhook" }>,
  ctx: WebhookContext,
  now: () => number = Date.now,
): Promise<ActionResult> {
  const hasBody = action.method !== "GET";
  const res = await httpRequest(action.url, {
    method: action.method,
    headers: { ...(hasBody ? { "content-type": "application/json" } : {}), ...action.headers },
    // Ids only: the operator's free-text note stays in stepwatch's own records.
    body: hasBody ? JSON.stringify({ backend: ctx.backendId, event: ctx.eventId, requestedBy: ctx.requestedBy }) : undefined,
    timeoutMs: action.timeoutSeconds * 1000,
    maxBytes: MAX_OUTPUT_BYTES,
  });
  const output = res.status !== undefined ? `HTTP ${res.status}\n${res.body}` : res.body;
  return {
    ok: res.outcome === "ok",
    exitCode: null,
    output: output.slice(0, MAX_OUTPUT_BYTES),
    error: res.outcome === "ok" ? null : (res.error ?? res.outcome),
    finishedAt: now(),
  };
}

/**
 * The environment a restart command runs with: stepwatch's own, minus STEPWATCH_* (the session
 * secret) and minus every variable the config read a secret from (API keys, operator passwords,
 * webhook tokens). The command's output is shown to anyone who can read the dashboard, so a
 * script that prints its environment must not print those. Everything else (PATH, a deploy token
 * meant for the command) is kept.
 */
export function restartCommandEnv(env: Env, secretEnvNames: readonly string[]): Env {
  const dropped = new Set(secretEnvNames);
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith("STEPWATCH_") && !dropped.has(name)));
}

export interface ExecuteOptions {
  /** For a command: its whole environment (restartCommandEnv), never stepwatch's own by default. */
  env: Env;
  now?: () => number;
}

export function executeAction(action: RestartAction, ctx: WebhookContext, opts: ExecuteOptions): Promise<ActionResult> {
  const now = opts.now ?? Date.now;
  return action.kind === "command"
    ? runCommand(action.command, { timeoutMs: action.timeoutSeconds * 1000, now, env: opts.env })
    : callWebhook(action, ctx, now);
}
