/**
 * The Prometheus export fed by a real watcher: simulators on 127.0.0.1 (busy, hung, dead), a real
 * SQLite temp file, the restart verb with a command that fails, and the rendered exposition checked
 * by Debian's real `promtool check metrics`.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "@/db/client";
import { type DbHandle } from "@/db/types";
import { restartOutcomeCounts } from "@/db/queries/restarts";
import { restartEvents } from "@/db/schema";
import { BACKEND_STATES } from "@/lib/core/states";
import { parseConfig, type Config } from "@/lib/config";
import { StepwatchMetrics } from "@/lib/api/export/metrics";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { restartCommandEnv } from "@/lib/restart/execute";
import { requestRestart } from "@/lib/restart/request";
import { startLeastConnProxy, type LeastConnProxy } from "@/sim/proxy";
import { startSimulator, type Simulator } from "@/sim/server";
import { startWatcher, type Watcher } from "@/lib/watcher";
import { fleetSnapshot } from "@/lib/api/snapshot";
import { assertPromtool, promtool } from "../support/promtool";
import { waitFor } from "./sim-support";

let dir: string;
let h: DbHandle;
let config: Config;
let watcher: Watcher;
let metrics: StepwatchMetrics;
let proxy: LeastConnProxy;
/** In front of the hung and the dead backend: it still answers /v1/models (the hung one lists its model). */
let badProxy: LeastConnProxy;
const sims: Record<"busy" | "hung" | "dead", Simulator> = {} as never;

function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return parsePrometheus(text).samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

beforeAll(async () => {
  assertPromtool();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-metrics-"));
  h = openDb(path.join(dir, "sw.db"));
  sims.busy = await startSimulator({ maxNumSeqs: 2 });
  sims.hung = await startSimulator();
  sims.dead = await startSimulator();
  proxy = await startLeastConnProxy({ backends: [sims.busy.url] });
  badProxy = await startLeastConnProxy({ backends: [sims.hung.url, sims.dead.url] });
  sims.busy.load({ requests: 3, promptTokens: 200, maxTokens: 1_000_000 });
  sims.hung.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
  await sims.hung.setMode("hang");
  await sims.dead.crash();
  // One restart of "dead" recovered before this process started: the counter starts from it.
  h.db
    .insert(restartEvents)
    .values({ backendId: "dead", requestedAt: Date.now() - 86_400_000, requestedBy: "ana", stateAtRequest: "stuck", healthyAtRequest: false, evidence: { reasons: [], readings: [] }, action: "command: /bin/true", outcome: "recovered", resolvedAt: Date.now() - 86_000_000 })
    .run();

  config = parseConfig(
    {
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      probeTimeoutSeconds: 3,
      idleProbeSeconds: 60,
      restartCooldownSeconds: 0,
      backends: [
        { id: "busy", url: sims.busy.url },
        { id: "hung", url: sims.hung.url },
        { id: "dead", url: sims.dead.url, restart: { command: ["/bin/false"] } },
      ],
      proxies: [
        { id: "lb", url: proxy.url, backends: ["busy"] },
        { id: "lb-bad", url: badProxy.url, backends: ["hung", "dead"] },
      ],
    },
    "test",
    { env: {} },
  );
  metrics = new StepwatchMetrics();
  metrics.seedRestarts(config.backends.map((b) => b.id), restartOutcomeCounts(h.db));
  watcher = startWatcher({ config, db: h.db, telemetry: metrics.telemetry, log: () => {} });
  metrics.attach(() => ({ fleet: fleetSnapshot(watcher, { demo: false, now: Date.now(), restartCooldownSeconds: 0, pollIntervalSeconds: 1 }), pollIntervalSeconds: 1 }));
});

afterAll(async () => {
  await watcher?.stop();
  await proxy?.close();
  await badProxy?.close();
  await Promise.allSettled(Object.values(sims).map((s) => s.close()));
  h?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("/metrics fed by a real watcher over the simulator", () => {
  it("shows the hung backend stuck, the dead one down, the busy one busy, and passes promtool check metrics", async () => {
    const text = await waitFor(
      "hung stuck, dead down and busy busy in the export",
      async () => {
        const t = await metrics.render();
        const on = (b: string, s: string) => value(t, "stepwatch_backend_state", { backend: b, state: s }) === 1;
        return on("hung", "stuck") && on("dead", "down") && on("busy", "busy") ? t : null;
      },
      40_000,
      250,
    );
    const lint = await promtool(["check", "metrics"], text!);
    expect({ code: lint.code, out: lint.stdout + lint.stderr }).toEqual({ code: 0, out: "" });

    const state = parsePrometheus(text!).samples.filter((s) => s.name === "stepwatch_backend_state");
    expect(state).toHaveLength(3 * BACKEND_STATES.length);
    expect(value(text!, "stepwatch_backend_restart_recommended", { backend: "hung" })).toBe(1);
    expect(value(text!, "stepwatch_backend_healthy", { backend: "busy" })).toBe(1);
    expect(value(text!, "stepwatch_backend_running_requests", { backend: "hung" })).toBe(2);
    expect(value(text!, "stepwatch_backend_steps_per_second", { backend: "hung" })).toBe(0);
    expect(value(text!, "stepwatch_backend_running_requests", { backend: "dead" })).toBeUndefined();
    expect(value(text!, "stepwatch_proxy_up", { proxy: "lb" })).toBe(1);
    expect(value(text!, "stepwatch_proxy_backends_healthy", { proxy: "lb" })).toBe(1);
    expect(value(text!, "stepwatch_proxy_backends", { proxy: "lb" })).toBe(1);
    // stepwatch's own health, counted by the watcher itself.
    expect(value(text!, "stepwatch_read_duration_seconds_count", { kind: "backend" })).toBeGreaterThan(6);
    expect(value(text!, "stepwatch_read_duration_seconds_count", { kind: "proxy" })).toBeGreaterThan(1);
    expect(value(text!, "stepwatch_read_failures_total", { kind: "backend", outcome: "refused" })).toBeGreaterThanOrEqual(2);
    expect(value(text!, "stepwatch_poll_lag_seconds_count")).toBeGreaterThan(0);
    expect(value(text!, "stepwatch_restarts_total", { backend: "dead", outcome: "recovered" })).toBe(1);
    expect(value(text!, "stepwatch_restarts_total", { backend: "dead", outcome: "failed" })).toBe(0);
  });

  it("tells the truth about a proxy that answers while nothing behind it is healthy", async () => {
    const text = await waitFor(
      "lb-bad up with its backends judged",
      async () => {
        const t = await metrics.render();
        const judged = value(t, "stepwatch_backend_state", { backend: "hung", state: "stuck" }) === 1 && value(t, "stepwatch_backend_state", { backend: "dead", state: "down" }) === 1;
        return judged && value(t, "stepwatch_proxy_up", { proxy: "lb-bad" }) === 1 ? t : null;
      },
      40_000,
      250,
    );
    expect(value(text!, "stepwatch_proxy_backends_healthy", { proxy: "lb-bad" })).toBe(0);
    expect(value(text!, "stepwatch_proxy_backends", { proxy: "lb-bad" })).toBe(2);
    const fleet = fleetSnapshot(watcher, { demo: false, now: Date.now(), restartCooldownSeconds: 0, pollIntervalSeconds: 1 });
    expect(fleet.proxies.find((p) => p.id === "lb-bad")).toMatchObject({ state: "up", healthyBackends: 0, totalBackends: 2, health: "none" });
    expect(fleet.proxies.find((p) => p.id === "lb")).toMatchObject({ state: "up", healthyBackends: 1, totalBackends: 1, health: "ok" });
  });

  it("counts a restart that failed once its result is recorded", async () => {
    const { done } = requestRestart(
      { backendId: "dead", operator: "ana", now: Date.now() },
      {
        db: h,
        backends: config.backends,
        restartCooldownSeconds: 0,
        commandEnv: restartCommandEnv(process.env, config.secretEnvNames),
        current: (b) => watcher.current(b),
        onPending: (b, p) => watcher.notifyRestartRequested(b, p),
        onResolved: (b, outcome) => watcher.notifyRestartResolved(b, outcome),
      },
    );
    await done;
    const text = await metrics.render();
    expect(value(text, "stepwatch_restarts_total", { backend: "dead", outcome: "failed" })).toBe(1);
    expect(value(text, "stepwatch_restarts_total", { backend: "dead", outcome: "recovered" })).toBe(1);
    expect(restartOutcomeCounts(h.db).find((c) => c.backendId === "dead" && c.outcome === "failed")?.count).toBe(1);
  });

  it("counts storage errors when the database refuses writes", async () => {
    const before = value(await metrics.render(), "stepwatch_storage_errors_total") ?? 0;
    h.sqlite.exec("CREATE TRIGGER full BEFORE INSERT ON samples BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    try {
      await waitFor("a storage error counted", async () => (value(await metrics.render(), "stepwatch_storage_errors_total") ?? 0) > before, 15_000, 100);
    } finally {
      h.sqlite.exec("DROP TRIGGER full");
    }
  });
});
