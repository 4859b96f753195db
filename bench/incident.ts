/**
 * Benchmark 1: the incident, replayed at compressed time.
 *
 * Two worlds get the same simulated vLLM engine (sim/model.ts, few slots) and the same
 * seeded batch job (2 to 4 long requests at a time, with idle gaps) for a simulated day:
 * - OLD: the incident's watchdogs. #1 sends a real chat request every 5 min, gives up after 45 s,
 *   restarts after 5 failures in a row; #2 restarts on many HTTP 500s. A restart fails every
 *   in-flight request with 500 and keeps the model away while the weights reload.
 * - STEPWATCH: the real watcher (lib/watcher startWatcher -> observe -> readBackend/probe ->
 *   classify, storing in a temp SQLite file) on a virtual clock. Its HTTP goes through an undici
 *   MockAgent that answers /metrics with the simulator's real rendered exposition
 *   (sim/metrics.ts), so the real client, parser and classifier judge it. stepwatch restarts
 *   nothing on its own: its "restarts" are the restart recommendations it stored (transitions into
 *   stuck or down), i.e. what an operator who followed every one would have done.
 * Then one real hang (the engine stops stepping with 2 requests in flight) in each world: how long
 * until each notices (the old watchdog: its restart; stepwatch: its first "stuck" verdict).
 *
 * What is simulated rather than real: the clock (virtual, 1 s ticks for the engine and clients),
 * the socket (MockAgent instead of TCP), and the old watchdogs and the batch job, which are clients
 * modelled directly on the engine (they are not stepwatch code).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { MockAgent } from "undici";
import { openDb } from "../db/client";
import { transitions } from "../db/schema";
import { restartRecommended, type BackendState } from "../lib/core/states";
import { parseConfig } from "../lib/config";
import { DEFAULT_ENGINE_CONFIG, type RequestSpec } from "../sim/engine";
import { renderMetrics } from "../sim/metrics";
import { VllmSimModel, type SubmittedRequest } from "../sim/model";
import { HOUSEKEEPING_LOOPS, startWatcher } from "../lib/watcher";
import { reasonText, type Reason } from "../lib/core/types";
import { between, rng } from "./stats";
import { VirtualClock } from "./virtual-clock";
import { runWhenMain } from "./main";

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.UTC(2025, 0, 6); // a Monday; any fixed start keeps runs comparable

/** Every parameter of the replay, reported with the results. */
export const INCIDENT = {
  seed: 20250106,
  /** A GB10 with few slots: 8 tok/s alone, ~9 tok/s each at the limit of 3. */
  engine: { ...DEFAULT_ENGINE_CONFIG, maxNumSeqs: 3, singleRequestTokensPerSecond: 8, totalTokensPerSecondAtLimit: 27 },
  batch: {
    concurrency: [2, 4] as [number, number],
    phaseMinutes: [20, 60] as [number, number],
    activeHours: [1, 3] as [number, number],
    idleMinutes: [10, 40] as [number, number],
    promptTokens: [1500, 6000] as [number, number],
    maxTokens: [600, 1500] as [number, number],
    retryAfterSeconds: 30,
  },
  oldWatchdog: { intervalSeconds: 300, timeoutSeconds: 45, failuresToRestart: 5, promptTokens: 40, maxTokens: 32 },
  errorWatchdog: { intervalSeconds: 600, windowSeconds: 900, errorsToRestart: 6 },
  /** Nothing listens while ~19 GB of weights reload. */
  restartDownSeconds: 240,
  stepwatch: { pollIntervalSeconds: 5, stuckAfterSeconds: 120, idleProbeSeconds: 60, probeTimeoutSeconds: 10 },
  hang: { concurrency: 2, atMinutes: 30, watchForMinutes: 60 },
};

export interface Phase {
  fromMs: number;
  toMs: number;
  concurrency: number;
}

/** The batch job's day: idle gaps, then active stretches whose concurrency changes every 20-60 min. */
export function batchSchedule(seed: number, durationMs: number, p = INCIDENT.batch): Phase[] {
  const next = rng(seed);
  const phases: Phase[] = [];
  let t = 0;
  while (t < durationMs) {
    const idle = between(next, p.idleMinutes[0], p.idleMinutes[1]) * MIN;
    phases.push({ fromMs: t, toMs: Math.min(durationMs, t + idle), concurrency: 0 });
    t += idle;
    const activeEnd = Math.min(durationMs, t + between(next, p.activeHours[0] * 60, p.activeHours[1] * 60) * MIN);
    while (t < activeEnd) {
      const to = Math.min(activeEnd, t + between(next, p.phaseMinutes[0], p.phaseMinutes[1]) * MIN);
      phases.push({ fromMs: t, toMs: to, concurrency: between(next, p.concurrency[0], p.concurrency[1]) });
      t = to;
    }
  }
  return phases.filter((ph) => ph.toMs > ph.fromMs);
}

export function concurrencyAt(phases: Phase[], offsetMs: number): number {
  for (const ph of phases) if (offsetMs >= ph.fromMs && offsetMs < ph.toMs) return ph.concurrency;
  return 0;
}

/** What a client sees of one request. */
interface ClientRequest {
  sub: SubmittedRequest;
  sentAt: number;
  failed: "http-500" | null;
}

/**
 * The server as its clients see it: accepts requests unless it is down (restarting), fails every
 * in-flight request with 500 on a restart. The old watchdogs restart it; stepwatch never does.
 */
class Server {
  readonly model: VllmSimModel;
  downUntil: number | null = null;
  open = new Set<ClientRequest>();
  restarts: Array<{ at: number; by: string }> = [];
  errors500: number[] = [];
  downMs = 0;

  constructor(private readonly clock: () => number) {
    this.model = new VllmSimModel({ clock, engine: INCIDENT.engine });
  }

  get busy(): boolean {
    const t = this.model.totals();
    return t.running + t.waiting > 0;
  }

  tick(now: number): void {
    if (this.downUntil !== null && now >= this.downUntil) {
      this.downMs += INCIDENT.restartDownSeconds * 1000;
      this.downUntil = null;
      this.model.startNewProcess(); // listening again: a new process, counters from zero
    }
    this.model.advance();
    for (const r of this.open) if (r.sub.request.status === "finished") this.open.delete(r);
  }

  /** null: connection refused (weights loading). */
  submit(spec: RequestSpec, now: number): ClientRequest | null {
    if (this.downUntil !== null) return null;
    const r: ClientRequest = { sub: this.model.submit(spec), sentAt: now, failed: null };
    this.open.add(r);
    return r;
  }

  /** The client gave up: it closes the connection and vLLM aborts the request. */
  abort(r: ClientRequest): void {
    this.model.abort(r.sub);
    this.open.delete(r);
  }

  restart(now: number, by: string): void {
    if (this.downUntil !== null) return;
    this.restarts.push({ at: now, by });
    for (const r of this.open) {
      r.failed = "http-500"; // "cannot schedule new futures after shutdown"
      this.errors500.push(now);
    }
    this.open.clear();
    this.model.startNewProcess(); // the old process and its work are gone
    this.downUntil = now + INCIDENT.restartDownSeconds * 1000;
  }

  /** Downtime up to `now`, a restart still loading included. */
  downtimeMs(now: number): number {
    const loading = this.downUntil !== null ? INCIDENT.restartDownSeconds * 1000 - Math.max(0, this.downUntil - now) : 0;
    return this.downMs + loading;
  }
}

/** Keeps the scheduled number of long requests in flight; retries after a failure. */
class BatchJob {
  private inflight: ClientRequest[] = [];
  private retryAt = 0;
  private readonly next: () => number;
  sent = 0;
  completed = 0;
  failed = 0;

  constructor(
    private readonly concurrency: (now: number) => number,
    seed: number,
  ) {
    this.next = rng(seed ^ 0x5bd1e995);
  }

  tick(server: Server, now: number): void {
    this.inflight = this.inflight.filter((r) => {
      if (r.failed) {
        this.failed++;
        this.retryAt = now + INCIDENT.batch.retryAfterSeconds * 1000;
        return false;
      }
      if (r.sub.request.status === "finished") {
        this.completed++;
        return false;
      }
      return true;
    });
    const want = this.concurrency(now);
    while (this.inflight.length < want && now >= this.retryAt) {
      const p = INCIDENT.batch;
      const r = server.submit(
        { promptTokens: between(this.next, p.promptTokens[0], p.promptTokens[1]), maxTokens: between(this.next, p.maxTokens[0], p.maxTokens[1]) },
        now,
      );
      if (!r) {
        this.retryAt = now + p.retryAfterSeconds * 1000;
        return;
      }
      this.sent++;
      this.inflight.push(r);
    }
  }
}

/** Watchdog #1: a real chat request every 5 min, 45 s to answer, restart after 5 failures in a row. */
class ChatWatchdog {
  private pending: ClientRequest | null = null;
  private nextAt: number;
  private streak = 0;
  sent = 0;
  sentWhileBusy = 0;
  waitedForSlot = 0;
  failures = 0;

  constructor(start: number) {
    this.nextAt = start + INCIDENT.oldWatchdog.intervalSeconds * 1000;
  }

  tick(server: Server, now: number): void {
    const w = INCIDENT.oldWatchdog;
    const p = this.pending;
    if (p) {
      if (p.failed) this.fail(server, now);
      else if (p.sub.request.status === "finished") {
        this.streak = 0;
        this.pending = null;
      } else if (now - p.sentAt >= w.timeoutSeconds * 1000) {
        server.abort(p);
        this.fail(server, now);
      }
    }
    if (now < this.nextAt) return;
    this.nextAt += w.intervalSeconds * 1000;
    if (this.pending) return;
    const busy = server.busy;
    const r = server.submit({ promptTokens: w.promptTokens, maxTokens: w.maxTokens }, now);
    if (!r) {
      this.fail(server, now); // connection refused counts as a failed check
      return;
    }
    this.sent++;
    if (busy) this.sentWhileBusy++;
    if (r.sub.request.status === "waiting") this.waitedForSlot++;
    this.pending = r;
  }

  private fail(server: Server, now: number): void {
    this.pending = null;
    this.failures++;
    if (++this.streak >= INCIDENT.oldWatchdog.failuresToRestart) {
      this.streak = 0;
      server.restart(now, "chat watchdog (5 failed checks)");
    }
  }
}

/** Watchdog #2: restarts when it saw many HTTP 500s lately. */
class ErrorWatchdog {
  private nextAt: number;
  constructor(start: number) {
    this.nextAt = start + INCIDENT.errorWatchdog.intervalSeconds * 1000;
  }
  tick(server: Server, now: number): void {
    const w = INCIDENT.errorWatchdog;
    if (now < this.nextAt) return;
    this.nextAt += w.intervalSeconds * 1000;
    const recent = server.errors500.filter((at) => at > now - w.windowSeconds * 1000).length;
    if (recent >= w.errorsToRestart) server.restart(now, `500s watchdog (${recent} HTTP 500 in ${w.windowSeconds / 60} min)`);
  }
}

export interface OldWorldResult {
  chatRequests: number;
  chatRequestsToBusyServer: number;
  chatRequestsThatWaitedForASlot: number;
  failedChecks: number;
  restarts: number;
  restartsBy: Record<string, number>;
  downtimeMinutes: number;
  http500: number;
  batch: { sent: number; completed: number; failed: number };
  /** Hang scenario only: the first restart after the hang, ms after it. */
  detectionMs?: number | null;
}

function runOldWorld(durationMs: number, concurrency: (offset: number) => number, hangAtOffset?: number): OldWorldResult {
  let now = T0;
  const server = new Server(() => now);
  const batch = new BatchJob((t) => concurrency(t - T0), INCIDENT.seed);
  const chat = new ChatWatchdog(T0);
  const errors = new ErrorWatchdog(T0);
  let hangAt: number | null = null;
  for (; now <= T0 + durationMs; now += 1000) {
    if (hangAtOffset !== undefined && hangAt === null && now - T0 >= hangAtOffset) {
      server.model.setMode("hang");
      hangAt = now;
    }
    server.tick(now);
    batch.tick(server, now);
    chat.tick(server, now);
    errors.tick(server, now);
    if (hangAt !== null && server.restarts.some((r) => r.at >= hangAt!)) break;
  }
  const restartsBy: Record<string, number> = {};
  for (const r of server.restarts) restartsBy[r.by] = (restartsBy[r.by] ?? 0) + 1;
  const firstAfterHang = hangAt === null ? undefined : server.restarts.find((r) => r.at >= hangAt!);
  return {
    chatRequests: chat.sent,
    chatRequestsToBusyServer: chat.sentWhileBusy,
    chatRequestsThatWaitedForASlot: chat.waitedForSlot,
    failedChecks: chat.failures,
    restarts: server.restarts.length,
    restartsBy,
    downtimeMinutes: server.downtimeMs(now) / MIN,
    http500: server.errors500.length,
    batch: { sent: batch.sent, completed: batch.completed, failed: batch.failed },
    ...(hangAt !== null && { detectionMs: firstAfterHang ? firstAfterHang.at - hangAt : null }),
  };
}

export interface StepwatchWorldResult {
  reads: number;
  probes: number;
  probesToBusyServer: number;
  /** Requests that took or waited for a slot: only probes can. */
  slotRequests: number;
  /** Times a verdict began recommending a restart (what an operator would see on the card). */
  restartRecommendations: number;
  recommendationStates: string[];
  /** Transitions into stuck or down, with or without a recommendation (the replay's old count). */
  transitionsToRecommendingStates: number;
  downtimeMinutes: number;
  bytesRead: number;
  states: Record<string, number>;
  batch: { sent: number; completed: number; failed: number };
  detectionMs?: number | null;
  /** Wall time the virtual run took. */
  wallMs: number;
}

async function runStepwatchWorld(
  durationMs: number,
  concurrency: (offset: number) => number,
  hangAtOffset?: number,
  /** Copy the watcher's database here when done (the storage benchmark measures it). */
  keepDbAs?: string,
): Promise<StepwatchWorldResult> {
  const wallStart = performance.now();
  const sw = INCIDENT.stepwatch;
  // Loops of the watcher: one backend and its housekeeping (flush, retention, restart events).
  const clock = new VirtualClock(T0, 1 + HOUSEKEEPING_LOOPS);
  const server = new Server(clock.now);
  const model = server.model;
  const origin = "http://replay.sim:8000";
  let probes = 0;
  let probesToBusy = 0;

  const agent = new MockAgent();
  agent.disableNetConnect();
  const pool = agent.get(origin);
  pool
    .intercept({ path: "/metrics", method: "GET" })
    .reply(() => {
      model.advance();
      return { statusCode: 200, data: renderMetrics(model), responseOptions: { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } } };
    })
    .persist();
  pool.intercept({ path: "/health", method: "GET" }).reply(200, "").persist();
  pool
    .intercept({ path: "/v1/models", method: "GET" })
    .reply(200, { object: "list", data: [{ id: model.opts.modelName, object: "model" }] })
    .persist();
  pool
    .intercept({ path: "/v1/completions", method: "POST" })
    .reply(() => {
      probes++;
      if (server.busy) probesToBusy++;
      const r = server.submit({ promptTokens: 1, maxTokens: 1 }, clock.now());
      // The engine answers one token in ~0.13 s when a slot is free; one that would wait is
      // answered 504 at once instead of timing out after probeTimeoutSeconds (never happens here).
      if (r && r.sub.request.status === "running") {
        return { statusCode: 200, data: JSON.stringify({ object: "text_completion", choices: [{ index: 0, text: " OK", finish_reason: "length" }] }) };
      }
      if (r) server.abort(r);
      return { statusCode: 504, data: JSON.stringify({ error: "probe would wait for a slot" }) };
    })
    .persist();

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-bench-incident-"));
  const db = openDb(path.join(dir, "replay.db"));
  const config = parseConfig({ ...sw, backends: [{ id: "gb10", url: origin }] }, "bench", { env: {} });
  const batch = new BatchJob((t) => concurrency(t - T0), INCIDENT.seed);
  const watcher = startWatcher({ config, db: db.db, clock, read: { dispatcher: agent }, log: () => {} });
  let hangAt: number | null = null;
  let stuckAt: number | null = null;
  let reads = 0;
  let bytesRead = 0;
  const states: Record<string, number> = {};
  const recs: Array<{ at: number; state: string; reasons: Reason[] }> = [];
  let recommending = false;
  let lastReadAt = -1;
  try {
    for (let t = T0; t <= T0 + durationMs; t += 1000) {
      // The watcher's reads due by t run first (they see the engine as of t), then the clients act.
      await clock.advanceTo(t);
      if (hangAtOffset !== undefined && hangAt === null && t - T0 >= hangAtOffset) {
        model.setMode("hang");
        hangAt = t;
      }
      server.tick(t);
      batch.tick(server, t);
      const cur = watcher.current("gb10");
      if (cur?.reading && cur.verdict && cur.reading.at !== lastReadAt) {
        lastReadAt = cur.reading.at;
        reads++;
        bytesRead += cur.reading.bytes ?? 0;
        states[cur.verdict.state] = (states[cur.verdict.state] ?? 0) + 1;
        // A recommendation is what the card shows (verdict.restartRecommended), counted once each
        // time it appears: "down" inside startupGraceSeconds is not one (the transition's state
        // alone cannot tell, the grace is not stored with it), a stretch of "stuck" is one.
        if (cur.verdict.restartRecommended && !recommending) {
          recs.push({ at: cur.reading.at, state: cur.verdict.state, reasons: cur.verdict.reasons });
        }
        recommending = cur.verdict.restartRecommended;
        if (hangAt !== null && stuckAt === null && cur.verdict.state === "stuck") stuckAt = cur.reading.at;
      }
      if (stuckAt !== null) break;
    }
  } finally {
    await watcher.stop();
  }
  // Transitions into a state whose name recommends a restart: what the replay counted before,
  // kept to show the difference (a down inside the startup grace is one of these, not a recommendation).
  const recommendingTransitions = db.db
    .select()
    .from(transitions)
    .all()
    .filter((tr) => tr.kind === "backend" && restartRecommended(tr.toState as BackendState));
  if (keepDbAs) db.sqlite.prepare("VACUUM INTO ?").run(keepDbAs);
  db.close();
  await agent.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    reads,
    probes,
    probesToBusyServer: probesToBusy,
    slotRequests: probes,
    restartRecommendations: recs.filter((r) => hangAt === null || r.at < hangAt).length,
    recommendationStates: recs.map((r) => `${new Date(r.at).toISOString()} ${r.state}: ${reasonText(r.reasons)}`),
    transitionsToRecommendingStates: recommendingTransitions.filter((r) => hangAt === null || r.at < hangAt).length,
    downtimeMinutes: 0,
    bytesRead,
    states,
    batch: { sent: batch.sent, completed: batch.completed, failed: batch.failed },
    ...(hangAt !== null && { detectionMs: stuckAt !== null ? stuckAt - hangAt : null }),
    wallMs: performance.now() - wallStart,
  };
}

export interface IncidentResult {
  simulatedHours: number;
  /** Start of the simulated day (virtual clock, ms). */
  startMs: number;
  params: typeof INCIDENT;
  scheduleSummary: { phases: number; busyMinutes: number; idleMinutes: number; minutesAtOrAboveSlots: number };
  day: { old: OldWorldResult; stepwatch: StepwatchWorldResult };
  hang: { old: OldWorldResult; stepwatch: StepwatchWorldResult; goalMs: number };
  wallMs: number;
}

export async function runIncidentBench(opts: { quick?: boolean; keepDayDbAs?: string } = {}): Promise<IncidentResult> {
  const wallStart = performance.now();
  const hours = opts.quick ? 12 : 24;
  const duration = hours * HOUR;
  const phases = batchSchedule(INCIDENT.seed, duration);
  const conc = (offset: number) => concurrencyAt(phases, offset);
  const old = runOldWorld(duration, conc);
  const stepwatch = await runStepwatchWorld(duration, conc, undefined, opts.keepDayDbAs);

  const h = INCIDENT.hang;
  const hangDuration = (h.atMinutes + h.watchForMinutes) * MIN;
  const constant = () => h.concurrency;
  const oldHang = runOldWorld(hangDuration, constant, h.atMinutes * MIN);
  const swHang = await runStepwatchWorld(hangDuration, constant, h.atMinutes * MIN);

  const minutesWith = (f: (c: number) => boolean) => phases.filter((p) => f(p.concurrency)).reduce((s, p) => s + (p.toMs - p.fromMs) / MIN, 0);
  return {
    simulatedHours: hours,
    startMs: T0,
    params: INCIDENT,
    scheduleSummary: {
      phases: phases.length,
      busyMinutes: minutesWith((c) => c > 0),
      idleMinutes: minutesWith((c) => c === 0),
      minutesAtOrAboveSlots: minutesWith((c) => c >= INCIDENT.engine.maxNumSeqs),
    },
    day: { old, stepwatch },
    hang: {
      old: oldHang,
      stepwatch: swHang,
      goalMs: (INCIDENT.stepwatch.stuckAfterSeconds + 2 * INCIDENT.stepwatch.pollIntervalSeconds) * 1000,
    },
    wallMs: performance.now() - wallStart,
  };
}

runWhenMain(__filename, () => runIncidentBench({ quick: process.argv.includes("--quick") }));
