/**
 * Capturing an incident's evidence (issue 32): the engine's own status routes and the operator's
 * evidence commands, run once, bounded in time and size, before anything restarts the server. The
 * raw /metrics bodies and the timeline come from the watcher's memory and the database
 * (lib/watcher/evidence.ts assembles the bundle and stores it); this file only asks and runs.
 *
 * Commands run like the restart command (runCommand: argv, never a shell; their own process group,
 * killed at their timeout; output capped while it is read). Their env is the restart commands'
 * (stepwatch's own secrets removed) plus what the config gives them; values given as "env:NAME"
 * are secrets: blanked out of everything the command printed, never stored, logged or shown.
 */
import type { EngineKind } from "../core/engine";
import {
  MAX_COMMAND_OUTPUT_BYTES,
  MAX_STATUS_BODY_BYTES,
  redact,
  safeText,
  type EvidenceCommandRun,
  type EvidenceStatusRoute,
} from "../core/evidence";
import { ADAPTERS } from "../engines/registry";
import { endpoint } from "../check/read";
import { httpRequest } from "../net/http";
import type { EvidenceCommandConfig } from "../config";
import { runCommand, type Env } from "./execute";

/** A capture under way or done: its bundle's id, and when it ends (never rejects). */
export interface Capture {
  id: number;
  done: Promise<void>;
}

/** What the restart verb needs of the evidence (RestartDeps.evidence; lib/watcher/evidence.ts keeps the incidents). */
export interface EvidenceSource {
  /** The incident's bundle, captured now when it has none yet; null when nothing could be stored. */
  forRestart(backendId: string): Capture | null;
}

/** One status GET's deadline: a hung engine must not hold the capture (and so the restart) long. */
export const STATUS_TIMEOUT_MS = 2_000;

/**
 * The GETs the engine's adapter already reads (liveness, the look before the exposition, the
 * routes of an engine without one) plus /v1/models: each is free of request slots and runs
 * nothing that generates (SGLang's and TGI's /health may, so their adapters name a static route
 * instead, and /health is never asked of them here either). Invariant 1 holds: no probe.
 */
export function statusRoutesOf(engine: EngineKind | undefined): string[] {
  const paths = new Set<string>();
  if (engine) {
    const a = ADAPTERS[engine];
    paths.add(a.rules.livenessPath);
    if (a.reads.before) paths.add(a.reads.before.path);
    if (a.reads.whenEmpty) paths.add(a.reads.whenEmpty.path);
    if (a.reads.withoutMetrics) {
      paths.add(a.reads.withoutMetrics.liveness.path);
      paths.add(a.reads.withoutMetrics.models.path);
    }
  }
  paths.add("/v1/models");
  return [...paths];
}

export async function fetchStatusRoute(
  target: { url: string; apiKey?: string },
  path: string,
  opts: { timeoutMs?: number; secrets?: readonly string[] } = {},
): Promise<EvidenceStatusRoute> {
  const res = await httpRequest(endpoint(target.url, path), {
    method: "GET",
    timeoutMs: opts.timeoutMs ?? STATUS_TIMEOUT_MS,
    maxBytes: MAX_STATUS_BODY_BYTES,
    headers: { accept: "*/*", ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}) },
  });
  const secrets = [...(opts.secrets ?? []), ...(target.apiKey ? [target.apiKey] : [])];
  return {
    path,
    outcome: res.outcome,
    status: res.status ?? null,
    latencyMs: Math.round(res.latencyMs),
    body: safeText(redact(res.outcome === "ok" || res.status !== undefined ? res.body : (res.error ?? ""), secrets)),
  };
}

export interface CommandRunOptions {
  /** The restart commands' environment (restartCommandEnv): stepwatch's own secrets are not in it. */
  env: Env;
  /** Bytes of output kept (at most MAX_COMMAND_OUTPUT_BYTES). */
  maxBytes: number;
  now?: () => number;
  /** For tests: when the command's time is up (runCommand's deadline). */
  deadline?: (expire: () => void, timeoutMs: number) => () => void;
}

/** The command's entry while it runs: no finish yet. */
export function runningEntry(c: EvidenceCommandConfig, startedAt: number): EvidenceCommandRun {
  return { name: c.name, argv: [...c.command], startedAt, finishedAt: null, durationMs: null, exitCode: null, error: null, timedOut: false, output: "", outputBytes: 0 };
}

/** Runs one evidence command to its end (or its timeout: the group is killed). Never throws. */
export async function runEvidenceCommand(c: EvidenceCommandConfig, opts: CommandRunOptions): Promise<EvidenceCommandRun> {
  const now = opts.now ?? Date.now;
  const startedAt = now();
  const r = await runCommand(c.command, {
    timeoutMs: c.timeoutSeconds * 1000,
    maxOutputBytes: Math.min(opts.maxBytes, MAX_COMMAND_OUTPUT_BYTES),
    now,
    env: { ...opts.env, ...c.env },
    deadline: opts.deadline,
    killOnExit: true,
  });
  const timedOut = r.error?.startsWith("timed out") ?? false;
  return {
    ...runningEntry(c, startedAt),
    finishedAt: r.finishedAt,
    durationMs: r.finishedAt - startedAt,
    exitCode: r.exitCode,
    error: r.error === null ? null : safeText(redact(r.error, c.secretValues)),
    timedOut,
    output: safeText(redact(r.output, c.secretValues)),
    outputBytes: r.outputBytes ?? 0,
  };
}
