/**
 * Helpers shared by the faults-* and security-* integration tests: start the real built app with
 * a config written to a temp dir, talk to it like a browser or a script would (cookies, Origin),
 * and small scripts that stand in for restart commands.
 */
import fs from "node:fs";
import path from "node:path";
import { Agent, fetch as undiciFetch } from "undici";
import { assertBuilt, getJson, spawnApp, waitFor, type RunningApp } from "./app-support";

export { assertBuilt, getJson, waitFor, type RunningApp };

/** Starts `next start` with the env and waits until /api/fleet answers (fails with the app's output if it exits). */
export async function startApp(env: Record<string, string>, port?: number): Promise<RunningApp> {
  const a = await spawnApp(env, port);
  await waitFor(
    "the app answering /api/fleet",
    async () => {
      if (a.proc.exitCode !== null || a.proc.signalCode !== null) throw new Error(`the app exited:\n${a.output()}`);
      // 401: up, with access.read "signed-in" (the read gate answers only once the runtime started).
      const status = (await getJson(`${a.url}/api/fleet`))?.status;
      return status === 200 || status === 401;
    },
    60_000,
  );
  return a;
}

/** SIGKILL to the app's whole process group (no shutdown hooks run: a crash, a power cut). */
export async function killApp(app: RunningApp): Promise<void> {
  try {
    process.kill(-app.proc.pid!, "SIGKILL");
  } catch {
    /* already gone */
  }
  await app.exited;
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

const agents = new Map<string, Agent>();
/** An HTTP client whose connections leave from `address` (any 127.x.y.z works on Linux loopback). */
function agentFrom(address: string): Agent {
  let a = agents.get(address);
  if (!a) {
    a = new Agent({ localAddress: address });
    agents.set(address, a);
  }
  return a;
}

/**
 * One request to the app; never follows redirects, never throws on a status. `from` picks the
 * client's source address (127.0.0.2, ...), so tests can be several clients, or a trusted proxy.
 */
export async function call(
  url: string,
  opts: { method?: string; body?: string; headers?: Record<string, string>; cookie?: string; origin?: string; from?: string } = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.origin) headers.origin = opts.origin;
  if (opts.body !== undefined && !headers["content-type"]) headers["content-type"] = "application/json";
  const init = { method: opts.method ?? "GET", headers, body: opts.body, redirect: "manual" as const, signal: AbortSignal.timeout(30_000) };
  const res = opts.from ? await undiciFetch(url, { ...init, dispatcher: agentFrom(opts.from) }) : await fetch(url, init);
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON (a page) */
  }
  return { status: res.status, headers: res.headers as Headers, text, json };
}

/** Signs in through POST /api/session; returns the cookie header to send back. */
export async function signIn(app: RunningApp, name: string, password: string): Promise<string> {
  const r = await call(`${app.url}/api/session`, { method: "POST", body: JSON.stringify({ name, password }), origin: app.url });
  if (r.status !== 200) throw new Error(`sign-in as ${name} failed: ${r.status} ${r.text}`);
  const set = r.headers.get("set-cookie") ?? "";
  const m = /stepwatch_session=([^;]+)/.exec(set);
  if (!m) throw new Error(`no session cookie in ${set}`);
  return `stepwatch_session=${m[1]}`;
}

/** POST /api/backends/{id}/restart as a signed-in operator from the page's own origin. */
export function askRestart(app: RunningApp, cookie: string, id: string, body: Record<string, unknown> = { confirm: id }): Promise<HttpAnswer> {
  return call(`${app.url}/api/backends/${id}/restart`, { method: "POST", body: JSON.stringify(body), cookie, origin: app.url });
}

/** Writes a small Node script into `dir` and returns the argv that runs it with this node. */
export function nodeScript(dir: string, name: string, source: string, args: string[] = []): string[] {
  const file = path.join(dir, `${name}.cjs`);
  fs.writeFileSync(file, source);
  return [process.execPath, file, ...args];
}

/** Whether a process is gone (a zombie waiting for a reaper counts as gone: it runs nothing). */
export function processGone(pid: number): boolean {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    return /^State:\s+Z/m.test(status);
  } catch {
    return true;
  }
}

/** Best-effort end of a process this test started (by pid, never by name). */
export function killPid(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    /* gone */
  }
}
