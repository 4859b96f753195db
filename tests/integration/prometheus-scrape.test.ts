/**
 * A real Prometheus (Debian's /usr/bin/prometheus) scrapes the real built app (`next start`) that
 * watches simulators on 127.0.0.1, one of them hung. Prometheus runs on contrib's own scrape config
 * example and alert rules (target, intervals and the token file's path replaced), with the app
 * requiring metrics.bearerToken; a PromQL query through Prometheus's HTTP API must find the hung
 * backend stuck. Needs `npx next build` first.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "@/db/client";
import { restartEvents } from "@/db/schema";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertPromtool, PROMETHEUS, promtool } from "../support/promtool";
import { assertBuilt, freePort, getJson, spawnApp, waitFor, type RunningApp } from "./app-support";
import { askRestart, signIn } from "./faults-support";

const CONTRIB = path.resolve(__dirname, "../../contrib/prometheus");
const TOKEN = "scrape-token-5b1d9e7c42a8f0e1d2c3b4a5";
const HUNG_KEY = "sk-hung-secret-3e9a1f";

let dir: string;
let app: RunningApp | null = null;
let prom: { proc: ChildProcess; url: string; output: () => string; exited: Promise<unknown> } | null = null;
const sims: Record<"busy" | "hung", Simulator> = {} as never;

interface PromVector {
  status: string;
  data: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
}

async function query(q: string): Promise<PromVector["data"]["result"]> {
  const r = await getJson<PromVector>(`${prom!.url}/api/v1/query?query=${encodeURIComponent(q)}`);
  if (!r || r.status !== 200 || r.body.status !== "success") throw new Error(`query ${q}: ${JSON.stringify(r)}`);
  return r.body.data.result;
}

async function startPrometheus(target: string): Promise<NonNullable<typeof prom>> {
  const port = await freePort();
  const tokenFile = path.join(dir, "metrics.token");
  fs.writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
  const example = fs.readFileSync(path.join(CONTRIB, "prometheus.example.yml"), "utf8");
  const cfg = example
    .replace("stepwatch.example.internal:3000", target)
    .replace("/etc/prometheus/stepwatch-metrics.token", tokenFile)
    .replace(/scrape_interval: \d+s/g, "scrape_interval: 1s")
    .replace(/scrape_timeout: \d+s/g, "scrape_timeout: 1s")
    .replace(/evaluation_interval: \d+s/g, "evaluation_interval: 1s");
  for (const needle of [target, tokenFile]) if (!cfg.includes(needle)) throw new Error(`the example config no longer has a place for ${needle}`);
  fs.writeFileSync(path.join(dir, "prometheus.yml"), cfg);
  fs.copyFileSync(path.join(CONTRIB, "stepwatch-rules.yml"), path.join(dir, "stepwatch-rules.yml"));
  const check = await promtool(["check", "config", path.join(dir, "prometheus.yml")]);
  if (check.code !== 0) throw new Error(`promtool check config: ${check.stdout}${check.stderr}`);

  const proc = spawn(
    PROMETHEUS,
    [
      `--config.file=${path.join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${path.join(dir, "tsdb")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  proc.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  proc.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise((resolve) => proc.once("exit", resolve));
  const p = { proc, url: `http://127.0.0.1:${port}`, output: () => out, exited };
  await waitFor("Prometheus ready", async () => {
    if (proc.exitCode !== null) throw new Error(`prometheus exited:\n${out}`);
    const r = await fetch(`${p.url}/-/ready`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
    return r?.status === 200;
  }, 30_000);
  return p;
}

beforeAll(async () => {
  assertBuilt();
  assertPromtool();
  if (!fs.existsSync(PROMETHEUS)) throw new Error(`prometheus is missing at ${PROMETHEUS}: install Debian's 'prometheus' package (.ci/run does)`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-prom-"));
  sims.busy = await startSimulator({ maxNumSeqs: 2 });
  sims.hung = await startSimulator();
  sims.busy.load({ requests: 3, promptTokens: 200, maxTokens: 1_000_000 });
  sims.hung.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
  await sims.hung.setMode("hang");

  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      probeTimeoutSeconds: 3,
      backends: [
        { id: "busy", url: sims.busy.url, restart: { command: ["/bin/false"] } },
        { id: "hung", url: sims.hung.url, apiKey: "env:SW_TEST_HUNG_KEY" },
      ],
      operators: [{ name: "olga", password: "env:SW_TEST_PW" }],
      metrics: { bearerToken: "env:SW_TEST_METRICS_TOKEN" },
    }),
  );
  // A restart of "hung" that recovered before this stepwatch started: the counter is seeded from it.
  const dbPath = path.join(dir, "db", "sw.db");
  const seed = openDb(dbPath);
  seed.db
    .insert(restartEvents)
    .values({ backendId: "hung", requestedAt: Date.now() - 86_400_000, requestedBy: "olga", stateAtRequest: "stuck", healthyAtRequest: false, evidence: { reasons: [], readings: [] }, action: "command: /bin/false", outcome: "recovered", resolvedAt: Date.now() - 86_000_000 })
    .run();
  seed.close();
  const a = await spawnApp({ STEPWATCH_CONFIG: configPath, STEPWATCH_DB: dbPath, SW_TEST_METRICS_TOKEN: TOKEN, SW_TEST_HUNG_KEY: HUNG_KEY, SW_TEST_PW: "prom-pw-1" });
  app = a;
  await waitFor("the app answering /api/fleet", async () => {
    if (a.proc.exitCode !== null) throw new Error(`the app exited:\n${a.output()}`);
    return (await getJson(`${a.url}/api/fleet`))?.status === 200;
  }, 60_000);
  prom = await startPrometheus(`127.0.0.1:${a.port}`);
});

afterAll(async () => {
  if (prom?.proc.pid !== undefined && prom.proc.exitCode === null) {
    try {
      process.kill(-prom.proc.pid, "SIGTERM");
    } catch {
      /* gone */
    }
    const killer = setTimeout(() => {
      try {
        process.kill(-prom!.proc.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    }, 5000);
    await prom.exited;
    clearTimeout(killer);
  }
  await app?.stop();
  await Promise.allSettled(Object.values(sims).map((s) => s.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("a real Prometheus scraping stepwatch", () => {
  it("/metrics on the real app needs the bearer token, and its answer passes promtool check metrics", async () => {
    const none = await fetch(`${app!.url}/metrics`, { signal: AbortSignal.timeout(10_000) });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer /);
    const wrong = await fetch(`${app!.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` }, signal: AbortSignal.timeout(10_000) });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).not.toContain("stepwatch_backend_state");

    const res = await fetch(`${app!.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain('stepwatch_backend_state{backend="hung",engine="vllm",state="stuck"}');
    expect(text).toContain("process_resident_memory_bytes");
    // With SQLite the one replica always leads (the rule StepwatchNoLeader stays quiet).
    expect(text).toMatch(/^stepwatch_leader\{replica="[^"]+"\} 1$/m);
    // The watcher (started from instrumentation.ts) counts into the registry this route renders,
    // although Next loads them as separate module instances: the one registry lives on globalThis.
    const reads = parsePrometheus(text).samples.find((s) => s.name === "stepwatch_read_duration_seconds_count" && s.labels.kind === "backend");
    expect(reads?.value).toBeGreaterThan(0);
    // Seeded once at start from the database, every outcome of every backend present.
    expect(text).toContain('stepwatch_restarts_total{backend="hung",outcome="recovered"} 1');
    expect(text).toContain('stepwatch_restarts_total{backend="hung",outcome="failed"} 0');
    // Ids and numbers only: no API key, no URL, no scrape token.
    for (const secret of [HUNG_KEY, TOKEN, sims.hung.url, `:${sims.hung.port}`]) expect(text).not.toContain(secret);
    const lint = await promtool(["check", "metrics"], text);
    expect({ code: lint.code, out: lint.stdout + lint.stderr }).toEqual({ code: 0, out: "" });
  });

  it("scrapes with the token, and PromQL finds the hung backend stuck (and its alert pending or firing)", async () => {
    const up = await waitFor("stepwatch's target up in Prometheus", async () => (await query('up{job="stepwatch"} == 1')).length === 1, 30_000, 500);
    expect(up).toBe(true);

    const stuck = await waitFor(
      "stepwatch_backend_state{state=\"stuck\"} == 1 in Prometheus",
      async () => {
        const r = await query('stepwatch_backend_state{state="stuck"} == 1');
        return r.length > 0 ? r : null;
      },
      60_000,
      500,
    );
    expect(stuck.map((s) => s.metric)).toEqual([
      expect.objectContaining({ __name__: "stepwatch_backend_state", backend: "hung", engine: "vllm", state: "stuck", job: "stepwatch" }),
    ]);
    // The busy backend is busy, never stuck.
    expect((await query('stepwatch_backend_state{backend="busy",state="busy"} == 1')).length).toBe(1);

    // contrib's rules, loaded by the same Prometheus, see it too (pending for 1m, then firing).
    const alert = await waitFor(
      "StepwatchBackendStuck in ALERTS",
      async () => {
        const r = await query('ALERTS{alertname="StepwatchBackendStuck"}');
        return r.length > 0 ? r : null;
      },
      30_000,
      500,
    );
    expect(alert[0].metric).toMatchObject({ backend: "hung", severity: "critical" });
    expect(["pending", "firing"]).toContain(alert[0].metric.alertstate);
  });

  it("a failed restart through the real route is counted and StepwatchRestartFailed fires", async () => {
    const cookie = await signIn(app!, "olga", "prom-pw-1");
    const r = await askRestart(app!, cookie, "busy", { confirm: "busy" });
    expect(r.status).toBe(202);
    // The route handler and the watcher are separate module instances: one counter on globalThis.
    await waitFor("stepwatch_restarts_total{backend=\"busy\",outcome=\"failed\"} 1 on /metrics", async () => {
      const res = await fetch(`${app!.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: AbortSignal.timeout(10_000) });
      return (await res.text()).includes('stepwatch_restarts_total{backend="busy",outcome="failed"} 1');
    }, 30_000, 250);
    const alert = await waitFor(
      "StepwatchRestartFailed firing",
      async () => {
        const a = await query('ALERTS{alertname="StepwatchRestartFailed", alertstate="firing"}');
        return a.length > 0 ? a : null;
      },
      30_000,
      500,
    );
    expect(alert.map((a) => a.metric)).toEqual([expect.objectContaining({ backend: "busy", outcome: "failed", severity: "warning" })]);
  });
});
