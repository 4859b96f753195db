/**
 * Evidence bundles (issue 32) with real parts: the watcher reading a stuck simulator over HTTP, a
 * real SQLite file, real evidence commands (one that prints escape codes, binary and its secret,
 * one that hangs, one that prints 10 MB, one that does not exist) and the restart verb running a
 * real restart command that writes the moment it ran. What is compared is order (a command's
 * recorded end against the restart command's own timestamp), never a duration.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openTestDb } from "../support/test-db";
import { type DbHandle } from "@/db/types";
import { evidenceById, evidenceIdsOf, evidenceOfBackend, insertEvidence, pruneEvidence } from "@/db/queries/evidence";
import { parseConfig, type Config } from "@/lib/config";
import { MAX_COMMAND_OUTPUT_BYTES, type EvidenceBundle } from "@/lib/core/evidence";
import { requestRestart, type RestartDeps } from "@/lib/restart/request";
import { restartCommandEnv } from "@/lib/restart/execute";
import { EvidenceRecorder } from "@/lib/watcher/evidence";
import { startWatcher, type Watcher } from "@/lib/watcher";
import { startSimulator, type Simulator } from "@/sim/server";
import { waitFor } from "./sim-support";

const SECRET = "evidence-secret-7f3a9c1e";
const ENV = { SW_EVIDENCE_SECRET: SECRET };

let dir = "";
let h: DbHandle | null = null;
const sims: Simulator[] = [];
let watcher: Watcher | null = null;
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await watcher?.stop();
  watcher = null;
  await Promise.all(sims.splice(0).map((s) => s.close()));
  h?.close();
  h = null;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A small Node script in `dir`, run with this node (argv, no shell). */
function script(name: string, source: string): string[] {
  const file = path.join(dir, `${name}.cjs`);
  fs.writeFileSync(file, source);
  return [process.execPath, file];
}

/** The four commands of the issue, and a restart command that writes when it ran. */
function commands() {
  const prints = script(
    "prints",
    `process.stdout.write("hello evidence\\n\\u001b[31mred\\u001b[0m\\n");
     process.stdout.write(Buffer.from([0xff, 0xfe, 0x0a]));
     console.log("secret=" + process.env.EVIDENCE_TOKEN);
     console.error("py-spy: Thread 0x7f (idle)");`,
  );
  // Like a py-spy dump, it takes a moment: a restart that did not wait for it would run first.
  const slow = script("slow", `setTimeout(() => console.log("slow evidence done"), 1000);`);
  const hangs = script("hangs", `console.log("started"); setInterval(() => {}, 1000);`);
  const big = script("big", `const c = Buffer.alloc(1024 * 1024, 0x41); for (let i = 0; i < 10; i++) process.stdout.write(c);`);
  const stamp = path.join(dir, "restart-ran-at");
  const restart = script("restart", `require("fs").appendFileSync(${JSON.stringify(stamp)}, Date.now() + "\\n");`);
  return { prints, slow, hangs, big, missing: [path.join(dir, "no-such-evidence-tool")], restart, stamp };
}

function restartDeps(config: Config, w: Pick<Watcher, "current" | "evidence">, evidenceTimeoutSeconds: number): RestartDeps {
  return {
    db: h!,
    backends: config.backends,
    restartCooldownSeconds: 0,
    commandEnv: restartCommandEnv(process.env, config.secretEnvNames),
    current: (id) => w.current(id),
    evidence: w.evidence,
    evidenceTimeoutSeconds,
  };
}

const restartTimes = (file: string) => fs.readFileSync(file, "utf8").trim().split("\n").map(Number);

describe("evidence of a stuck backend", () => {
  it("is captured once when it gets stuck, holds every command's real run, and the restart links it after it ended", async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-evidence-"));
    h = await openTestDb(path.join(dir, "e.db"));
    const sim = await startSimulator({ weightsLoadSeconds: 0.2 });
    sims.push(sim);
    sim.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
    await sim.setMode("hang");
    const c = commands();
    const config = parseConfig(
      {
        pollIntervalSeconds: 0.5,
        stuckAfterSeconds: 2,
        idleProbeSeconds: 60,
        backends: [
          {
            id: "hung",
            url: sim.url,
            restart: { command: c.restart },
            evidence: {
              commands: [
                { name: "prints", command: c.prints, timeoutSeconds: 20, env: { EVIDENCE_TOKEN: "env:SW_EVIDENCE_SECRET" } },
                { name: "hangs", command: c.hangs, timeoutSeconds: 2 },
                { name: "big", command: c.big, timeoutSeconds: 20 },
                { name: "missing", command: c.missing, timeoutSeconds: 5 },
              ],
            },
          },
        ],
      },
      "test",
      { env: ENV },
    );
    watcher = startWatcher({ config, db: h.db, log: () => {}, flushIntervalMs: 100 });

    const found = await waitFor(
      "a finished evidence bundle",
      () => {
        const row = evidenceOfBackend(h!.db, "hung", 5)[0];
        return row && row.finishedAt !== null ? evidenceById(h!.db, row.id) : undefined;
      },
      60_000,
    );
    const captured = found!;
    const b: EvidenceBundle = captured.bundle;
    expect(b.trigger).toBe("stuck");
    expect(b.state).toBe("stuck");
    expect(b.timeline.at(-1)?.to).toBe("stuck");
    expect(b.metrics.length).toBeGreaterThan(0);
    expect(b.metrics.at(-1)!.body).toContain("vllm:num_requests_running");
    expect(b.status.map((s) => s.path)).toEqual(expect.arrayContaining(["/health", "/v1/models"]));

    const run = Object.fromEntries(b.commands.map((x) => [x.name, x]));
    expect(run.prints).toMatchObject({ exitCode: 0, error: null, timedOut: false });
    expect(run.prints.output).toContain("hello evidence");
    expect(run.prints.output).toContain("py-spy: Thread 0x7f (idle)");
    // The escape code is shown as text, never sent as ESC; the bytes that were not UTF-8 as U+FFFD.
    expect(run.prints.output).toContain("\\x1b[31mred\\x1b[0m");
    expect(run.prints.output).not.toContain("\u001b");
    expect(run.prints.output).toContain("\uFFFD");
    expect(run.prints.output).toContain("secret=[secret redacted]");
    expect(run.hangs).toMatchObject({ timedOut: true, exitCode: null });
    expect(run.hangs.error).toMatch(/timed out/);
    expect(run.big.exitCode).toBe(0);
    expect(run.big.outputBytes).toBe(10 * 1024 * 1024);
    expect(Buffer.byteLength(run.big.output)).toBeLessThan(MAX_COMMAND_OUTPUT_BYTES + 200);
    expect(run.missing.exitCode).toBeNull();
    expect(run.missing.error).toMatch(/cannot run .*no-such-evidence-tool/);
    for (const x of b.commands) expect(x.durationMs).not.toBeNull();
    expect(JSON.stringify(captured)).not.toContain(SECRET);
    expect(captured.sizeBytes).toBeLessThan(config.backends[0].evidence!.maxBytes + 64 * 1024);

    // The operator restarts it: the incident already has its bundle, so it is linked, not captured again.
    const accepted = requestRestart({ backendId: "hung", operator: "ana", now: Date.now() }, restartDeps(config, watcher, 30));
    expect(accepted.evidenceId).toBe(captured.id);
    await accepted.done;
    const [ranAt] = restartTimes(c.stamp);
    for (const x of b.commands) expect(x.finishedAt!).toBeLessThanOrEqual(ranAt);
    expect(evidenceIdsOf(h.db, [accepted.event.id]).get(accepted.event.id)).toBe(captured.id);
    expect(evidenceOfBackend(h.db, "hung", 5)).toHaveLength(1);
  }, 90_000);
});

describe("evidence asked by a restart", () => {
  it("is captured before the restart command runs; a hung command never holds the restart", async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-evidence-"));
    h = await openTestDb(path.join(dir, "e.db"));
    const sim = await startSimulator({ weightsLoadSeconds: 0.2 });
    sims.push(sim);
    const c = commands();
    const config = parseConfig(
      {
        backends: [
          {
            id: "ok",
            url: sim.url,
            restart: { command: c.restart },
            evidence: {
              commands: [
                { name: "prints", command: c.prints, timeoutSeconds: 20, env: { EVIDENCE_TOKEN: "env:SW_EVIDENCE_SECRET" } },
                { name: "slow", command: c.slow, timeoutSeconds: 20 },
                // Its time runs out only when the test says so (the deadline below), long after the restart.
                { name: "hangs", command: c.hangs, timeoutSeconds: 600 },
              ],
            },
          },
        ],
      },
      "test",
      { env: ENV },
    );
    let expireHang: (() => void) | null = null;
    const recorder = new EvidenceRecorder({
      db: h.db,
      // The watcher's memory of a healthy backend: no incident, so the restart asks for the capture.
      memory: () => ({ config: config.backends[0], bodies: [], verdict: null, engine: "vllm", storedState: "idle", previousState: null, since: null }),
      commandEnv: () => restartCommandEnv(process.env, config.secretEnvNames),
      maxTotalBytes: () => config.evidenceMaxTotalBytes,
      now: Date.now,
      log: () => {},
      deadline: (expire, ms) => {
        if (ms < 600_000) {
          const t = setTimeout(expire, ms);
          return () => clearTimeout(t);
        }
        expireHang = expire;
        return () => {};
      },
    });
    cleanups.push(async () => {
      expireHang?.();
      await recorder.settle();
    });
    const current = () => ({ verdict: null, reading: null });
    const accepted = requestRestart({ backendId: "ok", operator: "ana", confirm: "ok", now: Date.now() }, restartDeps(config, { current, evidence: recorder }, 15));
    expect(accepted.evidenceId).not.toBeNull();
    // The restart ran after at most evidenceTimeoutSeconds (15 s: the hung command holds the
    // capture), while the hung command still runs; the others had ended before it.
    await accepted.done;
    const [ranAt] = restartTimes(c.stamp);
    const during = evidenceById(h.db, accepted.evidenceId!)!.bundle;
    expect(during.trigger).toBe("restart");
    expect(during.finishedAt).toBeNull();
    const prints = during.commands.find((x) => x.name === "prints")!;
    expect(prints.finishedAt).not.toBeNull();
    expect(prints.finishedAt!).toBeLessThanOrEqual(ranAt);
    expect(prints.output).toContain("hello evidence");
    const slowRun = during.commands.find((x) => x.name === "slow")!;
    expect(slowRun.finishedAt).not.toBeNull();
    expect(slowRun.finishedAt!).toBeLessThanOrEqual(ranAt);
    expect(slowRun.output).toContain("slow evidence done");
    expect(during.commands.find((x) => x.name === "hangs")!.finishedAt).toBeNull();

    // Its deadline comes: killed, recorded as such, the bundle complete.
    await waitFor("the hung command started", () => expireHang !== null, 10_000);
    expireHang!();
    await recorder.settle();
    const after = evidenceById(h.db, accepted.evidenceId!)!.bundle;
    expect(after.finishedAt).not.toBeNull();
    expect(after.commands.find((x) => x.name === "hangs")).toMatchObject({ timedOut: true });
    expect(JSON.stringify(after)).not.toContain(SECRET);
  }, 60_000);
});

describe("evidence retention", () => {
  it("deletes bundles past their days, then the oldest while all together exceed the cap", async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-evidence-"));
    h = await openTestDb(path.join(dir, "e.db"));
    const bundle = (at: number, fill: number): EvidenceBundle => ({
      backendId: "a",
      trigger: "stuck",
      startedAt: at,
      finishedAt: at,
      state: "stuck",
      reasons: [],
      timeline: [],
      metrics: [],
      status: [],
      commands: [],
      notes: ["x".repeat(fill)],
    });
    const ids = [1, 2, 3, 4].map((i) => insertEvidence(h!.db, { backendId: "a", trigger: "stuck", startedAt: i * 1000, expiresAt: i === 1 ? 1500 : 1e15, bundle: bundle(i * 1000, 400_000) }));
    // Now 2000: #1 expired; 3 bundles of ~400 kB left against a 1 MiB cap: the oldest of them goes too.
    expect(pruneEvidence(h.db, 2000, 1024 * 1024)).toBe(2);
    expect(evidenceOfBackend(h.db, "a", 10).map((r) => r.id)).toEqual([ids[3], ids[2]]);
  });
});
