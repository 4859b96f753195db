/**
 * A watcher too busy to see its deadlines on time (lib/net/http.ts lateMs, lib/check/late.ts),
 * over real sockets. A simulated llama.cpp server runs in its own process, so it answers at once
 * while this process's event loop is held past a read's deadline: such a read is a timeout seen
 * late, kept and not judged, and the server is never called stalled, stuck or down. The control:
 * the same reads of the same server with its engine loop really blocked (it answers /health,
 * never /metrics) and this process on time are stalled, then stuck.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulatorFleet } from "@/bench/child";
import type { Child } from "@/bench/child";
import { observe } from "@/lib/check/observe";
import { DEFAULT_THRESHOLDS, type Reading, type Verdict } from "@/lib/core/types";
import { httpRequest, LATE_DEADLINE_MS } from "@/lib/net/http";
import { call } from "./sim-support";

/** What a watcher with too much to do looks like: its one thread busy, nothing else runs. */
function holdEventLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* busy */
  }
}

/**
 * Runs `ask` and holds the event loop right after it, from libuv's check phase: the next loop
 * iteration then starts with the timers, so the overdue deadline is seen before the answer that
 * sat in the socket (held inside the timers phase instead, libuv's clock is not updated until the
 * poll, and the answer may be read first: an on-time answer, which is fine, but not this test).
 */
async function askThenHold<T>(ask: () => Promise<T>, ms: number): Promise<T> {
  await new Promise<void>((r) => setImmediate(r));
  const asked = ask();
  holdEventLoop(ms);
  return asked;
}
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

let sim: Child;
let url = "";
beforeAll(async () => {
  const fleet = await startSimulatorFleet(1, 60_000, ["--engine", "llamacpp"]);
  sim = fleet.child;
  url = fleet.urls[0];
}, 90_000);
afterAll(async () => {
  await sim?.stop();
});

describe("httpRequest: a deadline seen late", () => {
  it("an answer that came at once, unread while this process was busy, is a timeout marked with how late it was seen", async () => {
    expect((await httpRequest(`${url}/health`, { timeoutMs: 1000, maxBytes: 64 * 1024 })).outcome).toBe("ok");
    const r = await askThenHold(() => httpRequest(`${url}/health`, { timeoutMs: 1000, maxBytes: 64 * 1024 }), 2000);
    expect(r.outcome).toBe("timeout");
    expect(r.lateMs).toBeGreaterThan(LATE_DEADLINE_MS);
    expect(r.lateMs).toBeGreaterThanOrEqual(900); // held 2000 ms against a 1000 ms deadline
  });

  it("a server that does not answer, seen on time, is a plain timeout", async () => {
    const silent: Server = createServer(() => {
      /* never answers */
    });
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    try {
      const r = await httpRequest(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/metrics`, { timeoutMs: 300, maxBytes: 1024 });
      expect(r.outcome).toBe("timeout");
      expect(r.lateMs).toBeUndefined();
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});

describe("observe: the one judge, with this process late and on time", () => {
  // A deadline with room for a loaded machine: the simulator's /props and /health must answer within it.
  const ctx = { thresholds: { ...DEFAULT_THRESHOLDS, stuckAfterSeconds: 1 }, read: { timeoutMs: 1000 } };
  const target = () => ({ url, engine: "llamacpp" as const });

  it("a healthy llama.cpp whose /metrics answer waits unread while this process is held: never stalled, stuck or down", async () => {
    // The hold comes right after each GET /metrics is sent (a real undici Client, real sockets),
    // so /metrics is the request that times out late; /props and /health are seen on time. Seen
    // on time, /metrics timing out with /health up is llama.cpp's blocked engine loop (the control).
    const client = new Client(new URL(url).origin);
    const dispatcher = client.compose((dispatch) => (opts, handler) => {
      const sent = dispatch(opts, handler);
      if (String(opts.path).startsWith("/metrics")) setImmediate(() => holdEventLoop(1800));
      return sent;
    });
    try {
      const history: Reading[] = [];
      const verdicts: Verdict[] = [];
      for (let i = 0; i < 4; i++) {
        const { reading, verdict } = await observe(target(), history, { ...ctx, read: { ...ctx.read, dispatcher } });
        expect(reading, `read ${i}`).toMatchObject({ outcome: "timeout", health: { outcome: "ok" } });
        expect(reading.watcherLateMs, `read ${i} was seen late`).toBeGreaterThan(LATE_DEADLINE_MS);
        history.push(reading);
        verdicts.push(verdict);
        await pause(150);
      }
      expect((history.at(-1)!.at - history[0].at) / 1000).toBeGreaterThan(ctx.thresholds.stuckAfterSeconds);
      for (const v of verdicts) {
        expect(["stalled", "stuck", "down"]).not.toContain(v.state);
        expect(v.restartRecommended).toBe(false);
        expect(v.reasons[0].rule).toBe("watcher-late");
      }
      // Once this process keeps up again, the same server is judged from its answers.
      const { verdict } = await observe(target(), history, ctx);
      expect(verdict.reasons.map((r) => r.rule)).not.toContain("watcher-late");
      expect(["stalled", "stuck", "down"]).not.toContain(verdict.state);
    } finally {
      await client.close();
    }
  });

  it("control: its engine loop really blocked (/health answers, /metrics never), seen on time: stalled, then stuck", async () => {
    expect((await call(`${url}/_sim/mode`, { body: { mode: "blocked" } })).status).toBe(200);
    try {
      const history: Reading[] = [];
      let last: Verdict | null = null;
      for (let i = 0; i < 5 && last?.state !== "stuck"; i++) {
        const { reading, verdict } = await observe(target(), history, ctx);
        expect(reading.outcome).toBe("timeout");
        expect(reading.watcherLateMs).toBeUndefined();
        history.push(reading);
        last = verdict;
        await pause(300);
      }
      expect(last?.state).toBe("stuck");
      expect(last?.reasons.map((r) => r.rule)).toContain("loop-blocked");
    } finally {
      await call(`${url}/_sim/mode`, { body: { mode: "normal" } });
    }
  });
});
