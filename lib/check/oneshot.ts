/**
 * The standalone check behind the CLI: the watcher's rules, run once. It reads; with work running
 * or waiting it waits and reads again, and once more if there was no progress; idle gets one
 * probe. Within each wait it re-reads every BUSY_RECHECK_MS and stops at the first read that
 * answers (progress: busy); stuck is still judged only from the reads the full waits apart. Nothing else is sent. Three cases need no full wait: a refused connection is read again
 * after a short moment (two refused reads are `down`), a host that does not resolve is a usage
 * error at once (UnresolvedHostError), and an answer without an engine's metrics is final.
 * The stuck window (2 x the wait) is at least what the engine's adapter allows (SGLang: 150 s):
 * the default wait is widened to it, a wait the caller chose is refused (WaitTooShortError).
 */
import { observe } from "./observe";
import { seenLate } from "./late";
import { judgeProxy } from "./proxy";
import { rulesOf } from "../engines/registry";
import { ENGINE_LABELS, type EngineKind } from "../core/engine";
import { readProxy, type BackendTarget, type ReadOptions } from "./read";
import type { BackendState, ProxyState } from "../core/states";
import { progressed, sameProcess } from "./classify";
import { DEFAULT_THRESHOLDS, figuresOf, type Figures, type Reading, type Verdict, reason, type Reason } from "../core/types";

export interface CheckOptions {
  waitSeconds: number;
  /**
   * True when the caller chose the wait (--wait): a window shorter than the engine's minimum is
   * then refused (WaitTooShortError) instead of widened, so a probe is not silently slower than asked.
   */
  waitGiven?: boolean;
  read?: ReadOptions;
  /** Sleeps between reads; injectable so tests of this function need not wait. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface CheckResult extends Figures {
  url: string;
  state: BackendState | ProxyState;
  healthy: boolean;
  /** The engine that answered (configured with --engine, or detected); null when none did. */
  engine?: EngineKind | null;
  /** Stuck, or down for longer than startupGraceSeconds (a down server may be loading weights). */
  restartRecommended?: boolean;
  /** A configuration problem that keeps the check from judging (the probe needs the API key: 401). */
  configProblem?: string | null;
  processStartTime: number | null;
  /** The pause between reads the check used: --wait, or widened to the engine's minimum window. */
  waitSeconds?: number;
  probeSent: boolean;
  reads: number;
  reasons: Reason[];
  models?: string[];
  /** Signs that the reads did not all come from one server (a load balancer in front); also on stderr. */
  warnings: string[];
}

/** The URL's host does not resolve (ENOTFOUND, EAI_AGAIN): the URL is wrong, not the server. */
export class UnresolvedHostError extends Error {
  constructor(
    readonly url: string,
    readonly detail: string,
  ) {
    super(`cannot resolve the host of ${url} (${detail}): check the URL`);
    this.name = "UnresolvedHostError";
  }
}

/**
 * The engine cannot be called stuck within 2 x --wait (SGLang refreshes its gauges every 40 steps,
 * so it needs 150 s): a check with that wait could only ever end `stalled` for a hung server.
 */
export class WaitTooShortError extends Error {
  constructor(
    readonly engine: EngineKind,
    readonly waitSeconds: number,
    readonly minWindowSeconds: number,
  ) {
    super(
      `${ENGINE_LABELS[engine]} needs at least ${minWindowSeconds} s without progress before it can be called stuck, ` +
        `and --wait ${waitSeconds} gives a window of ${2 * waitSeconds} s (2 x --wait): use --wait ${minimumWait(minWindowSeconds)} or more`,
    );
    this.name = "WaitTooShortError";
  }
}

/** The smallest wait whose window (2 x wait) covers `minWindowSeconds`. */
const minimumWait = (minWindowSeconds: number) => Math.ceil(minWindowSeconds / 2);

/**
 * The wait to use for `engine`: `waitSeconds` when its window (2 x wait) is at least the engine's
 * minimum stuck window; else the minimum's wait when the caller took the default, or a
 * WaitTooShortError when the caller chose it.
 */
export function waitForEngine(engine: EngineKind, waitSeconds: number, waitGiven: boolean): number {
  const min = rulesOf(engine).minStuckWindowSeconds;
  if (2 * waitSeconds >= min) return waitSeconds;
  if (waitGiven) throw new WaitTooShortError(engine, waitSeconds, min);
  return minimumWait(min);
}

/** A refused connection is read again after this long, not after --wait: nothing listens. */
export const REFUSED_RECHECK_MS = 1000;

const DNS_FAILURE = /^(ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL)\b/;

function unresolved(url: string, r: { outcome: string; error?: string }): UnresolvedHostError | null {
  return r.outcome === "error" && r.error && DNS_FAILURE.test(r.error) ? new UnresolvedHostError(url, r.error.split(":")[0]) : null;
}

const refused = (r: { outcome: string }) => r.outcome === "refused" || r.outcome === "reset";

/** Another read cannot change this within one check: the URL answered, but not with an engine's metrics, or refused us. */
function answeredWithoutMetrics(r: Reading): boolean {
  return r.noMetrics === true || (r.outcome === "http-error" && (r.status === 401 || r.status === 403));
}

/** States that a further read cannot change within one check. */
const FINAL: ReadonlySet<BackendState> = new Set(["idle", "busy", "sleeping", "stuck", "down", "no-metrics"]);
const MAX_READS = 3;

/**
 * With work in flight the check reads again this often within each --wait (docs/check.md): a busy
 * server is answered at the first read that shows progress, seconds in, not after the whole wait.
 */
export const BUSY_RECHECK_MS = 1500;

/**
 * Whether a read between the window's reads (`r`, judged against the window's last read `prev`)
 * ends the check. `busy` only on proof: the counters moved since `prev` (or every waiting request
 * is deferred, which even a first read calls busy); a flat read inside the engine's quiet time
 * (rule no-change-expected: SGLang's 40-step log cadence, llama.cpp's printed digits) is not, or a
 * hung SGLang would be called busy 1.5 s in. Otherwise as at one of the window's reads (idle after
 * its probe, sleeping, no metrics), except `stuck` and `down`: judged only at the window's reads.
 */
function answersEarly(verdict: Verdict, r: Reading, prev: Reading): boolean {
  if (verdict.state === "busy") {
    if (verdict.reasons.some((x) => x.rule === "deferred-only")) return true;
    const a = prev.metrics;
    const b = r.metrics;
    return !!a && !!b && sameProcess(a, b) && progressed(a, b);
  }
  if (verdict.state === "stuck" || verdict.state === "down") return false;
  return r.probe !== undefined || FINAL.has(verdict.state) || answeredWithoutMetrics(r);
}

export const EXIT = { healthy: 0, stuck: 1, down: 2, cannotJudge: 3, usage: 64 } as const;

export function exitCode(state: BackendState | ProxyState): number {
  // Sleeping is healthy: put to sleep on purpose (vLLM sleep mode, llama.cpp --sleep-idle-seconds).
  if (state === "idle" || state === "busy" || state === "sleeping" || state === "up") return EXIT.healthy;
  if (state === "stuck") return EXIT.stuck;
  if (state === "down") return EXIT.down;
  return EXIT.cannotJudge;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function checkBackend(target: BackendTarget, opts: CheckOptions): Promise<CheckResult> {
  const sleep = opts.sleep ?? realSleep;
  const given = opts.waitGiven ?? false;
  let wait = opts.waitSeconds;
  const notes: Reason[] = [];
  // The engine known before any read (--engine) is checked at once; a detected one after the first read.
  let engineChecked: EngineKind | null = null;
  const fitEngine = (engine: EngineKind | null | undefined) => {
    if (!engine || engine === engineChecked) return;
    engineChecked = engine;
    const fitted = waitForEngine(engine, wait, given);
    if (fitted !== wait) {
      notes.push(
        reason(
          "check-wait-widened",
          `waits ${fitted} s between reads, not the default ${wait} s: ${ENGINE_LABELS[engine]} needs at least ${rulesOf(engine).minStuckWindowSeconds} s without progress before it can be called stuck`,
        ),
      );
      wait = fitted;
    }
  };
  if (target.engine && target.engine !== "auto") fitEngine(target.engine);
  // Two waits without progress are "stuck" here: the whole window of the standalone check.
  const thresholds = () => ({ ...DEFAULT_THRESHOLDS, stuckAfterSeconds: 2 * wait });
  const history: Reading[] = [];
  let verdict: Verdict | undefined;
  let probeSent = false;
  // Reads between the window's reads that answered nothing yet: counted, not judged by again.
  let rereads = 0;
  const look = async () => {
    const step = await observe(target, history, { thresholds: thresholds(), read: opts.read, now: opts.now });
    const dns = unresolved(target.url, step.reading);
    if (dns) throw dns;
    return step;
  };
  while (history.length < MAX_READS) {
    const prev = history.at(-1);
    let step: Awaited<ReturnType<typeof look>>;
    if (!prev) step = await look();
    else if (refused(prev)) {
      await sleep(Math.min(REFUSED_RECHECK_MS, wait * 1000));
      step = await look();
    } else {
      // The wait is slept in slices of BUSY_RECHECK_MS with a read after each: a read that already
      // answers (progress is busy) ends the check, one that does not is dropped, so the window's
      // reads (0, 1 and 2 waits) and what they judge (stuck: two waits and the engine's minimum)
      // are exactly those of a check that slept the whole wait. The slept time is counted, not
      // the clock, so a window is never shorter than before (the re-reads' own time only adds).
      let left = wait * 1000;
      for (;;) {
        const pause = Math.min(BUSY_RECHECK_MS, left);
        await sleep(pause);
        left -= pause;
        step = await look();
        if (left <= 0 || answersEarly(step.verdict, step.reading, prev)) break;
        rereads++;
      }
    }
    history.push(step.reading);
    verdict = step.verdict;
    if (step.reading.probe) probeSent = true;
    // Before the early stop: a --wait the engine cannot judge by is refused on every run, idle or
    // not, so a wrong probe setting shows when it is deployed, not first under load.
    fitEngine(step.reading.engine);
    // One probe at most: its answer decides; a failed one is reported, not retried.
    if (probeSent || FINAL.has(verdict.state) || answeredWithoutMetrics(step.reading)) break;
  }
  const last = history[history.length - 1];
  const m = [...history].reverse().find((r) => r.metrics)?.metrics ?? null;
  return {
    url: target.url,
    state: verdict!.state,
    healthy: verdict!.healthy,
    engine: [...history].reverse().find((r) => r.engine)?.engine ?? null,
    restartRecommended: verdict!.restartRecommended,
    configProblem: verdict!.configProblem ?? null,
    ...figuresOf(last, verdict!),
    processStartTime: m?.processStartTime ?? null,
    waitSeconds: wait,
    probeSent,
    reads: history.length + rereads,
    reasons: [...notes, ...verdict!.reasons],
    warnings: mixedServerWarnings(history),
  };
}

/**
 * Signs that consecutive reads of `<url>/metrics` came from different servers, as behind a load
 * balancer (docs/check.md): a process start time that goes back (which no restart does; a server
 * flipping back and forth between two goes back too), or, without start times, counters that
 * change process more than once in one check. A real restart moves the start time forward, once,
 * so a balancer whose second read lands on a newer server is not caught. Clock-free on purpose:
 * the server's clock is not ours.
 */
export function mixedServerWarnings(history: Reading[]): string[] {
  const ms = history.map((r) => r.metrics).filter((m): m is NonNullable<typeof m> => m !== null);
  const starts = ms.map((m) => m.processStartTime).filter((s): s is number => s !== null);
  const why: string[] = [];
  for (let i = 1; i < starts.length; i++) {
    if (starts[i] < starts[i - 1] - 1e-3) why.push(`the process start time went back between reads (${starts[i - 1]} then ${starts[i]}), which no restart does`);
  }
  if (why.length === 0) {
    let changes = 0;
    for (let i = 1; i < ms.length; i++) if (!sameProcess(ms[i - 1], ms[i])) changes++;
    if (changes >= 2) why.push(`the server process changed ${changes} times in ${ms.length} reads`);
  }
  if (why.length === 0) return [];
  return [`the reads of /metrics look like they came from different servers: ${why[0]}. If this URL is a load balancer, check each backend directly, or use --proxy`];
}

/**
 * The proxy rule of the watcher (judgeProxy), run once: GET /v1/models; after a failed read, wait
 * and ask once more, because one failed read is not "down".
 */
export async function checkProxy(target: { url: string; apiKey?: string }, opts: CheckOptions): Promise<CheckResult> {
  const sleep = opts.sleep ?? realSleep;
  const read = () => readProxy(target, { ...opts.read, now: opts.now });
  const first = await read();
  const dns = unresolved(target.url, first);
  if (dns) throw dns;
  let previous = null;
  let r = first;
  if (first.outcome !== "ok") {
    await sleep(refused(first) ? Math.min(REFUSED_RECHECK_MS, opts.waitSeconds * 1000) : opts.waitSeconds * 1000);
    previous = seenLate(first) ? null : first; // a read seen late does not count towards "down"
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
    warnings: [],
  };
}
