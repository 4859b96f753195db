/**
 * The Done-when of issue 34: the real watcher (poll loops, observe, read over real HTTP, classify,
 * the store) records a simulated vLLM into a real SQLite file, on a virtual clock so eight minutes
 * pass in seconds. The engine is scripted: a 40 s gap without progress while busy (a long prefill,
 * as the classifier sees one) that ends by itself, then a real hang. Judged again from that record:
 * with 30 s the gap is a false stuck (a new restart recommendation), with 60 s only the hang is; the
 * advice lands above the longest healthy gap. Through the pure replay over the query's rows, the CLI
 * (`stepwatch replay|advise`, exit codes included), and the built app's HTTP routes.
 */
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "@/db/client";
import { foldReplayRows, replayRows } from "@/db/queries/replay";
import { classify } from "@/lib/check/classify";
import { trimHistory } from "@/lib/check/history-window";
import { advise, judgeRecord, replay } from "@/lib/check/replay";
import type { Reading, Verdict } from "@/lib/core/types";
import { parseConfig, thresholdsOf } from "@/lib/config";
import { HOUSEKEEPING_LOOPS, startWatcher } from "@/lib/watcher";
import type { Advice, ReplayReport } from "@/lib/core/replay";
import { startSimulator } from "@/sim/server";
import { VirtualClock } from "@/bench/virtual-clock";
import { assertBuilt, getJson, spawnApp, waitFor, type RunningApp } from "./app-support";

const ROOT = path.resolve(__dirname, "../..");
const S = 1000;
// An hour ago, so the app's default period (the last history.replayDays) holds the record.
const T0 = Math.floor((Date.now() - 3600 * S) / S) * S;
const GAP = { from: T0 + 100 * S, to: T0 + 140 * S };
const HANG = T0 + 250 * S;
const END = T0 + 460 * S;

let dir = "";
let dbFile = "";
let configFile = "";
let configJson: Record<string, unknown> = {};

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-replay-"));
  dbFile = path.join(dir, "w.db");
  const clock = new VirtualClock(T0, 1 + HOUSEKEEPING_LOOPS);
  const sim = await startSimulator({ clock: clock.now });
  // Work for the whole run, loaded before the first read: the server is never idle, so never probed.
  sim.load({ requests: 4, promptTokens: 500, maxTokens: 30_000 });
  configJson = { pollIntervalSeconds: 5, stuckAfterSeconds: 120, backends: [{ id: "b1", url: sim.url, engine: "vllm", probe: "none" }] };
  configFile = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(configFile, JSON.stringify(configJson));
  const config = parseConfig(configJson, "test", { env: {} });
  const h = openDb(dbFile);
  const watcher = startWatcher({ config, db: h.db, clock, log: () => {} });
  try {
    for (let t = T0; t <= END; t += S) {
      await clock.advanceTo(t);
      if (t === GAP.from || t === HANG) await sim.setMode("hang");
      if (t === GAP.to) await sim.setMode("normal");
    }
  } finally {
    await watcher.stop();
    await sim.close();
    h.close();
  }
}, 120_000);

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function replayWith(stuckAfterSeconds: number): ReplayReport {
  const h = openDb(dbFile);
  try {
    const rows = replayRows(h.db.$client, "b1", T0, END);
    const config = parseConfig(configJson, "test", { env: {} });
    const configured = thresholdsOf(config);
    return replay({
      backendId: "b1",
      from: T0,
      to: END,
      rows,
      candidate: { stuckAfterSeconds, startupGraceSeconds: 600, pollIntervalSeconds: null, minStuckWindowSeconds: null },
      configured,
      probe: "none",
    });
  } finally {
    h.close();
  }
}

const inGap = (at: number) => at >= GAP.from && at <= GAP.to + 5 * S;
const inHang = (at: number) => at >= HANG;

describe("a replay of a recorded run: a 40 s healthy gap and a real hang", () => {
  it("recorded with 120 s: the hang alone was a restart recommendation", () => {
    const r = replayWith(120);
    expect(r.readings).toBeGreaterThan(80);
    expect(r.recorded.recommendations).toBe(1);
    expect(r.comparisons.map((c) => c.change)).toEqual(["same"]);
  });

  it("30 s: a false stuck at the gap (a new recommendation) and the hang earlier", () => {
    const r = replayWith(30);
    const fresh = r.comparisons.filter((c) => c.change === "new");
    expect(fresh).toHaveLength(1);
    expect(inGap(fresh[0].replayed!.from), fresh[0].text).toBe(true);
    expect(fresh[0].replayed!.state).toBe("stuck");
    expect(fresh[0].replayed!.reasons.map((x) => x.rule)).toContain("no-progress-stuck");
    const hang = r.comparisons.filter((c) => c.recorded);
    expect(hang.map((c) => c.change)).toEqual(["earlier"]);
    expect(inHang(hang[0].replayed!.from)).toBe(true);
    expect(r.summary).toMatch(/^with 30 s: 1 more restart recommendation/);
  });

  it("60 s: only the real hang", () => {
    const r = replayWith(60);
    expect(r.comparisons.filter((c) => c.change === "new")).toEqual([]);
    expect(r.replayed.recommendations).toBe(1);
    const [hang] = r.comparisons;
    expect(inHang(hang.replayed!.from)).toBe(true);
    expect(r.longestHealthyGap).not.toBeNull();
    expect(inGap(r.longestHealthyGap!.from)).toBe(true);
    expect(r.longestHealthyGap!.seconds).toBeGreaterThanOrEqual(30);
  });

  it("the advice: a stuckAfterSeconds above the longest healthy gap, the hang not taken for one", () => {
    const h = openDb(dbFile);
    const rows = replayRows(h.db.$client, "b1", T0, END);
    h.close();
    const a = advise({
      backendId: "b1",
      from: T0,
      to: END,
      rows,
      url: "http://127.0.0.1:8000",
      current: { stuckAfterSeconds: 120, startupGraceSeconds: 600, probeTimeoutSeconds: 10, pollIntervalSeconds: 5 },
    });
    const gap = a.healthyGaps[0];
    expect(inGap(gap.from)).toBe(true);
    // The hang never ended in progress: it is not a healthy gap, whatever its length.
    expect(a.healthyGaps.every((g) => g.from < HANG)).toBe(true);
    expect(a.recommended.stuckAfterSeconds.seconds).toBeGreaterThan(gap.upToSeconds);
    expect(a.kubernetes).toContain("livenessProbe:");
    expect(a.kubernetes).toContain("startupProbe:");
    expect(a.kubernetes).toContain("stepwatch.cjs check http://127.0.0.1:8000");
  });
});

describe("the recorded run, read back and judged the fast way", () => {
  it("judges every reading as the watcher's own loop would (classify, then trimHistory)", () => {
    const h = openDb(dbFile);
    const rows = replayRows(h.db.$client, "b1", T0, END);
    h.close();
    const t = { ...thresholdsOf(parseConfig(configJson, "test", { env: {} })), stuckAfterSeconds: 30 };
    const fast: Verdict[] = [];
    judgeRecord(rows.map((r) => r.reading), { thresholds: t, probe: "none" }, (i, v) => (fast[i] = v));
    let history: Reading[] = [];
    const states = new Set<string>();
    rows.forEach((row, i) => {
      const v = classify({ history, reading: row.reading, thresholds: t, now: row.reading.at, probe: "none" });
      history = trimHistory([...history, row.reading], row.reading.at, t);
      expect({ i, state: fast[i].state, reasons: fast[i].reasons }).toEqual({ i, state: v.state, reasons: v.reasons });
      states.add(v.state);
    });
    expect(states).toContain("stuck");
    expect(states).toContain("busy");
  });

  it("folded into chunks as the retention job folds it, read back the same", () => {
    const copy = path.join(dir, "folded.db");
    fs.copyFileSync(dbFile, copy);
    const h = openDb(copy);
    try {
      const rows = replayRows(h.db.$client, "b1", T0, END);
      h.sqlite.transaction(() => foldReplayRows(h.sqlite, { before: END - 60 * S, backends: null }))();
      const chunks = h.sqlite.prepare("SELECT COUNT(*) AS c FROM replay_chunks").get() as { c: number };
      expect(chunks.c).toBeGreaterThan(0);
      expect(replayRows(h.db.$client, "b1", T0, END)).toEqual(rows);
    } finally {
      h.close();
    }
  });
});

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, "node_modules/tsx/dist/cli.mjs"), path.join(ROOT, "lib/cli/check.ts"), ...args],
      { cwd: dir, timeout: 60_000, env: { ...process.env, STEPWATCH_DB: dbFile, STEPWATCH_CONFIG: configFile } },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

describe("the CLI: stepwatch replay and advise on the server's file", () => {
  it("the bundled dist/stepwatch.cjs, run where stepwatch is installed (better-sqlite3 from its node_modules)", async () => {
    execFileSync("npm", ["run", "--silent", "build:cli"], { cwd: ROOT, timeout: 120_000, stdio: "pipe" });
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [path.join(ROOT, "dist/stepwatch.cjs"), "replay", "b1", "--from", String(T0), "--until", String(END), "--stuck-after", "60", "--json"],
        { cwd: dir, timeout: 60_000, env: { ...process.env, STEPWATCH_DB: dbFile, STEPWATCH_CONFIG: configFile } },
        (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
      ),
    );
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as ReplayReport;
    expect(report.replayed.recommendations).toBe(1);
    expect(report.comparisons.filter((c) => c.change === "new")).toEqual([]);
  }, 150_000);

  it("replay --stuck-after 30 --json names the false stuck; 60 does not", async () => {
    const [r30, r60] = await Promise.all([
      cli("replay", "b1", "--from", String(T0), "--until", String(END), "--stuck-after", "30", "--json"),
      cli("replay", "b1", "--from", String(T0), "--until", String(END), "--stuck-after", "60", "--json"),
    ]);
    expect(r30.code, r30.stderr).toBe(0);
    const a = JSON.parse(r30.stdout) as ReplayReport;
    expect(a.comparisons.filter((c) => c.change === "new").map((c) => inGap(c.replayed!.from))).toEqual([true]);
    const b = JSON.parse(r60.stdout) as ReplayReport;
    expect(b.comparisons.filter((c) => c.change === "new")).toEqual([]);
  }, 90_000);

  it("text, advice, and bad input: exit 2 naming the flag, never a stack", async () => {
    const [text, adv, zero, huge, empty, unknown] = await Promise.all([
      cli("replay", "b1", "--since", "7d", "--stuck-after", "30"),
      cli("advise", "b1", "--since", "7d", "--json"),
      cli("replay", "b1", "--stuck-after", "0"),
      cli("replay", "b1", "--stuck-after", "1e9"),
      cli("replay", "b1", "--from", String(T0 - 3 * 86_400_000), "--until", String(T0 - 2 * 86_400_000)),
      cli("replay", "nope"),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/with 30 s: 1 more restart recommendation/);
    expect(text.stdout).toMatch(/^ {2}new {5}/m);
    expect(adv.code, adv.stderr).toBe(0);
    const advice = JSON.parse(adv.stdout) as Advice;
    expect(advice.recommended.stuckAfterSeconds.seconds).toBeGreaterThan(advice.healthyGaps[0].upToSeconds);
    for (const [r, what] of [
      [zero, /--stuck-after: must be more than 0 s/],
      [huge, /--stuck-after: must be at most 86400 s/],
      [empty, /no readings of b1 in this period/],
      [unknown, /no backend "nope"/],
    ] as const) {
      expect(r.code, r.stdout).toBe(2);
      expect(r.stderr).toMatch(what);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    // Replicas on PostgreSQL: the CLI says where the same answer is, rather than reading a stray file.
    const { STEPWATCH_DB: _unused, ...noDb } = process.env;
    void _unused;
    const pg = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [path.join(ROOT, "node_modules/tsx/dist/cli.mjs"), path.join(ROOT, "lib/cli/check.ts"), "replay", "b1", "--since", "7d"],
        { cwd: dir, timeout: 60_000, env: { ...noDb, STEPWATCH_CONFIG: configFile, STEPWATCH_DATABASE_URL: "postgres://sw:secret@127.0.0.1:1/x" } },
        (err, _stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stderr }),
      ),
    );
    expect(pg.code, pg.stderr).toBe(2);
    expect(pg.stderr).toMatch(/reads a SQLite file \(STEPWATCH_DB\); replicas on PostgreSQL answer the same through GET \/api\/backends\/\{id\}\/replay/);
    expect(pg.stderr).not.toContain("secret");
  }, 90_000);
});

describe("over HTTP (the built app, on the recorded file)", () => {
  let app: RunningApp;
  beforeAll(async () => {
    assertBuilt();
    app = await spawnApp({ STEPWATCH_CONFIG: configFile, STEPWATCH_DB: dbFile });
    await waitFor("the app", async () => (await getJson(`${app.url}/api/fleet`))?.status === 200, 60_000);
  }, 90_000);
  afterAll(async () => {
    await app?.stop();
  });

  it("GET /replay with 30 and 60, GET /advice, and 400s naming the parameter", async () => {
    const q = `from=${T0}&to=${END}`;
    const r30 = await getJson<ReplayReport>(`${app.url}/api/backends/b1/replay?${q}&stuckAfterSeconds=30`);
    expect(r30?.status).toBe(200);
    expect(r30!.body.comparisons.filter((c) => c.change === "new").map((c) => inGap(c.replayed!.from))).toEqual([true]);
    const r60 = await getJson<ReplayReport>(`${app.url}/api/backends/b1/replay?${q}&stuckAfterSeconds=60`);
    expect(r60!.body.comparisons.filter((c) => c.change === "new")).toEqual([]);
    expect(r60!.body.replayed.recommendations).toBe(1);
    const adv = await getJson<Advice>(`${app.url}/api/backends/b1/advice?${q}`);
    expect(adv?.status).toBe(200);
    expect(adv!.body.recommended.stuckAfterSeconds.seconds).toBeGreaterThan(adv!.body.healthyGaps[0].upToSeconds);
    for (const [query, param] of [
      ["stuckAfterSeconds=-5", "stuckAfterSeconds"],
      ["stuckAfterSeconds=0", "stuckAfterSeconds"],
      ["stuckAfterSeconds=99999999", "stuckAfterSeconds"],
      ["stuckAfterSeconds=abc", "stuckAfterSeconds"],
      ["pollIntervalSeconds=0", "pollIntervalSeconds"],
      [`from=${END}&to=${T0}`, "from"],
      [`from=${T0 - 3 * 86_400_000}&to=${T0 - 2 * 86_400_000}`, "from"],
    ]) {
      const r = await getJson<{ error: string; message: string; details: { param: string } }>(`${app.url}/api/backends/b1/replay?${query}`);
      expect(r?.status, query).toBe(400);
      expect(r!.body.details.param, query).toBe(param);
      expect(r!.body.message, query).toMatch(new RegExp(`^${param}: `));
    }
    expect((await getJson(`${app.url}/api/backends/nope/replay`))?.status).toBe(404);
  }, 60_000);
});
