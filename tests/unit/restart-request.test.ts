import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { failInserts, openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import type { BackendConfig } from "@/lib/config";
import { type Verdict, reason, type Reason } from "@/lib/core/types";
import { DomainError } from "@/lib/core/errors";
import { requestRestart, type CurrentView, type RestartDeps } from "@/lib/restart/request";
import type { ActionResult } from "@/lib/restart/execute";

const STUCK = [reason("no-progress", "2 running, 0 new steps in 134 s across 3 reads"), reason("no-progress-stuck", "no progress across 2 waits and at least 120 s")];

function verdict(state: Verdict["state"], reasons: Reason[] = [reason("unclassified", `it is ${state}`)]): Verdict {
  const healthy = state === "idle" || state === "busy";
  return {
    state,
    health: healthy ? "yes" : "no",
    healthy,
    restartRecommended: state === "stuck" || state === "down",
    reasons,
    rates: { stepsPerSecond: 0, generationTokensPerSecond: 0, promptTokensPerSecond: 0 },
    basis: [],
  };
}

const OK: ActionResult = { ok: true, exitCode: 0, output: "restarted", error: null, finishedAt: 0 };

describe("requestRestart", () => {
  let dir: string;
  let handle: DbHandle;
  let views: Record<string, CurrentView>;
  let calls: string[];
  let deps: RestartDeps;
  const backends: BackendConfig[] = [
    { id: "gb10-a", url: "http://127.0.0.1:1", engine: "auto", probe: "auto", labels: {}, restart: { kind: "command", command: ["/bin/true"], timeoutSeconds: 5 } },
    { id: "gb10-b", url: "http://127.0.0.1:2", engine: "auto", probe: "auto", labels: {} },
  ];

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "stepwatch-restart-"));
    handle = await openTestDb(path.join(dir, "t.db"));
    views = { "gb10-a": { verdict: verdict("stuck", STUCK), reading: null } };
    calls = [];
    deps = {
      db: handle,
      backends,
      restartCooldownSeconds: 600,
      commandEnv: { PATH: process.env.PATH },
      current: (id) => views[id] ?? null,
      execute: async (_a, ctx) => {
        calls.push(ctx.backendId);
        return OK;
      },
    };
  });
  afterEach(() => {
    handle.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const code = (fn: () => unknown): string => {
    try {
      fn();
    } catch (e) {
      if (e instanceof DomainError) return e.code;
      throw e;
    }
    return "accepted";
  };

  it("refuses an unknown backend and one without a restart action", () => {
    expect(code(() => requestRestart({ backendId: "nope", operator: "ana", now: 1 }, deps))).toBe("not-found");
    expect(code(() => requestRestart({ backendId: "gb10-b", operator: "ana", now: 1 }, deps))).toBe("not-configured");
  });

  it("records who, when, state and evidence, runs the action once and leaves the event pending", async () => {
    const { event, done } = requestRestart({ backendId: "gb10-a", operator: "ana", note: "hung since 3am", now: 1_000 }, deps);
    expect(event).toMatchObject({
      backendId: "gb10-a",
      requestedBy: "ana",
      requestedAt: 1_000,
      stateAtRequest: "stuck",
      healthyAtRequest: false,
      note: "hung since 3am",
      action: "command: /bin/true",
      outcome: null,
    });
    // The verdict's reasons are the evidence, each with the rule that fired.
    expect(event.evidence.reasons.map((r) => r.rule)).toEqual(["no-progress", "no-progress-stuck"]);
    await done;
    expect(calls).toEqual(["gb10-a"]);
    const row = handle.sqlite.prepare("SELECT * FROM restart_events").get() as Record<string, unknown>;
    expect(row).toMatchObject({ command_exit_code: 0, command_output: "restarted", outcome: null });
  });

  it("asks for the typed id before restarting a healthy backend", async () => {
    views["gb10-a"] = { verdict: verdict("busy"), reading: null };
    expect(code(() => requestRestart({ backendId: "gb10-a", operator: "ana", now: 1 }, deps))).toBe("confirmation-required");
    expect(code(() => requestRestart({ backendId: "gb10-a", operator: "ana", confirm: "gb10-A", now: 1 }, deps))).toBe(
      "confirmation-required",
    );
    const { event, done } = requestRestart({ backendId: "gb10-a", operator: "ana", confirm: "gb10-a", now: 1 }, deps);
    expect(event).toMatchObject({ healthyAtRequest: true, confirmedHealthy: true, stateAtRequest: "busy" });
    await done;
  });

  it("answers 'already restarting' while one is pending, and runs nothing twice", async () => {
    const first = requestRestart({ backendId: "gb10-a", operator: "ana", now: 1_000 }, deps);
    let err: DomainError | undefined;
    try {
      requestRestart({ backendId: "gb10-a", operator: "bo", overrideCooldown: true, now: 2_000 }, deps);
    } catch (e) {
      err = e as DomainError;
    }
    expect(err?.code).toBe("conflict");
    expect(err?.message).toMatch(/already restarting/);
    expect(err?.details).toMatchObject({ reason: "pending" });
    await first.done;
    expect(calls).toEqual(["gb10-a"]);
    expect(handle.sqlite.prepare("SELECT COUNT(*) AS n FROM restart_events").get()).toEqual({ n: 1 });
  });

  it("writes the audit line with the event, and none for a refused restart", async () => {
    const audit = () => handle.sqlite.prepare("SELECT actor, actor_kind AS kind, action, target, address, detail FROM audit_log ORDER BY id").all();
    // The first action fails (the event closes), so the second is refused by the cooldown alone.
    deps.execute = async () => ({ ...OK, ok: false, exitCode: 1, error: "exit 1" });
    const first = requestRestart({ backendId: "gb10-a", operator: "ci", actorKind: "token", address: "10.0.0.7", now: 1_000 }, deps);
    await first.done;
    expect(audit()).toEqual([{ actor: "ci", kind: "token", action: "restart", target: "gb10-a", address: "10.0.0.7", detail: `restart #${first.event.id}` }]);
    expect(code(() => requestRestart({ backendId: "gb10-a", operator: "bo", now: 2_000 }, deps))).toBe("conflict");
    expect(audit()).toHaveLength(1);
    const again = requestRestart({ backendId: "gb10-a", operator: "bo", overrideCooldown: true, now: 3_000 }, deps);
    await again.done;
    // A session's operator by default; the override is in the line.
    expect(audit()[1]).toEqual({ actor: "bo", kind: "operator", action: "restart", target: "gb10-a", address: null, detail: `restart #${again.event.id}, cooldown overridden` });
  });

  it("keeps the evidence's readings without their in-memory latency figures", async () => {
    const reading = { at: 1, latencyMs: 3, outcome: "ok" as const, metrics: null };
    const latency = { ttft: null, itl: null, e2e: null, queue: null, preemptions: null, successByReason: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`reason-${i}`, i])) };
    views["gb10-a"] = { verdict: { ...verdict("stuck"), basis: [{ ...reading, latency }] }, reading: null };
    const { event, done } = requestRestart({ backendId: "gb10-a", operator: "ana", now: 1_000 }, deps);
    await done;
    const stored = handle.sqlite.prepare("SELECT evidence FROM restart_events WHERE id = ?").get(event.id) as { evidence: string };
    expect(JSON.parse(stored.evidence).readings).toEqual([reading]);
    expect(stored.evidence.length).toBeLessThan(1024);
  });

  it("records no restart when its audit line cannot be written (one transaction)", () => {
    failInserts(handle, "audit_log", "audit log unwritable");
    expect(code(() => requestRestart({ backendId: "gb10-a", operator: "ana", now: 1_000 }, deps))).toBe("unavailable");
    expect(handle.sqlite.prepare("SELECT COUNT(*) AS n FROM restart_events").get()).toEqual({ n: 0 });
    expect(calls).toEqual([]);
  });

  it("answers the conflict (409) before asking for the typed id (422): pending, then cooldown", async () => {
    const first = requestRestart({ backendId: "gb10-a", operator: "ana", now: 1_000_000 }, deps);
    // Now it looks healthy, and nobody typed its id: the pending restart is still the first answer.
    views["gb10-a"] = { verdict: verdict("busy"), reading: null };
    const refusal = (input: { overrideCooldown?: boolean; now: number }): DomainError => {
      try {
        requestRestart({ backendId: "gb10-a", operator: "bo", ...input }, deps);
      } catch (e) {
        return e as DomainError;
      }
      throw new Error("the restart was accepted");
    };
    const pending = refusal({ overrideCooldown: true, now: 1_000_500 });
    expect(pending.code).toBe("conflict");
    expect(pending.details).toEqual({ reason: "pending", pendingId: first.event.id, requestedBy: "ana", requestedAt: 1_000_000 });
    expect(pending.message).toMatch(/already restarting \(asked by ana at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)/);
    await first.done;
    handle.sqlite.prepare("UPDATE restart_events SET outcome = 'recovered'").run();
    const cooling = refusal({ now: 1_060_000 });
    expect(cooling.code).toBe("conflict");
    expect(cooling.details).toEqual({ reason: "cooldown", cooldownUntil: 1_600_000, requestedBy: "ana", requestedAt: 1_000_000 });
    // With the cooldown overridden nothing blocks any more, and the typed id is asked for.
    expect(refusal({ overrideCooldown: true, now: 1_060_000 }).code).toBe("confirmation-required");
    expect(calls).toEqual(["gb10-a"]);
  });

  it("refuses within the cooldown unless overridden, and records the override", async () => {
    const first = requestRestart({ backendId: "gb10-a", operator: "ana", now: 1_000_000 }, deps);
    await first.done;
    handle.sqlite.prepare("UPDATE restart_events SET outcome = 'recovered'").run();
    let err: DomainError | undefined;
    try {
      requestRestart({ backendId: "gb10-a", operator: "ana", now: 1_000_000 + 60_000 }, deps);
    } catch (e) {
      err = e as DomainError;
    }
    expect(err?.code).toBe("conflict");
    expect(err?.message).toMatch(/cooldown until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; override/);
    expect(err?.details).toMatchObject({ reason: "cooldown", cooldownUntil: 1_000_000 + 600_000 });
    const second = requestRestart({ backendId: "gb10-a", operator: "ana", overrideCooldown: true, now: 1_000_000 + 60_000 }, deps);
    expect(second.event.overrideCooldown).toBe(true);
    await second.done;
    handle.sqlite.prepare("UPDATE restart_events SET outcome = 'recovered'").run();
    // After the cooldown, no override is needed.
    const third = requestRestart({ backendId: "gb10-a", operator: "ana", now: 1_000_000 + 60_000 + 600_001 }, deps);
    await third.done;
    expect(calls).toHaveLength(3);
  });

  it("marks the event failed at once when the action fails, and does not retry", async () => {
    deps.execute = async () => ({ ok: false, exitCode: 3, output: "unit not found", error: "exited with status 3", finishedAt: 5 });
    const { done } = requestRestart({ backendId: "gb10-a", operator: "ana", now: 1 }, deps);
    await done;
    const row = handle.sqlite.prepare("SELECT * FROM restart_events").get() as Record<string, unknown>;
    expect(row).toMatchObject({ outcome: "failed", command_exit_code: 3, command_output: "unit not found", resolved_at: 5 });
    expect(String(row.resolution)).toMatch(/exited with status 3; not retried/);
  });

  it("runs the configured command with deps.commandEnv, not stepwatch's own environment", async () => {
    delete deps.execute;
    const command = [process.execPath, "-e", "process.stdout.write(String(process.env.SW_UNIT_SECRET))"];
    deps.backends = [{ id: "envy", url: "http://127.0.0.1:3", engine: "auto", probe: "auto", labels: {}, restart: { kind: "command", command, timeoutSeconds: 10 } }];
    process.env.SW_UNIT_SECRET = "in-stepwatch-only";
    try {
      await requestRestart({ backendId: "envy", operator: "ana", now: 1 }, deps).done;
    } finally {
      delete process.env.SW_UNIT_SECRET;
    }
    const row = handle.sqlite.prepare("SELECT command_exit_code, command_output FROM restart_events").get();
    expect(row).toEqual({ command_exit_code: 0, command_output: "undefined" });
  });

  it("keeps a second pending row out even from another connection (the partial unique index)", async () => {
    const other = await openTestDb(handle.path);
    try {
      const { done } = requestRestart({ backendId: "gb10-a", operator: "ana", now: 1 }, deps);
      await done;
      const insert = () =>
        other.sqlite
          .prepare(
            "INSERT INTO restart_events (backend_id, requested_at, requested_by, state_at_request, healthy_at_request, evidence, action) VALUES ('gb10-a', 2, 'bo', 'stuck', 0, '{}', 'x')",
          )
          .run();
      // The code lib/restart/request.ts maps to a conflict, on either engine (db/pg/sync-client.ts SQLITE_CODE_OF).
      expect(insert).toThrow(expect.objectContaining({ code: "SQLITE_CONSTRAINT_UNIQUE" }));
    } finally {
      other.close();
    }
  });
});
