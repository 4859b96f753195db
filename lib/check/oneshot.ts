/**
 * The standalone check behind the CLI: the watcher's rules, run once. It reads; with work running
 * or waiting it waits and reads again, and once more if there was no progress; idle gets one
 * probe. Nothing else is sent.
 */
import { observe } from "./observe";
import { judgeProxy } from "./proxy";
import { readProxy, type BackendTarget, type ReadOptions } from "./read";
import type { BackendState, ProxyState } from "./states";
import { DEFAULT_THRESHOLDS, figuresOf, type Figures, type Reading, type Verdict } from "./types";

export interface CheckOptions {
  waitSeconds: number;
  read?: ReadOptions;
  /** Sleeps between reads; injectable so tests of this function need not wait. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface CheckResult extends Figures {
  url: string;
  state: BackendState | ProxyState;
  healthy: boolean;
  processStartTime: number | null;
  probeSent: boolean;
  reads: number;
  reasons: string[];
  models?: string[];
}

/** States that a further read cannot change within one check. */
const FINAL: ReadonlySet<BackendState> = new Set(["idle", "busy", "stuck", "down", "no-metrics"]);
const MAX_READS = 3;

export const EXIT = { healthy: 0, stuck: 1, down: 2, cannotJudge: 3, usage: 64 } as const;

export function exitCode(state: BackendState | ProxyState): number {
  if (state === "idle" || state === "busy" || state === "up") return EXIT.healthy;
  if (state === "stuck") return EXIT.stuck;
  if (state === "down") return EXIT.down;
  return EXIT.cannotJudge;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function checkBackend(target: BackendTarget, opts: CheckOptions): Promise<CheckResult> {
  const sleep = opts.sleep ?? realSleep;
  // Two waits without progress are "stuck" here: the whole window of the standalone check.
  const thresholds = { ...DEFAULT_THRESHOLDS, stuckAfterSeconds: 2 * opts.waitSeconds };
  const history: Reading[] = [];
  let verdict: Verdict | undefined;
  let probeSent = false;
  while (history.length < MAX_READS) {
    if (history.length > 0) await sleep(opts.waitSeconds * 1000);
    const step = await observe(target, history, { thresholds, read: opts.read, now: opts.now });
    history.push(step.reading);
    verdict = step.verdict;
    if (step.reading.probe) probeSent = true;
    // One probe at most: its answer decides; a failed one is reported, not retried.
    if (probeSent || FINAL.has(verdict.state)) break;
  }
  const last = history[history.length - 1];
  const m = [...history].reverse().find((r) => r.metrics)?.metrics ?? null;
  return {
    url: target.url,
    state: verdict!.state,
    healthy: verdict!.healthy,
    ...figuresOf(last, verdict!),
    processStartTime: m?.processStartTime ?? null,
    probeSent,
    reads: history.length,
    reasons: verdict!.reasons,
  };
}

/**
 * The proxy rule of the watcher (judgeProxy), run once: GET /v1/models; after a failed read, wait
 * and ask once more, because one failed read is not "down".
 */
export async function checkProxy(target: { url: string; apiKey?: string }, opts: CheckOptions): Promise<CheckResult> {
  const sleep = opts.sleep ?? realSleep;
  const read = () => readProxy(target, { ...opts.read, now: opts.now });
  const first = await read();
  let previous = null;
  let r = first;
  if (first.outcome !== "ok") {
    await sleep(opts.waitSeconds * 1000);
    previous = first;
    r = await read();
  }
  const j = judgeProxy(previous, r);
  return {
    url: target.url,
    state: j.state,
    healthy: j.state === "up",
    ...figuresOf(null, null),
    processStartTime: null,
    probeSent: false,
    reads: previous ? 2 : 1,
    reasons: j.reasons,
    models: r.models,
  };
}
