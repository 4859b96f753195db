/**
 * One evidence bundle per incident (issue 32). An incident starts when a backend's verdict
 * recommends a restart (stuck, or down past its startup grace) and ends when it is healthy again;
 * its bundle is captured once, at the start, or when a restart is asked first (the restart verb
 * calls `forRestart`). The bundle is stored when the capture starts (the bodies, the timeline, the
 * commands as "running"), again as each part ends, and a last time with its end: a restart that
 * stops waiting links a bundle that still fills in, and a hung command never holds anything but
 * its own entry.
 *
 * Bounded: the bodies are at most RAW_BODIES_KEPT reads (cut at MAX_RAW_BODY_CHARS each; which: kept-bodies.ts), the
 * commands' output is capped per command and per bundle (evidence.maxBytes), and retention
 * (db/queries/evidence.ts pruneEvidence) deletes bundles past their days and past the total cap.
 */
import type { Db } from "../../db/types";
import { insertEvidence, pruneEvidence, updateEvidence } from "../../db/queries/evidence";
import { transitionsInRange } from "../../db/queries/readings";
import { isHealthy, type BackendState } from "../core/states";
import type { EngineKind } from "../core/engine";
import type { Reason, Verdict } from "../core/types";
import { redact, type EvidenceBundle, type EvidenceMetricsBody, type EvidenceTransition, type EvidenceTrigger } from "../core/evidence";
import { evidenceOf, type BackendConfig } from "../config";
import type { Env } from "../restart/execute";
import { fetchStatusRoute, runEvidenceCommand, runningEntry, statusRoutesOf, type Capture, type EvidenceSource } from "../restart/evidence";

const DAY_MS = 86_400_000;
/** How far back the timeline looks for the last healthy state, and how many transitions it keeps. */
const TIMELINE_LOOKBACK_MS = DAY_MS;
const TIMELINE_MAX = 50;
const PRUNE_EVERY_MS = 3_600_000;

/** The newest bodies first, within `budget` characters: older ones go, the last one kept is cut. */
function fitBodies(bodies: readonly EvidenceMetricsBody[], budget: number): EvidenceMetricsBody[] {
  const out: EvidenceMetricsBody[] = [];
  let left = budget;
  for (let i = bodies.length - 1; i >= 0 && left > 0; i--) {
    const b = bodies[i];
    out.unshift(b.body.length <= left ? b : { ...b, cut: true, body: b.body.slice(0, left) });
    left -= b.body.length;
  }
  return out;
}

/** What the watcher's memory holds of a backend at the moment of a capture. */
export interface BackendMemory {
  config: BackendConfig;
  bodies: readonly EvidenceMetricsBody[];
  verdict: Verdict | null;
  engine: EngineKind | undefined;
  /** The state stored last and since when (a transition may still wait in the write queue). */
  storedState: BackendState | null;
  previousState: BackendState | null;
  since: number | null;
}

export interface EvidenceDeps {
  db: Db;
  memory(backendId: string): BackendMemory | null;
  /** The restart commands' environment (lib/restart/execute.ts restartCommandEnv). */
  commandEnv(): Env;
  maxTotalBytes(): number;
  now(): number;
  log(msg: string): void;
  /** For tests: a command's deadline (lib/restart/execute.ts CommandOptions.deadline). */
  deadline?: (expire: () => void, timeoutMs: number) => () => void;
}

export class EvidenceRecorder implements EvidenceSource {
  /** The open incident's capture per backend; gone when the backend is healthy again. */
  private readonly open = new Map<string, Capture>();
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly deps: EvidenceDeps) {}

  /** After every poll: an incident starts (capture) or ends (forget its bundle). */
  onVerdict(backendId: string, verdict: Verdict): void {
    if (isHealthy(verdict.state)) {
      this.open.delete(backendId);
      return;
    }
    if (!verdict.restartRecommended || this.open.has(backendId)) return;
    const trigger: EvidenceTrigger = verdict.state === "down" ? "down" : "stuck";
    this.begin(backendId, trigger);
  }

  forRestart(backendId: string): Capture | null {
    return this.open.get(backendId) ?? this.begin(backendId, "restart");
  }

  /** The backend left the config: its incident is no one's. */
  forget(backendId: string): void {
    this.open.delete(backendId);
  }

  /** Every capture still running has ended (the watcher's stop waits on it). */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private prunedAt = Number.NEGATIVE_INFINITY;

  /**
   * From the watcher's retention job: at most once an hour (bundles expire by days; each capture
   * prunes after itself too, so the total cap holds between two runs).
   */
  pruneDue(): number {
    const now = this.deps.now();
    if (now - this.prunedAt < PRUNE_EVERY_MS) return 0;
    return this.prune();
  }

  prune(): number {
    this.prunedAt = this.deps.now();
    try {
      return pruneEvidence(this.deps.db, this.deps.now(), this.deps.maxTotalBytes());
    } catch (e) {
      this.deps.log(`stepwatch: cannot prune evidence bundles: ${(e as Error).message}`);
      return 0;
    }
  }

  private begin(backendId: string, trigger: EvidenceTrigger): Capture | null {
    const mem = this.deps.memory(backendId);
    if (!mem) return null;
    const { now } = this.deps;
    const ev = evidenceOf(mem.config);
    const startedAt = now();
    const secrets = ev.commands.flatMap((c) => c.secretValues);
    const bundle: EvidenceBundle = {
      backendId,
      trigger,
      startedAt,
      finishedAt: null,
      state: mem.verdict?.state ?? null,
      reasons: mem.verdict?.reasons ?? [],
      timeline: this.timeline(backendId, mem, startedAt),
      metrics: fitBodies(mem.bodies, Math.floor(ev.maxBytes / 4)).map((b) => ({ ...b, body: redact(b.body, secrets) })),
      status: [],
      commands: ev.commands.map((c) => runningEntry(c, startedAt)),
      notes: [],
    };
    let id: number;
    try {
      id = insertEvidence(this.deps.db, { backendId, trigger, startedAt, expiresAt: startedAt + ev.retentionDays * DAY_MS, bundle });
    } catch (e) {
      this.deps.log(`stepwatch: cannot store the evidence of ${backendId}: ${(e as Error).message}`);
      return null;
    }
    const save = () => {
      try {
        updateEvidence(this.deps.db, id, bundle);
      } catch (e) {
        this.deps.log(`stepwatch: cannot store the evidence #${id} of ${backendId}: ${(e as Error).message}`);
      }
    };
    const target = { url: mem.config.url, apiKey: mem.config.apiKey };
    // What the bundle may hold besides the commands: the bodies and the routes are capped on
    // their own, so the commands share what is left of maxBytes.
    if (bundle.metrics.length < mem.bodies.length || bundle.metrics.some((b, i) => b.body.length < mem.bodies[mem.bodies.length - bundle.metrics.length + i].body.length))
      bundle.notes.push(`the raw /metrics bodies are cut to a quarter of evidence.maxBytes (${ev.maxBytes})`);
    const fixed = Buffer.byteLength(JSON.stringify(bundle));
    const perCommand = Math.max(1024, Math.floor((ev.maxBytes - fixed) / Math.max(1, ev.commands.length)));
    if (fixed + perCommand * ev.commands.length > ev.maxBytes) bundle.notes.push(`each command's output is cut at ${perCommand} bytes (evidence.maxBytes ${ev.maxBytes})`);
    const status = (async () => {
      for (const path of statusRoutesOf(mem.engine)) bundle.status.push(await fetchStatusRoute(target, path, { secrets }));
      save();
    })();
    const commands = ev.commands.map(async (c, i) => {
      bundle.commands[i] = await runEvidenceCommand(c, { env: this.deps.commandEnv(), maxBytes: perCommand, now, deadline: this.deps.deadline });
      save();
    });
    const done = Promise.allSettled([status, ...commands]).then(() => {
      bundle.finishedAt = now();
      save();
      this.prune();
    });
    this.running.add(done);
    void done.finally(() => this.running.delete(done));
    const capture = { id, done };
    this.open.set(backendId, capture);
    return capture;
  }

  /** The incident's transitions: from the last one into a healthy state (within a day), oldest first, at most TIMELINE_MAX. */
  private timeline(backendId: string, mem: BackendMemory, at: number): EvidenceTransition[] {
    let rows: EvidenceTransition[] = [];
    try {
      rows = transitionsInRange(this.deps.db, "backend", backendId, at - TIMELINE_LOOKBACK_MS, at).map((t) => ({ at: t.at, from: t.fromState, to: t.toState, reasons: t.reasons }));
    } catch (e) {
      this.deps.log(`stepwatch: cannot read the transitions of ${backendId} for its evidence: ${(e as Error).message}`);
    }
    // The newest transition may still wait in the watcher's write queue (flushed once a second).
    const last = rows.at(-1);
    if (mem.storedState && mem.since !== null && (!last || last.at < mem.since)) {
      const reasons: Reason[] = mem.verdict?.state === mem.storedState ? mem.verdict.reasons : [];
      rows.push({ at: mem.since, from: mem.previousState, to: mem.storedState, reasons });
    }
    let start = 0;
    for (let i = rows.length - 1; i >= 0; i--) {
      if (isHealthy(rows[i].to as BackendState)) {
        start = i;
        break;
      }
    }
    return rows.slice(start).slice(-TIMELINE_MAX);
  }
}
