/**
 * The Prometheus export as a unit: a StepwatchMetrics fed a hand-made fleet snapshot, rendered,
 * parsed back with the project's own parser and linted by the real promtool. The same export fed
 * by a real watcher over the simulator is tests/integration/metrics-export.test.ts.
 */
import { describe, expect, it } from "vitest";
import { RESTART_OUTCOMES } from "@/db/schema";
import type { FleetBackend, FleetResponse } from "@/lib/api/types";
import { BACKEND_STATES, type BackendState } from "@/lib/core/states";
import { StepwatchMetrics, getStepwatchMetrics } from "@/lib/api/export/metrics";
import { bearerMatches } from "@/lib/api/export/serve";
import { parsePrometheus, type Sample } from "@/lib/metrics/prometheus";
import { assertPromtool, promtool } from "../support/promtool";

const NOW = Date.UTC(2026, 0, 1, 12);

function backend(id: string, state: BackendState, extra: Partial<FleetBackend> = {}): FleetBackend {
  return {
    id,
    url: `http://127.0.0.1/${id}`,
    model: "m",
    state,
    healthy: state === "idle" || state === "busy",
    since: NOW - 60_000,
    running: 2,
    waiting: 1,
    stepsPerSecond: 12.5,
    generationTokensPerSecond: 40,
    promptTokensPerSecond: 300,
    kvCacheUsage: 0.25,
    processStartTime: 1_700_000_000,
    lastReadAt: NOW - 1000,
    restartRecommended: state === "stuck" || state === "down",
    reasons: [],
    restartConfigured: false,
    pendingRestartId: null,
    cooldownUntil: null,
    ...extra,
  } as FleetBackend;
}

function fleet(backends: FleetBackend[]): FleetResponse {
  return {
    generatedAt: NOW,
    demo: false,
    pollIntervalSeconds: 5,
    storageError: null,
    notificationChannels: [{ id: "slack", type: "slack", consecutiveFailures: 0, lastAttemptAt: null, lastOkAt: null, lastError: null, failing: false }],
    configError: null,
    backends,
    proxies: [
      { id: "lb", url: "http://127.0.0.1/lb", state: "up", models: ["m"], lastReadAt: NOW, since: NOW, error: null, healthyBackends: 1, totalBackends: 2, sleepingBackends: 0, health: "degraded" },
      { id: "lb2", url: "http://127.0.0.1/lb2", state: "down", models: [], lastReadAt: NOW, since: NOW, error: "refused", healthyBackends: null, totalBackends: null, sleepingBackends: null, health: null },
    ],
  };
}

function samples(text: string, name: string): Sample[] {
  const r = parsePrometheus(text);
  expect(r.errors).toEqual([]);
  return r.samples.filter((s) => s.name === name);
}

function value(text: string, name: string, labels: Record<string, string>): number | undefined {
  return samples(text, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

describe("the Prometheus export", () => {
  it("renders one-hot states over every state of the one list, per-backend gauges and proxies", async () => {
    const m = new StepwatchMetrics({ defaultMetrics: false });
    m.attach(() => ({
      fleet: fleet([
        backend("a", "stuck"),
        backend("b", "busy"),
        backend("c", "unknown", { running: null, waiting: null, stepsPerSecond: null, since: null, lastReadAt: null, kvCacheUsage: null }),
      ]),
      pollIntervalSeconds: 5,
    }));
    const text = await m.render();

    const state = samples(text, "stepwatch_backend_state");
    expect(state).toHaveLength(3 * BACKEND_STATES.length);
    for (const id of ["a", "b", "c"]) {
      const mine = state.filter((s) => s.labels.backend === id);
      expect(mine.map((s) => s.labels.state).sort()).toEqual([...BACKEND_STATES].sort());
      expect(mine.reduce((n, s) => n + s.value, 0)).toBe(1);
      expect(mine.every((s) => s.labels.engine === "vllm")).toBe(true);
    }
    expect(value(text, "stepwatch_backend_state", { backend: "a", state: "stuck" })).toBe(1);
    expect(value(text, "stepwatch_backend_state", { backend: "b", state: "busy" })).toBe(1);
    expect(value(text, "stepwatch_backend_restart_recommended", { backend: "a" })).toBe(1);
    expect(value(text, "stepwatch_backend_restart_recommended", { backend: "b" })).toBe(0);
    expect(value(text, "stepwatch_backend_healthy", { backend: "b" })).toBe(1);
    expect(value(text, "stepwatch_backend_running_requests", { backend: "a" })).toBe(2);
    expect(value(text, "stepwatch_backend_waiting_requests", { backend: "a" })).toBe(1);
    expect(value(text, "stepwatch_backend_steps_per_second", { backend: "a" })).toBe(12.5);
    expect(value(text, "stepwatch_backend_generation_tokens_per_second", { backend: "a" })).toBe(40);
    expect(value(text, "stepwatch_backend_prompt_tokens_per_second", { backend: "a" })).toBe(300);
    expect(value(text, "stepwatch_backend_kv_cache_usage_ratio", { backend: "a" })).toBe(0.25);
    expect(value(text, "stepwatch_backend_state_since_timestamp_seconds", { backend: "a" })).toBe((NOW - 60_000) / 1000);
    expect(value(text, "stepwatch_backend_last_read_timestamp_seconds", { backend: "a" })).toBe((NOW - 1000) / 1000);
    // Unknown values are left out, not exported as 0 (0 running would be a claim).
    expect(value(text, "stepwatch_backend_running_requests", { backend: "c" })).toBeUndefined();
    expect(value(text, "stepwatch_backend_last_read_timestamp_seconds", { backend: "c" })).toBeUndefined();
    expect(value(text, "stepwatch_proxy_up", { proxy: "lb" })).toBe(1);
    expect(value(text, "stepwatch_proxy_up", { proxy: "lb2" })).toBe(0);
    expect(value(text, "stepwatch_poll_interval_seconds", {})).toBe(5);
  });

  it("exports silences, a proxy's backends and failing channels, so rules can respect them", async () => {
    const m = new StepwatchMetrics({ defaultMetrics: false });
    const f = fleet([
      backend("ack", "stuck", { acknowledged: { by: "ana", at: NOW - 5000, note: "on it" } }),
      backend("maint", "down", { maintenance: { until: NOW + 3_600_000, by: "ana", note: null, source: "api" } }),
      backend("plain", "stuck"),
      backend("looping", "starting", { crashLoop: { since: NOW - 60_000, restarts: 3, lastAt: NOW - 60_000, clearsAt: NOW + 240_000, threshold: 3, windowMinutes: 5 } }),
    ]);
    f.proxies = [
      { ...f.proxies[0], id: "all", healthyBackends: 2, totalBackends: 2, sleepingBackends: 0, health: "ok" },
      { ...f.proxies[0], id: "none", healthyBackends: 0, totalBackends: 3, sleepingBackends: 0, health: "none" },
      { ...f.proxies[0], id: "bare", healthyBackends: null, totalBackends: null, sleepingBackends: null, health: null },
    ];
    f.notificationChannels = [
      { id: "slack", type: "slack", consecutiveFailures: 3, lastAttemptAt: NOW, lastOkAt: null, lastError: "HTTP 500", failing: true },
      { id: "ntfy", type: "ntfy", consecutiveFailures: 0, lastAttemptAt: NOW, lastOkAt: NOW, lastError: null, failing: false },
    ];
    m.attach(() => ({ fleet: f, pollIntervalSeconds: 5 }));
    const text = await m.render();
    const of = (name: string, label: string) => Object.fromEntries(samples(text, name).map((s) => [s.labels[label], s.value]));
    expect(of("stepwatch_backend_acknowledged", "backend")).toEqual({ ack: 1, maint: 0, plain: 0, looping: 0 });
    expect(of("stepwatch_backend_in_maintenance", "backend")).toEqual({ ack: 0, maint: 1, plain: 0, looping: 0 });
    // A crash loop is a flag beside the state: 0 where the fleet answer has none.
    expect(of("stepwatch_backend_crash_loop", "backend")).toEqual({ ack: 0, maint: 0, plain: 0, looping: 1 });
    // A proxy that names no backends has no count: 0 of 0 would read as "none healthy".
    expect(of("stepwatch_proxy_backends_healthy", "proxy")).toEqual({ all: 2, none: 0 });
    expect(of("stepwatch_proxy_backends", "proxy")).toEqual({ all: 2, none: 3 });
    expect(of("stepwatch_proxy_up", "proxy")).toEqual({ all: 1, none: 1, bare: 1 });
    expect(of("stepwatch_notification_channel_failing", "channel")).toEqual({ slack: 1, ntfy: 0 });
  });

  it("reads each scrape fresh from the snapshot: a backend gone from it is gone from the export", async () => {
    const m = new StepwatchMetrics({ defaultMetrics: false });
    let list = [backend("a", "busy"), backend("b", "down")];
    m.attach(() => ({ fleet: fleet(list), pollIntervalSeconds: 5 }));
    expect(value(await m.render(), "stepwatch_backend_state", { backend: "b", state: "down" })).toBe(1);
    list = [backend("a", "stalled")];
    const text = await m.render();
    expect(samples(text, "stepwatch_backend_state").filter((s) => s.labels.backend === "b")).toEqual([]);
    expect(value(text, "stepwatch_backend_state", { backend: "a", state: "stalled" })).toBe(1);
  });

  it("labels the engine from the snapshot once backends have one (unknown until detected), else vllm", async () => {
    const m = new StepwatchMetrics({ defaultMetrics: false });
    const withEngine = { ...backend("l", "idle"), engine: "llamacpp" } as FleetBackend;
    const notYet = { ...backend("n", "unknown"), engine: null } as FleetBackend;
    m.attach(() => ({ fleet: fleet([withEngine, backend("v", "idle"), notYet]), pollIntervalSeconds: 5 }));
    const text = await m.render();
    expect(samples(text, "stepwatch_backend_state").find((s) => s.labels.backend === "n")!.labels.engine).toBe("unknown");
    expect(value(text, "stepwatch_backend_state", { backend: "l", state: "idle" })).toBe(1);
    expect(samples(text, "stepwatch_backend_state").find((s) => s.labels.backend === "l")!.labels.engine).toBe("llamacpp");
    expect(samples(text, "stepwatch_backend_state").find((s) => s.labels.backend === "v")!.labels.engine).toBe("vllm");
  });

  it("seeds restart counts once, with every outcome at 0 for every backend, then counts resolutions", async () => {
    const m = new StepwatchMetrics({ defaultMetrics: false });
    m.seedRestarts(["a", "b"], [
      { backendId: "a", outcome: "recovered", count: 3 },
      { backendId: "a", outcome: "failed", count: 1 },
      { backendId: "gone", outcome: "failed", count: 7 }, // no longer in the config
    ]);
    m.telemetry.restartResolved("a", "failed");
    m.telemetry.restartResolved("b", "timed-out");
    const text = await m.render();
    const r = samples(text, "stepwatch_restarts_total");
    expect(r).toHaveLength(2 * RESTART_OUTCOMES.length);
    expect(value(text, "stepwatch_restarts_total", { backend: "a", outcome: "recovered" })).toBe(3);
    expect(value(text, "stepwatch_restarts_total", { backend: "a", outcome: "failed" })).toBe(2);
    expect(value(text, "stepwatch_restarts_total", { backend: "a", outcome: "timed-out" })).toBe(0);
    expect(value(text, "stepwatch_restarts_total", { backend: "b", outcome: "timed-out" })).toBe(1);
    expect(r.some((s) => s.labels.backend === "gone")).toBe(false);
  });

  it("a config reload: a removed backend's restart series go, one added (back) is seeded from the database once", async () => {
    const m = new StepwatchMetrics({ defaultMetrics: false });
    const stored = [{ backendId: "a", outcome: "recovered" as const, count: 3 }];
    m.seedRestarts(["a"], stored);
    m.forgetRestarts(["a"]); // reload removed a
    expect(samples(await m.render(), "stepwatch_restarts_total")).toHaveLength(0);
    m.seedRestarts(["a", "c"], stored); // a later reload added a back, and c
    const text = await m.render();
    expect(value(text, "stepwatch_restarts_total", { backend: "a", outcome: "recovered" })).toBe(3); // not 6
    expect(value(text, "stepwatch_restarts_total", { backend: "c", outcome: "failed" })).toBe(0);
  });

  it("counts stepwatch's own health: poll lag, read durations, failed reads, storage and notification failures", async () => {
    const m = new StepwatchMetrics({ defaultMetrics: false });
    m.telemetry.pollLag(30);
    m.telemetry.pollLag(2);
    m.telemetry.read("backend", 40, "ok");
    m.telemetry.read("backend", 10_000, "timeout");
    m.telemetry.read("proxy", 3, "refused");
    m.telemetry.read("backend", 10_600, "timeout", true); // seen late: kept, not judged
    m.telemetry.storageError();
    m.notificationChannel("email");
    m.notificationFailed("webhook");
    m.notificationFailed("webhook");
    const text = await m.render();
    expect(value(text, "stepwatch_poll_lag_seconds_count", {})).toBe(2);
    expect(value(text, "stepwatch_poll_lag_seconds_sum", {})).toBeCloseTo(0.032, 6);
    expect(value(text, "stepwatch_read_duration_seconds_count", { kind: "backend" })).toBe(3);
    expect(value(text, "stepwatch_read_duration_seconds_bucket", { kind: "backend", le: "0.05" })).toBe(1);
    expect(value(text, "stepwatch_read_duration_seconds_count", { kind: "proxy" })).toBe(1);
    expect(value(text, "stepwatch_read_failures_total", { kind: "backend", outcome: "timeout" })).toBe(2);
    expect(value(text, "stepwatch_reads_not_judged_total", { kind: "backend" })).toBe(1);
    expect(value(text, "stepwatch_reads_not_judged_total", { kind: "proxy" })).toBe(0); // there from the start
    expect(value(text, "stepwatch_read_failures_total", { kind: "proxy", outcome: "refused" })).toBe(1);
    expect(value(text, "stepwatch_read_failures_total", { kind: "backend", outcome: "ok" })).toBeUndefined();
    expect(value(text, "stepwatch_storage_errors_total", {})).toBe(1);
    expect(value(text, "stepwatch_notification_failures_total", { channel: "email" })).toBe(0);
    expect(value(text, "stepwatch_notification_failures_total", { channel: "webhook" })).toBe(2);
  });

  it("passes promtool check metrics, default process metrics included; and promtool does catch a bad exposition", async () => {
    assertPromtool();
    const m = new StepwatchMetrics();
    const states = BACKEND_STATES.map((s, i) => backend(`b${i}`, s));
    m.attach(() => ({ fleet: fleet(states), pollIntervalSeconds: 5 }));
    m.seedRestarts(states.map((b) => b.id), []);
    m.telemetry.read("backend", 12, "refused");
    m.telemetry.pollLag(1);
    const text = await m.render();
    expect(text).toContain("process_cpu_user_seconds_total");
    expect(text).toContain("nodejs_eventloop_lag_seconds");
    const ok = await promtool(["check", "metrics"], text);
    expect({ code: ok.code, out: ok.stdout + ok.stderr }).toEqual({ code: 0, out: "" });

    // The same check on a gauge named like a counter and a metric without HELP: promtool objects.
    const bad = await promtool(["check", "metrics"], "# TYPE stepwatch_things_total gauge\nstepwatch_things_total 1\n");
    expect(bad.code).not.toBe(0);
    expect(bad.stdout + bad.stderr).toMatch(/stepwatch_things_total/);
  });

  it("keeps one instance per process on globalThis", () => {
    expect(getStepwatchMetrics()).toBe(getStepwatchMetrics());
    expect((globalThis as Record<symbol, unknown>)[Symbol.for("stepwatch.metrics")]).toBe(getStepwatchMetrics());
  });
});

describe("the /metrics bearer token", () => {
  const token = "scrape-token-0123456789";
  it("accepts exactly `Bearer <token>`", () => {
    expect(bearerMatches(`Bearer ${token}`, token)).toBe(true);
    expect(bearerMatches(`bearer ${token}`, token)).toBe(true);
    expect(bearerMatches(null, token)).toBe(false);
    expect(bearerMatches("", token)).toBe(false);
    expect(bearerMatches(`Bearer ${token}x`, token)).toBe(false);
    expect(bearerMatches(`Bearer ${token.slice(0, -1)}`, token)).toBe(false);
    expect(bearerMatches(`Basic ${token}`, token)).toBe(false);
    expect(bearerMatches(token, token)).toBe(false);
    expect(bearerMatches("Bearer ", token)).toBe(false);
  });
});
