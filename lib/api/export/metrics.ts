/**
 * GET /metrics: stepwatch's verdicts and its own health in the Prometheus text format, through
 * prom-client (the client library the field uses; nothing of the format is hand-written here).
 *
 * Per-backend series are built at scrape time by `collect()` callbacks from the watcher's in-memory
 * fleet snapshot (the same one /api/fleet answers): no SQL and no backend is touched per scrape.
 * Restart counts are seeded once from the database when the runtime starts (seedRestarts) and then
 * counted as restarts resolve (WatcherTelemetry.restartResolved), so the counter carries on across
 * a restart of stepwatch instead of dropping to zero.
 *
 * One instance per process, on globalThis (CONTRIBUTING invariant 9): the watcher started from
 * instrumentation.ts counts into the same registry that the /metrics route handler renders, although
 * Next loads them as separate module instances. prom-client's own default registry is not used.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { RESTART_OUTCOMES, type RestartOutcome } from "../../../db/schema";
import type { FleetBackend, FleetProxy, FleetResponse } from "../types";
import { BACKEND_STATES } from "../../core/states";
import type { WatcherTelemetry } from "../../watcher/telemetry";

/** Until the engines issue gives each backend an engine, every backend is a vLLM server. */
export const DEFAULT_ENGINE = "vllm";

/** What one scrape is built from: the fleet snapshot plus the poll interval of the config. */
export interface MetricsSource {
  fleet: FleetResponse;
  pollIntervalSeconds: number;
  /** This replica and whether it leads now (lib/cluster/leadership.ts). */
  leader?: { replica: string; leading: boolean };
}

export interface StepwatchMetricsOptions {
  /** process_* and nodejs_* from prom-client (event-loop lag, heap, GC, CPU). On by default. */
  defaultMetrics?: boolean;
}

// Seconds. A poll starts late only when the event loop is busy, so most land in the first buckets.
const LAG_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// A read is bounded by its deadline (10 s at most, lib/watcher readTimeoutMs).
const READ_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Until an engine is known for a backend that may run any (the snapshot says null). */
export const UNKNOWN_ENGINE = "unknown";

/**
 * The `engine` label: the snapshot's `engine` field once backends have one (null, not detected
 * yet: "unknown"), and "vllm" while the snapshot has no such field (every backend is vLLM then).
 */
export function engineOf(b: FleetBackend): string {
  if (!("engine" in b)) return DEFAULT_ENGINE;
  const e = (b as FleetBackend & { engine?: unknown }).engine;
  return typeof e === "string" && (e as string).length > 0 ? e : UNKNOWN_ENGINE;
}

function seconds(ms: number | null): number | null {
  return ms === null ? null : ms / 1000;
}

export class StepwatchMetrics {
  readonly registry = new Registry();
  readonly pollLag: Histogram;
  readonly readDuration: Histogram<"kind">;
  readonly readFailures: Counter<"kind" | "outcome">;
  readonly readsNotJudged: Counter<"kind">;
  readonly storageErrors: Counter;
  /**
   * Failed notification delivery attempts by channel id (`notifications.channels[].id`): the outbox
   * (lib/notify/outbox.ts) reports each one through the watcher's telemetry (`notificationFailed`),
   * and the watcher calls `notificationChannel` once per configured channel at start, so the series
   * exists at 0 before the first failure.
   */
  readonly notificationFailures: Counter<"channel">;
  readonly restarts: Counter<"backend" | "outcome">;
  private source: (() => MetricsSource | null) | null = null;
  /** The snapshot of the scrape being rendered: every collect() of one scrape reads the same one. */
  private current: MetricsSource | null = null;

  constructor(opts: StepwatchMetricsOptions = {}) {
    const registers = [this.registry];
    if (opts.defaultMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry });
      // prom-client names three gauges "..._total", which promtool's lint rejects (only counters
      // end in _total). They are the sums of nodejs_active_handles/requests/resources{type}, which
      // stay, so nothing is lost.
      for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) {
        this.registry.removeSingleMetric(name);
      }
    }

    // Per backend, from the snapshot. Declared in this order so the exposition reads top-down.
    const fleet = () => this.snapshot()?.fleet ?? null;
    /** A gauge set afresh at each scrape from every backend of the snapshot (none before the first). */
    const fleetGauge = <L extends string>(name: string, help: string, labelNames: L[], each: (g: Gauge<L>, b: FleetBackend) => void) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.reset();
          const f = fleet();
          if (!f) return;
          for (const b of f.backends) each(this, b);
        },
      });
    const perBackend = (name: string, help: string, value: (b: FleetBackend) => number | null) =>
      fleetGauge(name, help, ["backend"], (g, b) => {
        const v = value(b);
        if (v !== null && Number.isFinite(v)) g.set({ backend: b.id }, v);
      });

    fleetGauge(
      "stepwatch_backend_state",
      `stepwatch's verdict, one-hot: 1 for the current state, 0 for the others (${BACKEND_STATES.join(", ")}).`,
      ["backend", "engine", "state"],
      (g, b) => {
        const engine = engineOf(b);
        for (const state of BACKEND_STATES) g.set({ backend: b.id, engine, state }, b.state === state ? 1 : 0);
      },
    );
    perBackend("stepwatch_backend_healthy", "1 when the verdict is healthy (idle or busy), else 0.", (b) => (b.healthy ? 1 : 0));
    perBackend("stepwatch_backend_restart_recommended", "1 when stepwatch recommends a restart (stuck or down), else 0.", (b) =>
      b.restartRecommended ? 1 : 0,
    );
    perBackend("stepwatch_backend_running_requests", "Requests running on the backend at the last read (vLLM's num_requests_running).", (b) => b.running);
    perBackend("stepwatch_backend_waiting_requests", "Requests waiting on the backend at the last read (vLLM's num_requests_waiting).", (b) => b.waiting);
    perBackend("stepwatch_backend_steps_per_second", "Engine steps per second between the last two reads.", (b) => b.stepsPerSecond);
    perBackend("stepwatch_backend_generation_tokens_per_second", "Generation tokens per second between the last two reads.", (b) => b.generationTokensPerSecond);
    perBackend("stepwatch_backend_prompt_tokens_per_second", "Prompt tokens per second between the last two reads.", (b) => b.promptTokensPerSecond);
    perBackend("stepwatch_backend_kv_cache_usage_ratio", "KV-cache usage at the last read, 0 to 1.", (b) => b.kvCacheUsage);
    perBackend("stepwatch_backend_state_since_timestamp_seconds", "When the backend entered its current state (unix seconds).", (b) => seconds(b.since));
    perBackend("stepwatch_backend_last_read_timestamp_seconds", "When the last read of the backend's /metrics started (unix seconds).", (b) =>
      seconds(b.lastReadAt),
    );

    // Silences, so alert rules can leave out what a person already handles (`unless on(backend)`):
    // the same acknowledgement and maintenance that mute stepwatch's own notifications.
    perBackend("stepwatch_backend_acknowledged", "1 while someone has acknowledged the backend's current problem, else 0.", (b) =>
      b.acknowledged ? 1 : 0,
    );
    perBackend("stepwatch_backend_in_maintenance", "1 while the backend is in maintenance (API or config), else 0.", (b) => (b.maintenance ? 1 : 0));
    // A flag beside the state (lib/core/crash-loop.ts): the state says what each process does.
    perBackend(
      "stepwatch_backend_crash_loop",
      "1 while the backend is in a crash loop (crashLoop.restarts new processes not caused by stepwatch within crashLoop.windowMinutes), else 0.",
      (b) => (b.crashLoop ? 1 : 0),
    );

    /** A gauge per proxy, set afresh at each scrape (a proxy whose value is null is left out). */
    const perProxy = (name: string, help: string, value: (p: FleetProxy) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ["proxy"],
        registers,
        collect() {
          this.reset();
          for (const p of fleet()?.proxies ?? []) {
            const v = value(p);
            if (v !== null) this.set({ proxy: p.id }, v);
          }
        },
      });
    perProxy("stepwatch_proxy_up", "1 when the proxy answered GET /v1/models (state up), 0 when down or not read yet.", (p) => (p.state === "up" ? 1 : 0));
    // A proxy that answers /v1/models is up even when every backend behind it is down: these say
    // how many of the backends the config names for it (proxies[].backends) are healthy now.
    perProxy("stepwatch_proxy_backends_healthy", "Of the backends the config names for the proxy (proxies[].backends), how many are healthy now; absent when it names none.", (p) =>
      p.totalBackends === null ? null : p.healthyBackends,
    );
    // Not "_total": that suffix is for counters (promtool check metrics rejects a gauge named so).
    perProxy("stepwatch_proxy_backends", "How many backends the config names for the proxy (proxies[].backends); absent when it names none.", (p) => p.totalBackends);
    new Gauge({
      name: "stepwatch_notification_channel_failing",
      help: "1 while the channel is failing (its last 3 delivery attempts failed; they are kept and retried), else 0.",
      labelNames: ["channel"],
      registers,
      collect() {
        this.reset();
        for (const c of fleet()?.notificationChannels ?? []) this.set({ channel: c.id }, c.failing ? 1 : 0);
      },
    });
    const self = this;
    new Gauge({
      name: "stepwatch_poll_interval_seconds",
      help: "The configured pollIntervalSeconds: each backend and proxy is read this often.",
      registers,
      collect() {
        const s = self.snapshot();
        if (s) this.set(s.pollIntervalSeconds);
      },
    });

    new Gauge({
      name: "stepwatch_leader",
      help: "1 while this replica leads (writes transitions, delivers notifications, runs restarts), else 0. With SQLite the one replica always leads.",
      labelNames: ["replica"],
      registers,
      collect() {
        this.reset();
        const l = self.snapshot()?.leader;
        if (l) this.set({ replica: l.replica }, l.leading ? 1 : 0);
      },
    });

    this.restarts = new Counter({
      name: "stepwatch_restarts_total",
      help: `Restarts asked for by operators, by how they ended (${RESTART_OUTCOMES.join(", ")}); seeded from the database at start.`,
      labelNames: ["backend", "outcome"],
      registers,
    });

    // stepwatch's own health.
    this.pollLag = new Histogram({
      name: "stepwatch_poll_lag_seconds",
      help: "How late a poll of a backend or proxy started after its scheduled slot.",
      buckets: LAG_BUCKETS,
      registers,
    });
    this.readDuration = new Histogram({
      name: "stepwatch_read_duration_seconds",
      help: "Duration of one read (GET /metrics of a backend, GET /v1/models of a proxy), failed ones included.",
      labelNames: ["kind"],
      buckets: READ_BUCKETS,
      registers,
    });
    this.readFailures = new Counter({
      name: "stepwatch_read_failures_total",
      help: "Reads that did not end with an answer (refused, reset, timeout, http-error, too-large, error).",
      labelNames: ["kind", "outcome"],
      registers,
    });
    this.readsNotJudged = new Counter({
      name: "stepwatch_reads_not_judged_total",
      help: "Reads with a timeout stepwatch saw late (its own event loop was busy past the deadline): kept, not judged. Any is a watcher with more to do than its CPU allows.",
      labelNames: ["kind"],
      registers,
    });
    for (const kind of ["backend", "proxy"] as const) this.readsNotJudged.inc({ kind }, 0);
    this.storageErrors = new Counter({
      name: "stepwatch_storage_errors_total",
      help: "Failed reads or writes of stepwatch's SQLite database (each failed attempt; writes are retried).",
      registers,
    });
    this.notificationFailures = new Counter({
      name: "stepwatch_notification_failures_total",
      help: "Notification deliveries that failed (each failed attempt; they are retried).",
      labelNames: ["channel"],
      registers,
    });
    // Both kinds exist at 0 from the start, so rate() and increase() see the first observation.
    for (const kind of ["backend", "proxy"]) this.readDuration.zero({ kind });
  }

  /** Where scrapes read the fleet from (the runtime attaches its watcher's snapshot). */
  attach(source: () => MetricsSource | null): void {
    this.source = source;
  }

  /**
   * The restart counts stored so far, once at start: every configured backend gets every outcome
   * (0 when it never happened), so increase() sees the first failure. Rows of backends no longer
   * in the config are left out.
   */
  seedRestarts(backendIds: readonly string[], counts: ReadonlyArray<{ backendId: string; outcome: RestartOutcome; count: number }>): void {
    const ids = new Set(backendIds);
    for (const backend of backendIds) for (const outcome of RESTART_OUTCOMES) this.restarts.inc({ backend, outcome }, 0);
    for (const c of counts) if (ids.has(c.backendId) && c.count > 0) this.restarts.inc({ backend: c.backendId, outcome: c.outcome }, c.count);
  }

  /**
   * A config reload removed these backends: their restart series go, so that adding one back
   * later seeds it from the database again (seedRestarts) instead of counting its past twice.
   */
  forgetRestarts(backendIds: readonly string[]): void {
    for (const backend of backendIds) for (const outcome of RESTART_OUTCOMES) this.restarts.remove({ backend, outcome });
  }

  notificationChannel(channel: string): void {
    this.notificationFailures.inc({ channel }, 0);
  }

  notificationFailed(channel: string): void {
    this.notificationFailures.inc({ channel });
  }

  /** What the watcher reports into. */
  readonly telemetry: WatcherTelemetry = {
    pollLag: (ms) => this.pollLag.observe(ms / 1000),
    read: (kind, latencyMs, outcome, seenLate = false) => {
      this.readDuration.observe({ kind }, latencyMs / 1000);
      if (outcome !== "ok") this.readFailures.inc({ kind, outcome });
      if (seenLate) this.readsNotJudged.inc({ kind });
    },
    storageError: () => this.storageErrors.inc(),
    restartResolved: (backend, outcome) => this.restarts.inc({ backend, outcome }),
    notificationChannel: (channel) => this.notificationChannel(channel),
    notificationFailed: (channel) => this.notificationFailed(channel),
  };

  get contentType(): string {
    return this.registry.contentType;
  }

  /** One scrape: the exposition of every series, per-backend ones from one fresh snapshot. */
  async render(): Promise<string> {
    // Every collect() runs synchronously at the start of registry.metrics(), so they all see this
    // one snapshot even when two scrapes overlap.
    this.current = this.source?.() ?? null;
    try {
      return await this.registry.metrics();
    } finally {
      this.current = null;
    }
  }

  private snapshot(): MetricsSource | null {
    return this.current ?? this.source?.() ?? null;
  }
}

const KEY = Symbol.for("stepwatch.metrics");
type Holder = { [KEY]?: StepwatchMetrics };

/** The process's one instance (created on first use, default process metrics included). */
export function getStepwatchMetrics(): StepwatchMetrics {
  const g = globalThis as Holder;
  g[KEY] ??= new StepwatchMetrics();
  return g[KEY];
}

/** Count one failed delivery attempt on the channel with this id (the watcher's telemetry does this for the outbox). */
export function notificationFailed(channel: string): void {
  getStepwatchMetrics().notificationFailed(channel);
}

/** For the notification sender, once per configured channel at start: the series exists at 0. */
export function notificationChannel(channel: string): void {
  getStepwatchMetrics().notificationChannel(channel);
}
