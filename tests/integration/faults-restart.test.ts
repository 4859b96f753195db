/**
 * Restart faults against the real app (`next start`), real simulators, real child processes:
 * - the restart command hangs (killed with its children at its timeout), is missing, or fails;
 *   the webhook answers 500 or never: each event says so, and nothing is retried;
 * - stepwatch is SIGKILLed while a restart is in progress: at the next start the pending event
 *   is reconciled from what the backend shows, and recorded, never dropped.
 */
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetResponse, RestartEventDTO } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import {
  askRestart,
  assertBuilt,
  getJson,
  killApp,
  killPid,
  nodeScript,
  processGone,
  signIn,
  startApp,
  waitFor,
  type RunningApp,
} from "./faults-support";

let dir: string;
let app: RunningApp | null = null;
let env: Record<string, string>;
let cookie: string;
const sims: Record<string, Simulator> = {};
let hooks: http.Server;
let hookUrl: string;
const hookHits: Record<string, number> = { "/500": 0, "/never": 0 };
const held: http.ServerResponse[] = [];
const strayPids: number[] = [];

const IDS = ["hang", "missing", "fails", "hook500", "hooknever", "phoenix"] as const;

const restarts = async (): Promise<RestartEventDTO[]> => (await getJson<RestartEventDTO[]>(`${app!.url}/api/restarts`))!.body;
const eventOf = async (id: string) => (await restarts()).find((e) => e.backendId === id);
const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean) : []);

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-faults-restart-"));
  for (const id of IDS) sims[id] = await startSimulator({ weightsLoadSeconds: 3 });

  hooks = http.createServer((req, res) => {
    const p = req.url ?? "";
    if (p in hookHits) hookHits[p]++;
    req.resume();
    if (p === "/500") res.writeHead(500, { "content-type": "text/plain" }).end("restart service exploded");
    else held.push(res); // "/never": headers never come
  });
  await new Promise<void>((r) => hooks.listen(0, "127.0.0.1", r));
  hookUrl = `http://127.0.0.1:${(hooks.address() as { port: number }).port}`;

  // A command that hangs and leaves a grandchild in its process group; both pids go to a file.
  const hang = nodeScript(
    dir,
    "hang",
    `const fs=require("fs");const c=require("child_process").spawn("sleep",["300"],{stdio:"ignore"});
     fs.appendFileSync(process.argv[2], JSON.stringify({pid:process.pid,grandchild:c.pid})+"\\n");
     setInterval(()=>{},1000);`,
    [path.join(dir, "hang.log")],
  );
  const fails = nodeScript(dir, "fails", `require("fs").appendFileSync(process.argv[2],"run\\n");console.error("unit vllm.service not found");process.exit(3);`, [
    path.join(dir, "fails.log"),
  ]);
  // The restart the SIGKILL test interrupts: restart the simulator, then stay busy for a minute.
  const phoenix = nodeScript(
    dir,
    "phoenix",
    `const fs=require("fs");fs.appendFileSync(process.argv[2], process.pid+"\\n");
     fetch(process.argv[3]+"/_sim/restart",{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify({weightsLoadSeconds:3})})
       .then(r=>console.log("sim restart",r.status),e=>console.error(e.message));
     setTimeout(()=>{},60000);`,
    [path.join(dir, "phoenix.log"), sims.phoenix.url],
  );

  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      probeTimeoutSeconds: 2,
      idleProbeSeconds: 60,
      recoveryTimeoutSeconds: 120,
      backends: [
        { id: "hang", url: sims.hang.url, restart: { command: hang, timeoutSeconds: 2 } },
        { id: "missing", url: sims.missing.url, restart: { command: [path.join(dir, "no-such-restart-script")] } },
        { id: "fails", url: sims.fails.url, restart: { command: fails } },
        { id: "hook500", url: sims.hook500.url, restart: { webhook: { url: `${hookUrl}/500` } } },
        { id: "hooknever", url: sims.hooknever.url, restart: { webhook: { url: `${hookUrl}/never`, timeoutSeconds: 2 } } },
        { id: "phoenix", url: sims.phoenix.url, restart: { command: phoenix, timeoutSeconds: 120 } },
      ],
      operators: [{ name: "olga", password: "env:SW_FAULT_PW" }],
    }),
  );
  env = { STEPWATCH_CONFIG: configPath, STEPWATCH_DB: path.join(dir, "db", "stepwatch.db"), SW_FAULT_PW: "fault-pw-1" };
  app = await startApp(env);
  cookie = await signIn(app, "olga", "fault-pw-1");
  // Every backend read at least once, so a restart records real evidence.
  await waitFor("every backend read", async () => {
    const f = (await getJson<FleetResponse>(`${app!.url}/api/fleet`))?.body;
    return f?.backends.every((b) => b.state === "idle");
  }, 30_000);
}, 120_000);

afterAll(async () => {
  await app?.stop();
  for (const r of held) r.destroy();
  await new Promise((r) => hooks?.close(r));
  await Promise.allSettled(Object.values(sims).map((s) => s.close()));
  for (const f of ["hang.log", "phoenix.log"]) {
    for (const l of lines(path.join(dir, f))) {
      const v = JSON.parse(l) as number | { pid: number; grandchild: number };
      if (typeof v === "number") killPid(v);
      else (killPid(v.pid), killPid(v.grandchild));
    }
  }
  for (const p of strayPids) killPid(p);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("failing restart actions", () => {
  it("hang, missing, failing command and webhook 500 / no answer: each event says so", async () => {
    for (const id of ["hang", "missing", "fails", "hook500", "hooknever"]) {
      const r = await askRestart(app!, cookie, id, { confirm: id, note: `fault test ${id}` });
      expect(r.status, r.text).toBe(202);
    }
    // The webhook that never answers is given up at its own deadline (restart.webhook.timeoutSeconds: 2).
    const events = await waitFor(
      "every failing restart resolved",
      async () => {
        const all = await restarts();
        const mine = all.filter((e) => e.backendId !== "phoenix");
        return mine.length === 5 && mine.every((e) => e.outcome !== null) ? mine : null;
      },
      30_000,
      500,
    );
    const by = Object.fromEntries(events.map((e) => [e.backendId, e]));

    expect(by.hang).toMatchObject({ outcome: "failed", commandError: "timed out after 2 s; process group killed" });
    expect(by.hang.resolution).toContain("not retried");
    // The command and its grandchild are both gone: the whole process group was killed.
    const [pids] = lines(path.join(dir, "hang.log")).map((l) => JSON.parse(l) as { pid: number; grandchild: number });
    await waitFor("the hung command and its grandchild gone", () => processGone(pids.pid) && processGone(pids.grandchild), 10_000);

    expect(by.missing.outcome).toBe("failed");
    expect(by.missing.commandError).toMatch(/cannot run .*no-such-restart-script.*ENOENT/);

    expect(by.fails).toMatchObject({ outcome: "failed", commandExitCode: 3, commandError: "exited with status 3" });
    expect(by.fails.commandOutput).toContain("unit vllm.service not found");

    expect(by.hook500.outcome).toBe("failed");
    expect(by.hook500.commandOutput).toContain("HTTP 500");
    expect(by.hook500.commandOutput).toContain("restart service exploded");
    expect(by.hook500.resolution).toMatch(/failed/);

    expect(by.hooknever.outcome).toBe("failed");
    expect(by.hooknever.commandError).toBe("no complete answer within 2000 ms");

    for (const e of events) {
      expect(e.requestedBy).toBe("olga");
      expect(e.commandFinishedAt).not.toBeNull();
    }
  }, 60_000);

  it("nothing is retried without an operator, and the fleet no longer shows a pending restart", async () => {
    const before = { hook500: hookHits["/500"], hooknever: hookHits["/never"], fails: lines(path.join(dir, "fails.log")).length, hang: lines(path.join(dir, "hang.log")).length };
    expect(before).toEqual({ hook500: 1, hooknever: 1, fails: 1, hang: 1 });
    // Several polls later, still once each.
    const t0 = Date.now();
    await waitFor("three more polls", async () => {
      const f = (await getJson<FleetResponse>(`${app!.url}/api/fleet`))!.body;
      return f.backends.every((b) => (b.lastReadAt ?? 0) > t0 + 2500);
    }, 20_000);
    expect({ hook500: hookHits["/500"], hooknever: hookHits["/never"], fails: lines(path.join(dir, "fails.log")).length, hang: lines(path.join(dir, "hang.log")).length }).toEqual(before);
    const f = (await getJson<FleetResponse>(`${app!.url}/api/fleet`))!.body;
    for (const b of f.backends.filter((x) => x.id !== "phoenix")) {
      expect(b.pendingRestartId).toBeNull();
      expect(b.state).not.toBe("restarting");
    }
    // A second try is the operator's call; the cooldown asks for an explicit override.
    const again = await askRestart(app!, cookie, "fails", { confirm: "fails" });
    expect(again.status).toBe(409);
    expect((again.json as { message: string }).message).toMatch(/cooldown/);
    // The conflict comes first: "fails" is idle (healthy), yet without its typed id the answer is
    // the 409 with who asked, when, and until when, not the 422 asking for the id.
    const unconfirmed = await askRestart(app!, cookie, "fails", {});
    expect(unconfirmed.status, unconfirmed.text).toBe(409);
    const failed = (await restarts()).find((e) => e.backendId === "fails")!;
    expect(unconfirmed.json).toMatchObject({
      error: "conflict",
      details: { reason: "cooldown", requestedBy: "olga", requestedAt: failed.requestedAt, cooldownUntil: failed.requestedAt + 600_000 },
    });
  }, 40_000);
});

describe("stepwatch killed during a restart", () => {
  it("the pending event is reconciled at the next start from what the backend shows, never dropped", async () => {
    const startBefore = sims.phoenix.state().processStartTime;
    const r = await askRestart(app!, cookie, "phoenix", { confirm: "phoenix", note: "killed mid-restart" });
    expect(r.status, r.text).toBe(202);
    const eventId = (r.json as { event: RestartEventDTO }).event.id;
    // Asked again while it is pending, even without the typed id and with the cooldown overridden: 409, who and when.
    const twice = await askRestart(app!, cookie, "phoenix", { overrideCooldown: true });
    expect(twice.status, twice.text).toBe(409);
    expect(twice.json).toMatchObject({
      error: "conflict",
      details: { reason: "pending", pendingId: eventId, requestedBy: "olga", requestedAt: (r.json as { event: RestartEventDTO }).event.requestedAt },
    });
    // The command is running (it restarted the simulator and now lingers): kill stepwatch hard.
    await waitFor("the restart command started", () => lines(path.join(dir, "phoenix.log")).length === 1, 10_000);
    await waitFor("the simulator restarting", () => sims.phoenix.phase() !== "listening" || sims.phoenix.state().processStartTime !== startBefore, 10_000);
    await killApp(app!);
    const [cmdPid] = lines(path.join(dir, "phoenix.log")).map(Number);
    strayPids.push(cmdPid);

    // While stepwatch is down the backend comes back as a new process.
    await sims.phoenix.whenListening();
    app = await startApp(env);
    const event = await waitFor(
      "the pending restart reconciled",
      async () => {
        const e = (await restarts()).find((x) => x.id === eventId);
        return e && e.outcome !== null ? e : null;
      },
      30_000,
    );
    expect(event.outcome).toBe("recovered");
    expect(event.recoveredAt).not.toBeNull();
    expect(event.downtimeSeconds).toBeGreaterThan(0);
    expect(event.resolution).toMatch(/new process/);
    expect(event.note).toBe("killed mid-restart");
    // The command's own result was never seen (stepwatch died first): recorded as unknown, not invented.
    expect(event.commandExitCode).toBeNull();
    // Exactly one event for phoenix, and the command was not run again by the new process.
    expect((await restarts()).filter((e) => e.backendId === "phoenix")).toHaveLength(1);
    expect(lines(path.join(dir, "phoenix.log"))).toHaveLength(1);
    const b = (await getJson<FleetResponse>(`${app!.url}/api/fleet`))!.body.backends.find((x) => x.id === "phoenix")!;
    expect(b.processStartTime).not.toBe(startBefore);
    expect(b.pendingRestartId).toBeNull();
    // The earlier events survived the crash untouched.
    expect((await restarts()).filter((e) => e.backendId !== "phoenix").every((e) => e.outcome === "failed")).toBe(true);
  }, 90_000);
});
