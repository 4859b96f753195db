/**
 * `npm run --silent check -- <url> [--proxy] [--wait SECONDS] [--json]`
 * For cron, systemd timers and Kubernetes exec probes. Exit codes: 0 healthy (idle, busy, proxy
 * up), 1 stuck, 2 down, 3 cannot judge (no-metrics, unknown, starting, stalled), 64 bad usage.
 */
import { parseArgs } from "node:util";
import { checkBackend, checkProxy, exitCode, EXIT, type CheckResult } from "../check/oneshot";
import { STATE_INFO, type BackendState } from "../check/states";

const USAGE = `usage: npm run --silent check -- <url> [--proxy] [--wait SECONDS] [--json]
          [--api-key KEY | --api-key env:NAME] [--model NAME] [--timeout SECONDS] [--probe-timeout SECONDS]

Reads <url>/metrics (never sends a request while work is running or waiting). With work, waits
--wait seconds (default 30) and reads again, once more if there was no progress. Idle: one
tiny probe. --proxy: only GET <url>/v1/models; a failed answer is asked once more after
--wait seconds (two failures in a row: down).
Exit: 0 healthy, 1 stuck, 2 down, 3 cannot judge, 64 usage error.`;

function fail(message: string): never {
  process.stderr.write(`check: ${message}\n\n${USAGE}\n`);
  process.exit(EXIT.usage);
}

function seconds(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) fail(`--${name} must be a number of seconds >= 0, got "${value}"`);
  return n;
}

function secret(value: string | undefined): string | undefined {
  if (!value?.startsWith("env:")) return value;
  const name = value.slice(4);
  const v = process.env[name];
  if (!v) fail(`--api-key env:${name}: environment variable ${name} is not set`);
  return v;
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        proxy: { type: "boolean", default: false },
        json: { type: "boolean", default: false },
        wait: { type: "string" },
        "api-key": { type: "string" },
        model: { type: "string" },
        timeout: { type: "string" },
        "probe-timeout": { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (err) {
    fail((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length !== 1) fail(positionals.length === 0 ? "a URL is required" : `one URL expected, got ${positionals.length}`);
  let url: URL;
  try {
    url = new URL(positionals[0]);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
  } catch {
    fail(`"${positionals[0]}" is not an http(s) URL`);
  }
  const target = { url: url.href.replace(/\/+$/, ""), apiKey: secret(values["api-key"]), model: values.model };
  const opts = {
    waitSeconds: seconds("wait", values.wait, 30),
    read: {
      timeoutMs: seconds("timeout", values.timeout, 10) * 1000,
      probeTimeoutMs: seconds("probe-timeout", values["probe-timeout"], 10) * 1000,
    },
  };
  const result = values.proxy ? await checkProxy(target, opts) : await checkBackend(target, opts);
  process.stdout.write(values.json ? `${JSON.stringify(result)}\n` : human(result));
  process.exitCode = exitCode(result.state);
}

function human(r: CheckResult): string {
  const label = r.state in STATE_INFO ? STATE_INFO[r.state as BackendState].label : r.state;
  const num = (x: number | null, unit: string) => (x === null ? null : `${x.toFixed(1)} ${unit}`);
  const facts = [
    r.running === null ? null : `${r.running} running, ${r.waiting} waiting`,
    num(r.stepsPerSecond, "steps/s"),
    num(r.generationTokensPerSecond, "gen tok/s"),
    num(r.promptTokensPerSecond, "prompt tok/s"),
    r.kvCacheUsage === null ? null : `KV ${(r.kvCacheUsage * 100).toFixed(1)}%`,
    `${r.reads} read${r.reads === 1 ? "" : "s"}`,
    r.probeSent ? "1 probe" : "no probe",
  ].filter(Boolean);
  return `${r.url}: ${label.toUpperCase()} (${facts.join(", ")})\n${r.reasons.map((x) => `  - ${x}\n`).join("")}`;
}

main().catch((err) => {
  process.stderr.write(`check: unexpected error: ${(err as Error).stack ?? err}\n`);
  process.exit(EXIT.cannotJudge);
});
