/**
 * `stepwatch check <url> [--proxy] [--wait SECONDS] [--json]` (the bundle `npm run build:cli` makes,
 * dist/stepwatch.cjs: one file, no node_modules) or `npm run --silent check -- <url> ...`.
 * For cron, systemd timers and Kubernetes exec probes. Exit codes: 0 healthy (idle, busy, sleeping,
 * proxy up), 1 stuck, 2 down, 3 cannot judge (no-metrics, unknown, starting, stalled), 64 bad usage.
 */
import { parseArgs } from "node:util";
import { checkBackend, checkProxy, exitCode, EXIT, UnresolvedHostError, WaitTooShortError, type CheckResult } from "../check/oneshot";
import { STATE_INFO, type BackendState } from "../core/states";
import { PROBE_CHOICES, type ProbeChoice } from "../core/types";
import { ENGINE_CHOICES, ENGINE_LABELS, type EngineChoice } from "../core/engine";

const USAGE = `usage: stepwatch check <url> [--proxy] [--wait SECONDS] [--json]
          [--api-key KEY | --api-key env:NAME] [--model NAME] [--timeout SECONDS] [--probe-timeout SECONDS]
          [--engine ${ENGINE_CHOICES.join("|")}] [--probe ${PROBE_CHOICES.join("|")}]

Reads <url>/metrics (never sends a request while work is running or waiting). With work, waits
--wait seconds (default 30) and reads again, once more if there was no progress. Idle: one
tiny probe (--probe auto: /v1/completions, once /v1/embeddings on 404/405, TGI's /generate;
--probe none: idle from metrics alone). Never probed: a sleeping server (vLLM sleep mode,
llama.cpp --sleep-idle-seconds, whose /props is read before /metrics), only deferred requests
waiting, Ollama. --engine auto detects vLLM, llama.cpp, SGLang, TGI and Ollama. SGLang needs a
window of 150 s (2 x --wait): without --wait the check waits 75 s for it; a shorter --wait is a
usage error. A refused connection is read again after 1 s, not --wait; a host that does not
resolve is a usage error.
--proxy: only GET <url>/v1/models; a failed answer is asked once more after --wait seconds
(two failures in a row: down).
States: idle, busy, sleeping, stalled, stuck, starting, down, no-metrics, unknown.
Exit: 0 healthy (idle, busy, sleeping), 1 stuck, 2 down, 3 cannot judge (also a probe answered
401/403: the API key is missing), 64 usage error.`;

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
  // `stepwatch replay|advise BACKEND ...` (lib/cli/replay.ts): the server's record, not a backend; flags of their own.
  const sub = process.argv[2];
  if (sub === "replay" || sub === "advise") {
    // Loaded only here: replay brings the config's zod schemas, which a probe's `check` never needs
    // and which were most of what the bundle evaluated at start (bench/cli-start.ts).
    const { replayMain } = await import("./replay");
    process.exitCode = await replayMain(sub, process.argv.slice(3));
    return;
  }
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
        engine: { type: "string" },
        probe: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (err) {
    fail((err as Error).message);
  }
  const { values } = parsed;
  // `stepwatch check <url>` (the bundled CLI's bin) and `npm run check -- <url>` both: the subcommand is optional.
  const positionals = parsed.positionals[0] === "check" ? parsed.positionals.slice(1) : parsed.positionals;
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
  const engine = values.engine ?? "auto";
  if (!(ENGINE_CHOICES as readonly string[]).includes(engine)) fail(`--engine must be one of ${ENGINE_CHOICES.join(", ")}, got "${engine}"`);
  const probe = values.probe ?? "auto";
  if (!(PROBE_CHOICES as readonly string[]).includes(probe)) fail(`--probe must be one of ${PROBE_CHOICES.join(", ")}, got "${probe}"`);
  const target = {
    url: url.href.replace(/\/+$/, ""),
    apiKey: secret(values["api-key"]),
    model: values.model,
    engine: engine as EngineChoice,
    probe: probe as ProbeChoice,
  };
  const opts = {
    waitSeconds: seconds("wait", values.wait, 30),
    waitGiven: values.wait !== undefined,
    read: {
      timeoutMs: seconds("timeout", values.timeout, 10) * 1000,
      probeTimeoutMs: seconds("probe-timeout", values["probe-timeout"], 10) * 1000,
    },
  };
  let result: CheckResult;
  try {
    result = values.proxy ? await checkProxy(target, opts) : await checkBackend(target, opts);
  } catch (e) {
    if (e instanceof UnresolvedHostError || e instanceof WaitTooShortError) {
      process.stderr.write(`check: ${e.message}\n`);
      process.exit(EXIT.usage);
    }
    throw e;
  }
  for (const w of result.warnings) process.stderr.write(`check: warning: ${w}\n`);
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
  const engine = r.engine ? ` [${ENGINE_LABELS[r.engine]}]` : "";
  const problem = r.configProblem ? `  ! configuration: ${r.configProblem}\n` : "";
  return `${r.url}${engine}: ${label.toUpperCase()} (${facts.join(", ")})\n${problem}${r.reasons.map((x) => `  - ${x.text}\n`).join("")}`;
}

main().catch((err) => {
  process.stderr.write(`check: unexpected error: ${(err as Error).stack ?? err}\n`);
  process.exit(EXIT.cannotJudge);
});
