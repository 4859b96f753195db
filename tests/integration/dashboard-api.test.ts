/**
 * Issue 15's API over real HTTP against the built app (`next start`) watching simulators:
 * GET /api/outages (a crash that came back by itself, a hang still going on), uptime, the CSV
 * exports of history, outages and restarts, the restart plan (secrets hidden), the latency figures
 * in the history, and the fleet's poll interval.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { figureColumn, HISTORY_FIGURES, toRows } from "@/lib/core/history";
import type { FleetResponse, HistoryResponse, RestartPlanDTO } from "@/lib/api/types";
import type { OutagesResponse } from "@/lib/api/types";
import type { ClusterResponse } from "@/lib/core/cluster";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, getJson, spawnApp, waitFor, type RunningApp } from "./app-support";

const HOOK_SECRET = "hook-secret-5d1e";
let dir: string;
let app: RunningApp | null = null;
const sims: Record<"crashy" | "hung" | "busy", Simulator> = {} as never;

const outages = async (q = "") => (await getJson<OutagesResponse>(`${app!.url}/api/outages?from=0&to=${Date.now() + 60_000}${q}`))!;
const text = async (url: string) => {
  const res = await fetch(`${app!.url}${url}`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, type: res.headers.get("content-type"), disposition: res.headers.get("content-disposition"), body: await res.text() };
};

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-dash-"));
  sims.crashy = await startSimulator({ weightsLoadSeconds: 1 });
  sims.hung = await startSimulator();
  sims.busy = await startSimulator({ engines: 1, maxNumSeqs: 4 });
  sims.hung.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
  await sims.hung.setMode("hang");
  const config = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    config,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      probeTimeoutSeconds: 3,
      idleProbeSeconds: 2,
      // The latency histograms every 2 s of reads (30 by default), so the percentiles below come within the wait.
      latencyEverySeconds: 2,
      backends: [
        { id: "crashy", url: sims.crashy.url, restart: { command: ["/bin/true"] } },
        { id: "hung", url: sims.hung.url },
        {
          id: "busy",
          url: sims.busy.url,
          restart: { webhook: { url: "http://admin:pa55word@127.0.0.1:9/restart?token=abc", headers: { authorization: "env:SW_HOOK" } } },
        },
      ],
      operators: [{ name: "ana", password: "env:SW_TEST_PW" }],
    }),
  );
  const a = await spawnApp({ STEPWATCH_CONFIG: config, STEPWATCH_DB: path.join(dir, "db", "s.db"), SW_TEST_PW: "pw", SW_HOOK: HOOK_SECRET, STEPWATCH_REPLICA_ID: "dash-1" });
  app = a;
  await waitFor("the app answering /api/fleet", async () => {
    if (a.proc.exitCode !== null) throw new Error(`the app exited:\n${a.output()}`);
    return (await getJson(`${a.url}/api/fleet`))?.status === 200;
  }, 60_000);
}, 90_000);

afterAll(async () => {
  await app?.stop();
  await Promise.all(Object.values(sims).map((s) => s?.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("outages and uptime", () => {
  it("keeps a crash that came back by itself as an outage with start, end, duration and cause", async () => {
    await waitFor("crashy idle", async () => (await getJson<FleetResponse>(`${app!.url}/api/fleet`))?.body.backends.find((b) => b.id === "crashy")?.state === "idle", 30_000);
    // Dead for a few reads, then a new process: nobody restarted it from stepwatch.
    await sims.crashy.crash({ forSeconds: 4 });
    const done = await waitFor(
      "the crash recorded as a finished outage",
      async () => (await outages("&backend=crashy")).body.outages.find((o) => o.end !== null),
      40_000,
    );
    expect(done.backendId).toBe("crashy");
    expect(["down", "starting", "unknown"]).toContain(done.state);
    expect(done.end! - done.start).toBeGreaterThan(0);
    expect(done.durationSeconds).toBeCloseTo((done.end! - done.start) / 1000, 3);
    expect(done.cause.length).toBeGreaterThan(0);
    const r = await outages("&backend=crashy");
    expect(r.status).toBe(200);
    expect(r.body.uptime).toHaveLength(1);
    expect(r.body.uptime[0].uptime["24h"]).toBeLessThan(100);
  });

  it("shows a hang still going on as an open outage (end: null) across the fleet", async () => {
    const open = await waitFor("hung stuck as an open outage", async () => (await outages()).body.outages.find((o) => o.backendId === "hung" && o.state === "stuck" && o.end === null), 30_000);
    expect(open.cause).toMatch(/^stuck: .*0 new steps/);
    const all = await outages();
    expect(all.body.uptime.map((u) => u.backendId).sort()).toEqual(["busy", "crashy", "hung"]);
  });

  it("answers bad input with a 400 that names the field, and an unknown backend with a 404", async () => {
    const bad = await getJson<{ message: string }>(`${app!.url}/api/outages?from=abc`);
    expect(bad!.status).toBe(400);
    expect(bad!.body.message).toMatch(/^from:/);
    const fmt = await getJson<{ message: string }>(`${app!.url}/api/outages?format=xml`);
    expect(fmt!.status).toBe(400);
    expect(fmt!.body.message).toMatch(/^format:/);
    expect((await getJson(`${app!.url}/api/outages?backend=nope`))!.status).toBe(404);
  });
});

describe("the warm-up render at start (lib/api/warm-up.ts)", () => {
  it("renders the fleet page once for itself, before anyone asks for it", async () => {
    await waitFor("the warm-up's log line", async () => /stepwatch: rendered \/ \(200, \d+ ms\) once at start/.test(app!.output()), 60_000);
  }, 70_000);
});

describe("GET /api/cluster", () => {
  it("with SQLite: one replica (STEPWATCH_REPLICA_ID), and it leads", async () => {
    const c = (await getJson<ClusterResponse>(`${app!.url}/api/cluster`))!;
    expect(c.status).toBe(200);
    expect(c.body).toEqual({
      answeredBy: "dash-1",
      leader: { id: "dash-1", epoch: 1, since: expect.any(String), expiresAt: null },
      replicas: [{ id: "dash-1", lastSeenAt: expect.any(String), leader: true }],
    });
  });
});

describe("CSV exports", () => {
  it("exports outages, a backend's history and the restart log as CSV", async () => {
    const o = await text(`/api/outages?from=0&to=${Date.now() + 60_000}&format=csv`);
    expect(o.status).toBe(200);
    expect(o.type).toBe("text/csv; charset=utf-8");
    expect(o.disposition).toBe('attachment; filename="outages.csv"');
    const lines = o.body.trim().split("\r\n");
    // The first six columns keep their names and places (scripts read them); states, maintenance and a silent exit follow.
    expect(lines[0]).toBe("backend,state,start_utc,end_utc,duration_seconds,cause,states,maintenance_seconds,in_maintenance,exited_not_restarted");
    expect(lines.some((l) => /^hung,stuck,\d{4}-\d\d-\d\dT[\d:.]+Z,ongoing,/.test(l))).toBe(true);

    const h = await text(`/api/backends/busy/history?from=${Date.now() - 600_000}&to=${Date.now() + 60_000}&format=csv`);
    expect(h.status).toBe(200);
    const hl = h.body.trim().split("\r\n");
    // The columns it always had, in their places, then the rest of the history's figures (vLLM's latency).
    expect(hl[0]).toBe(["time_utc", "state", ...HISTORY_FIGURES.map(figureColumn)].join(","));
    expect(hl[0]).toMatch(/^time_utc,state,running,waiting,steps_per_second,generation_tokens_per_second,prompt_tokens_per_second,kv_cache_usage,ttft_p50,/);
    expect(hl.length).toBeGreaterThan(2);

    const r = await text(`/api/restarts?format=csv`);
    expect(r.status).toBe(200);
    expect(r.body.split("\r\n")[0]).toMatch(/^id,backend,requested_utc,requested_by,/);
  });
});

describe("what the restart dialog and the pages are told", () => {
  it("describes the restart action without secrets, with the cooldown", async () => {
    const plan = (await getJson<RestartPlanDTO>(`${app!.url}/api/backends/busy/restart-plan`))!;
    expect(plan.status).toBe(200);
    // Credentials in the URL are masked as in the restart log.
    expect(plan.body.action).toMatch(/^webhook: POST http:\/\/\*\*\*@127\.0\.0\.1:9\/restart/);
    const raw = JSON.stringify(plan.body);
    for (const secret of [HOOK_SECRET, "pa55word", "token=abc"]) expect(raw).not.toContain(secret);
    expect(plan.body.cooldownSeconds).toBe(600);
    expect(plan.body.expectedOutageSeconds).toBeNull();
    const cmd = (await getJson<RestartPlanDTO>(`${app!.url}/api/backends/crashy/restart-plan`))!.body;
    expect(cmd.action).toBe("command: /bin/true");
    expect((await getJson(`${app!.url}/api/backends/nope/restart-plan`))!.status).toBe(404);
  });

  it("says how often backends are read, and serves latency percentiles from the same reads", async () => {
    const f = (await getJson<FleetResponse>(`${app!.url}/api/fleet`))!.body;
    expect(f.pollIntervalSeconds).toBe(1);
    // Short requests that finish between reads: their TTFT and e2e land in the bucket deltas.
    const point = await waitFor(
      "a history point with TTFT and e2e percentiles",
      async () => {
        sims.busy.load({ requests: 3, promptTokens: 50, maxTokens: 4, outputTokens: 4 });
        const h = (await getJson<HistoryResponse>(`${app!.url}/api/backends/busy/history?from=${Date.now() - 600_000}&to=${Date.now() + 60_000}`))!.body;
        return toRows(h.columns).find((p) => p.ttftP50 != null && p.e2eP95 != null && p.successStopPerSecond != null);
      },
      40_000,
    );
    expect(point.ttftP50!).toBeGreaterThan(0);
    expect(point.e2eP95!).toBeGreaterThanOrEqual(point.e2eP50!);
    expect(point.preemptionsPerSecond).not.toBeUndefined();
  });
});
