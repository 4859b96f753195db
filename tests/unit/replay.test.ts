/**
 * The replay's pure parts (lib/check/replay.ts, lib/core/replay.ts) on readings parsed from a real
 * vLLM 0.29 scrape: the record keeps every figure the classifier reads (the verdicts over records
 * are the verdicts over readings), a restart in the period never joins two processes into one gap,
 * and what may be asked is checked, naming the parameter. The run recorded by the real watcher
 * is tests/integration/replay.test.ts.
 */
import fs, { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openTestDb } from "../support/test-db";
import { applyRetention } from "@/db/queries/history";
import { countReplayRows, foldReplayRows, insertReplayRows, replayRow, replayRows, replaySpan } from "@/db/queries/replay";
import { describe, expect, it } from "vitest";
import { classify, flatRunStart, flatRunStartOf } from "@/lib/check/classify";
import { trimHistory } from "@/lib/check/history-window";
import { candidateThresholds, checkPeriod, checkRowCount, healthyGaps, judgeRecord, replay, ReplayInputError } from "@/lib/check/replay";
import { decodeChunk, decodeRecord, encodeChunk, encodeRecord, replayRecord, type ReplayRow } from "@/lib/core/replay";
import type { Reading, Thresholds, Verdict } from "@/lib/core/types";
import { parseVllmMetrics } from "@/lib/engines/vllm";

const REAL = readFileSync(new URL("../fixtures/real-metrics/vllm-0.29.0-inferstack.prom", import.meta.url), "utf8");
const T: Thresholds = { stuckAfterSeconds: 120, idleProbeSeconds: 60, recoveryTimeoutSeconds: 900, startupGraceSeconds: 600 };

/** The real scrape with running, steps, tokens and the start time rewritten. */
function read(atS: number, v: { running: number; steps: number; start: number }): Reading {
  const set = (t: string, name: string, value: number) =>
    t.replace(new RegExp(`^(${name.replace(/[.*+?^${}()|[\]\\:]/g, "\\$&")}\\{engine="0",model_name="qwen2.5-1.5b"\\}) .*$`, "m"), `$1 ${value}`);
  let t = REAL;
  t = set(t, "vllm:num_requests_running", v.running);
  t = set(t, "vllm:num_requests_waiting", 0);
  t = set(t, "vllm:iteration_tokens_total_count", v.steps);
  t = set(t, "vllm:generation_tokens_total", v.steps * v.running);
  t = t.replace(/^process_start_time_seconds .*$/m, `process_start_time_seconds ${v.start}`);
  const parsed = parseVllmMetrics(t);
  if (!parsed.metrics) throw new Error(parsed.error);
  return { at: atS * 1000, latencyMs: 12.4, outcome: "ok", status: 200, engine: "vllm", metrics: parsed.metrics, bytes: 12_000 };
}
const refused = (atS: number): Reading => ({ at: atS * 1000, latencyMs: 1, outcome: "refused", error: "connection refused", metrics: null, health: { outcome: "refused" } });
const row = (reading: Reading): ReplayRow => ({ reading: decodeRecord(encodeRecord(reading), reading.at), state: "busy", recommended: false });

/**
 * Process A is busy, then flat for 50 s with its work in place and is restarted (refused reads);
 * process B starts with counters that happen to equal A's last ones, then progresses. Compared
 * across the restart, A's flat run would "end in progress" in B: a healthy gap that never was.
 */
function restartRun(): Reading[] {
  const rs: Reading[] = [];
  let s = 0;
  for (let t = 0; t <= 30; t += 5) rs.push(read(t, { running: 2, steps: (s += 10), start: 1000 }));
  for (let t = 35; t <= 85; t += 5) rs.push(read(t, { running: 2, steps: s, start: 1000 }));
  for (let t = 90; t <= 100; t += 5) rs.push(refused(t));
  for (let t = 105, k = 0; t <= 140; t += 5, k++) rs.push(read(t, { running: 2, steps: k < 2 ? s : s + 10 * k, start: 2000 }));
  return rs;
}

describe("the replay record", () => {
  it("keeps every figure the classifier reads: the same verdicts from records as from readings", () => {
    const rs = restartRun();
    for (let i = 0; i < rs.length; i++) {
      const full = classify({ history: rs.slice(0, i), reading: rs[i], thresholds: T, now: rs[i].at });
      const rec = rs.map((r) => decodeRecord(encodeRecord(r), r.at));
      const compact = classify({ history: rec.slice(0, i), reading: rec[i], thresholds: T, now: rec[i].at });
      expect(compact.state, `reading ${i}`).toBe(full.state);
      expect(compact.reasons, `reading ${i}`).toEqual(full.reasons);
    }
  });

  it("stores it with short names and reads back exactly the classifier's part", () => {
    const dp: Reading = { ...read(0, { running: 2, steps: 5, start: 9 }), probe: { ok: true, at: 3, latencyMs: 40, kind: "completions" } };
    dp.metrics = { ...dp.metrics!, engines: { "0": { ...dp.metrics!, engines: undefined } as never, "1": { running: 1, waiting: 0, steps: 4, promptTokens: null, generationTokens: null, finishedRequests: null, kvCacheUsage: 0.5 } } };
    for (const r of [...restartRun(), dp]) {
      const text = encodeRecord(r);
      expect(decodeRecord(text, r.at)).toEqual(replayRecord(r));
      // A reading with metrics is mostly names: well under half; a refused one is small anyway.
      expect(text.length).toBeLessThan(JSON.stringify(replayRecord(r)).length / (r.metrics ? 2 : 1.4));
    }
  });

  it("leaves out what the classifier never reads", () => {
    const r = replayRecord(read(0, { running: 1, steps: 1, start: 1 }));
    expect(r.bytes).toBeUndefined();
    expect(r.metrics!.models).toEqual([]);
    expect(JSON.stringify(r).length).toBeLessThan(JSON.stringify(read(0, { running: 1, steps: 1, start: 1 })).length);
  });
});

/**
 * A recorded run with everything the window keeps past its length: busy, a long prefill (only the
 * KV cache moves for 40 s), a hang longer than the window (its first read kept in front), a restart
 * (refused reads, their first kept in front; a new process starting with A's counters), idle reads
 * with probes answered and failed, a read seen late, and a stretch polled every second (past the
 * 200-reading cap).
 */
function recordedRun(): Reading[] {
  const rs: Reading[] = [];
  let s = 0;
  let t = 0;
  const busy = (n: number, step: number, start: number) => {
    for (let k = 0; k < n; k++, t += step) rs.push(read(t, { running: 2, steps: (s += 10), start }));
  };
  busy(20, 5, 1000);
  for (let k = 0; k < 8; k++, t += 5) rs.push({ ...read(t, { running: 2, steps: s, start: 1000 }), metrics: { ...read(t, { running: 2, steps: s, start: 1000 }).metrics!, kvCacheUsage: 0.1 + k * 0.05 } });
  busy(10, 5, 1000);
  for (let k = 0; k < 60; k++, t += 5) rs.push(read(t, { running: 2, steps: s, start: 1000 }));
  rs.push({ at: t * 1000, latencyMs: 5000, outcome: "timeout", error: "timed out", metrics: null, watcherLateMs: 2500 });
  t += 5;
  for (let k = 0; k < 30; k++, t += 5) rs.push(refused(t));
  busy(3, 5, 2000);
  for (let k = 0; k < 6; k++, t += 5) {
    const idle = read(t, { running: 0, steps: s, start: 2000 });
    rs.push(k % 3 === 0 ? { ...idle, probe: { ok: k !== 3, at: t * 1000, latencyMs: 40, kind: "completions", ...(k === 3 ? { error: "HTTP 500", status: 500 } : {}) } } : idle);
  }
  busy(250, 1, 2000);
  for (let k = 0; k < 150; k++, t += 1) rs.push(read(t, { running: 2, steps: s, start: 2000 }));
  busy(5, 5, 2000);
  return rs;
}

/** The watcher's way (lib/watcher/monitors.ts): classify, then keep trimHistory of the history and the reading. */
function straightforward(rs: Reading[], t: Thresholds, minStuckWindowSeconds?: number): Verdict[] {
  let history: Reading[] = [];
  return rs.map((r) => {
    const v = classify({ history, reading: r, thresholds: t, now: r.at, ...(minStuckWindowSeconds !== undefined ? { minStuckWindowSeconds } : {}) });
    history = trimHistory([...history, r], r.at, t);
    return v;
  });
}

describe("the replay judges as the watcher does", () => {
  const verdicts = (rs: Reading[], t: Thresholds, minStuckWindowSeconds?: number) => {
    const out: Verdict[] = [];
    judgeRecord(rs, { thresholds: t, ...(minStuckWindowSeconds !== undefined ? { minStuckWindowSeconds } : {}) }, (i, v) => (out[i] = v));
    return out;
  };

  it("the same verdict for every reading, with the window kept as indices, at several thresholds", () => {
    const rs = recordedRun().map((r) => decodeRecord(encodeRecord(r), r.at));
    const states = new Set<string>();
    for (const t of [T, { ...T, stuckAfterSeconds: 30, startupGraceSeconds: 60 }, { ...T, stuckAfterSeconds: 60, startupGraceSeconds: 0, idleProbeSeconds: 10 }]) {
      for (const min of [undefined, 0]) {
        const fast = verdicts(rs, t, min);
        const slow = straightforward(rs, t, min);
        expect(fast).toHaveLength(rs.length);
        for (let i = 0; i < rs.length; i++) {
          expect({ i, state: fast[i].state, recommended: fast[i].restartRecommended, reasons: fast[i].reasons, rates: fast[i].rates }).toEqual({
            i,
            state: slow[i].state,
            recommended: slow[i].restartRecommended,
            reasons: slow[i].reasons,
            rates: slow[i].rates,
          });
          states.add(slow[i].state);
        }
      }
    }
    // The run reaches every state a replay compares.
    for (const s of ["busy", "stalled", "stuck", "down", "starting", "idle", "unknown"]) expect(states).toContain(s);
  });

  it("the shortcut of flatRunStart agrees with the whole walk on every window of the run", () => {
    const rs = recordedRun();
    let history: Reading[] = [];
    let anchored = 0;
    for (const r of rs) {
      const all = [...history, r];
      expect(flatRunStart(all)).toBe(flatRunStartOf(all));
      if (flatRunStartOf(all)) anchored++;
      history = trimHistory(all, r.at, T);
    }
    expect(anchored).toBeGreaterThan(50);
  });
});

describe("the record folded into chunks", () => {
  it("reads back exactly the classifier's part of every reading, and the states recorded", () => {
    const rs = recordedRun();
    rs[5] = { ...rs[5], metrics: { ...rs[5].metrics!, engines: { "0": { running: 1, waiting: 0, steps: 4, promptTokens: null, generationTokens: null, finishedRequests: null, kvCacheUsage: 0.5 } } } };
    const rows: ReplayRow[] = rs.map((r, i) => ({ reading: r, state: i % 7 === 0 ? "stalled" : "busy", recommended: i % 11 === 0 }));
    const back = decodeChunk(encodeChunk(rows), rs[0].at);
    expect(back).toEqual(rows.map((r) => ({ ...r, reading: replayRecord(r.reading) })));
    // What changed is written, not what repeats: a few bytes a reading before deflating, against the record's own.
    expect(encodeChunk(rows).length).toBeLessThan(rs.map((r) => encodeRecord(r).length).reduce((a, b) => a + b) / 3);
  });

  it("a replay reads the same records folded and not, counts them across a cut chunk, and the retention drops old chunks", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-replay-fold-"));
    const h = await openTestDb(path.join(dir, "r.db"));
    try {
      const t0 = Date.UTC(2026, 0, 1);
      const rs = recordedRun().map((r) => ({ ...r, at: t0 + r.at, ...(r.probe ? { probe: { ...r.probe, at: t0 + r.probe.at } } : {}) }));
      const verdict = (i: number) => ({ state: i % 5 === 0 ? ("stuck" as const) : ("busy" as const), restartRecommended: i % 5 === 0 });
      h.sqlite.transaction(() => insertReplayRows(h.sqlite, rs.map((r, i) => replayRow("a", r, verdict(i)))))();
      const end = rs.at(-1)!.at;
      const before = replayRows(h.sqlite, "a", t0, end);
      const mid = { from: rs[100].at, to: rs[400].at };
      const countBefore = countReplayRows(h.sqlite, "a", mid.from, mid.to);
      // Two passes (at most MAX_CHUNK_RECORDS rows each), the last rows left unfolded.
      h.sqlite.transaction(() => foldReplayRows(h.sqlite, { before: rs[300].at, backends: null }))();
      h.sqlite.transaction(() => foldReplayRows(h.sqlite, { before: end - 10_000, backends: ["a"] }))();
      const chunks = h.sqlite.prepare("SELECT COUNT(*) AS c FROM replay_chunks").get() as { c: number };
      const left = h.sqlite.prepare("SELECT COUNT(*) AS c FROM replay_readings").get() as { c: number };
      expect(chunks.c).toBeGreaterThanOrEqual(2);
      expect(left.c).toBeGreaterThan(0);
      expect(replayRows(h.sqlite, "a", t0, end)).toEqual(before);
      expect(countReplayRows(h.sqlite, "a", mid.from, mid.to)).toBe(countBefore);
      expect(replayRows(h.sqlite, "a", mid.from, mid.to)).toEqual(before.filter((r) => r.reading.at >= mid.from && r.reading.at <= mid.to));
      expect(replaySpan(h.sqlite, "a")).toEqual({ from: rs[0].at, to: end, n: rs.length });
      // The retention: a chunk goes once its newest record is past replayDays.
      applyRetention(h.db, { now: rs[300].at + 86_400_000 + 1, rawHours: 48, rollupDays: 90, replayDays: 1, scope: { only: ["a"] } });
      const kept = replayRows(h.sqlite, "a", t0, end);
      expect(kept.length).toBeLessThan(rs.length);
      expect(kept.at(-1)!.reading.at).toBe(end);
    } finally {
      h.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a restart in the period", () => {
  it("never joins two processes: A's flat run cut by the restart is no healthy gap", () => {
    // B's own first 5 s without progress is one; A's 50 s, "ended" by B's progress, is not.
    expect(healthyGaps(restartRun().map(row)).map((g) => [g.from, g.seconds])).toEqual([[105_000, 5]]);
  });

  it("two processes, the second's start-up measured from the first refused read", () => {
    const r = replay({
      backendId: "b",
      from: 0,
      to: 140_000,
      rows: restartRun().map(row),
      candidate: { stuckAfterSeconds: 30, startupGraceSeconds: 600, pollIntervalSeconds: null, minStuckWindowSeconds: null },
      configured: T,
    });
    expect(r.processes).toHaveLength(2);
    expect(r.processes[1].startedAt).toBe(2_000_000);
    // 30 s: A's 50 s without progress is stuck (the hang the restart ended).
    expect(r.comparisons.map((c) => c.change)).toEqual(["new"]);
    expect(r.comparisons[0].replayed!.to).toBeLessThan(90_000);
  });
});

describe("what may be asked", () => {
  const bad = (raw: Parameters<typeof candidateThresholds>[0]) => {
    try {
      candidateThresholds(raw, T);
    } catch (e) {
      if (e instanceof ReplayInputError) return e.param;
      throw e;
    }
    return null;
  };

  it("names the parameter of a negative, zero, huge or non-numeric threshold", () => {
    expect(bad({ stuckAfterSeconds: "-5" })).toBe("stuckAfterSeconds");
    expect(bad({ stuckAfterSeconds: "0" })).toBe("stuckAfterSeconds");
    expect(bad({ stuckAfterSeconds: "1e12" })).toBe("stuckAfterSeconds");
    expect(bad({ stuckAfterSeconds: "Infinity" })).toBe("stuckAfterSeconds");
    expect(bad({ startupGraceSeconds: "-1" })).toBe("startupGraceSeconds");
    expect(bad({ pollIntervalSeconds: "0" })).toBe("pollIntervalSeconds");
    expect(bad({ minStuckWindowSeconds: "x" })).toBe("minStuckWindowSeconds");
    expect(bad({ startupGraceSeconds: "0", minStuckWindowSeconds: "0" })).toBeNull();
  });

  it("takes the configured value for each one not given", () => {
    expect(candidateThresholds({ stuckAfterSeconds: "90" }, T)).toEqual({ stuckAfterSeconds: 90, startupGraceSeconds: 600, pollIntervalSeconds: null, minStuckWindowSeconds: null });
  });

  it("refuses an empty, reversed or too long period", () => {
    expect(() => checkRowCount(0, "b", null)).toThrow(/from: no readings of b/);
    expect(() => checkPeriod(10, 5, 7)).toThrow(/from: must be before to/);
    expect(() => checkPeriod(0, 8 * 86_400_000, 7)).toThrow(/at most 7 days/);
  });
});

describe("the record's retention", () => {
  it("keeps history.replayDays per backend, apart from the raw samples' hours, scoped like them", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-replay-ret-"));
    const h = await openTestDb(path.join(dir, "r.db"));
    try {
      const day = 86_400_000;
      const t0 = Date.UTC(2026, 0, 1);
      const at = (d: number) => ({ ...read(0, { running: 1, steps: 1, start: 1 }), at: t0 + d * day });
      const busy = { state: "busy" as const, restartRecommended: false };
      h.sqlite.transaction(() => insertReplayRows(h.sqlite, [replayRow("a", at(0), busy), replayRow("a", at(5), busy), replayRow("gone", at(0), busy)]))();
      // 6 days on, 2 days kept: a's day-0 record goes, its day-5 one stays; "gone" is out of scope.
      applyRetention(h.db, { now: t0 + 6 * day, rawHours: 48, rollupDays: 90, replayDays: 2, scope: { only: ["a"] } });
      expect(replayRows(h.sqlite, "a", 0, t0 + 7 * day).map((r) => r.reading.at)).toEqual([t0 + 5 * day]);
      expect(replayRows(h.sqlite, "gone", 0, t0 + 7 * day)).toHaveLength(1);
      // The pass for backends no longer configured reaches it.
      applyRetention(h.db, { now: t0 + 6 * day, rawHours: 48, rollupDays: 90, replayDays: 2, scope: { except: ["a"] } });
      expect(replayRows(h.sqlite, "gone", 0, t0 + 7 * day)).toHaveLength(0);
    } finally {
      h.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
