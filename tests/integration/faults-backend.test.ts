/**
 * Backend faults, watched by the real app (`next start`) over real sockets, judged over /api/fleet
 * and the stored transitions:
 * - the connection is reset in the middle of a /metrics body once: one miss is not "down";
 * - the backend dies in the middle of a read (half a body, then nothing listens): "down", and
 *   back to healthy when it listens again;
 * - the backend comes back as a new process: "starting", then serving; counters of the two
 *   processes are never compared;
 * - /metrics answers only after the read's deadline: "unknown" (slow is not dead) for as long as
 *   /health answers 200; "down" past stuckAfterSeconds once /health fails too; healthy again once
 *   it answers in time.
 * - "down" is a fact at once; a restart is recommended only after startupGraceSeconds of refusals.
 * None of these is ever "stuck".
 */
import fs from "node:fs";
import http from "node:http";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetBackend, FleetResponse, HistoryResponse, TransitionDTO } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { assertBuilt, getJson, startApp, waitFor, type RunningApp } from "./faults-support";

type FrontMode = "pass" | "reset-once" | "die" | "slow" | "slow-all";

/**
 * A front for a simulator that can misbehave on /metrics; everything else is passed through.
 * It plays the backend's own API server, so its failures are the backend's.
 */
class Front {
  mode: FrontMode = "pass";
  port = 0;
  private server: http.Server;
  private sockets = new Set<net.Socket>();
  constructor(readonly sim: Simulator) {
    this.server = this.create();
  }
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  private create(): http.Server {
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    return server;
  }
  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(this.port, "127.0.0.1", r));
    this.port = (this.server.address() as net.AddressInfo).port;
  }
  /** Nothing listens any more, and open connections are cut. */
  async die(): Promise<void> {
    const closed = new Promise((r) => this.server.close(r));
    for (const s of this.sockets) s.destroy();
    await closed;
    this.server = this.create();
  }
  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const upstream = await fetch(`${this.sim.url}${req.url}`, {
      method: req.method,
      headers: { "content-type": req.headers["content-type"] ?? "application/json" },
      body: req.method === "POST" ? await readBody(req) : undefined,
    }).catch(() => null);
    if (!upstream) return void res.destroy();
    const body = Buffer.from(await upstream.arrayBuffer());
    if (req.url === "/health" && this.mode === "slow-all") {
      // The whole API server is unresponsive: /health times out too.
      setTimeout(() => {
        if (!res.destroyed) res.writeHead(200).end();
      }, 3500);
      return;
    }
    // The exposition on either path stepwatch reads it from: vLLM's filtered /metrics/?name[]= or the full /metrics.
    if (req.url?.startsWith("/metrics") && this.mode !== "pass") {
      const mode = this.mode;
      if (mode === "slow" || mode === "slow-all") {
        // Answers, but only after the reader's deadline (2 s at a 1 s poll interval).
        setTimeout(() => {
          if (!res.destroyed) res.writeHead(200, { "content-type": "text/plain" }).end(body);
        }, 3500);
        return;
      }
      if (mode === "reset-once") this.mode = "pass";
      res.writeHead(200, { "content-type": "text/plain", "content-length": body.length });
      res.write(body.subarray(0, body.length >> 1), () => {
        req.socket.destroy();
        if (mode === "die") void this.die();
      });
      return;
    }
    res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "text/plain" }).end(body);
  }
  async close(): Promise<void> {
    await this.die();
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = "";
    req.on("data", (c) => (s += c));
    req.on("end", () => resolve(s));
  });
}

let dir: string;
let app: RunningApp;
const sims: Record<string, Simulator> = {};
const fronts: Record<string, Front> = {};

const backend = async (id: string): Promise<FleetBackend> => (await getJson<FleetResponse>(`${app.url}/api/fleet`))!.body.backends.find((b) => b.id === id)!;
const transitions = async (id: string, since = 0): Promise<TransitionDTO[]> =>
  (await getJson<HistoryResponse>(`${app.url}/api/backends/${id}/history?from=${since}&to=${Date.now() + 60_000}`))!.body.transitions;
const stateIs = (id: string, ...states: string[]) => async () => {
  const b = await backend(id);
  return states.includes(b.state) ? b : null;
};

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-faults-backend-"));
  for (const id of ["flaky", "dying", "slow"]) {
    sims[id] = await startSimulator();
    sims[id].load({ requests: 3, promptTokens: 200, maxTokens: 1_000_000 });
    fronts[id] = new Front(sims[id]);
    await fronts[id].listen();
  }
  sims.phoenix = await startSimulator();
  sims.phoenix.load({ requests: 2, promptTokens: 200, maxTokens: 1_000_000 });
  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 4,
      probeTimeoutSeconds: 2,
      idleProbeSeconds: 60,
      backends: [
        { id: "flaky", url: fronts.flaky.url },
        { id: "dying", url: fronts.dying.url },
        { id: "slow", url: fronts.slow.url },
        { id: "phoenix", url: sims.phoenix.url },
      ],
    }),
  );
  app = await startApp({ STEPWATCH_CONFIG: configPath, STEPWATCH_DB: path.join(dir, "db", "stepwatch.db") });
  await waitFor("every backend busy", async () => (await getJson<FleetResponse>(`${app.url}/api/fleet`))?.body.backends.every((b) => b.state === "busy"), 30_000);
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await Promise.allSettled(Object.values(fronts).map((f) => f.close()));
  await Promise.allSettled(Object.values(sims).map((s) => s.close()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("a backend that fails mid-read, dies, restarts or answers late", () => {
  it("a connection reset mid-body once: one miss is unknown, never down, then busy again", async () => {
    const t0 = Date.now();
    fronts.flaky.mode = "reset-once";
    await waitFor("the reset read seen", async () => (await transitions("flaky", t0)).some((t) => t.to === "unknown"), 15_000);
    await waitFor("busy again", async () => (await transitions("flaky", t0)).at(-1)?.to === "busy", 15_000);
    const path = (await transitions("flaky", t0)).map((t) => t.to);
    expect(path).toEqual(["unknown", "busy"]);
    const miss = (await transitions("flaky", t0))[0];
    // /health still answered: a reset /metrics alone is a failed read, not a dead server.
    expect(miss.reasons.map((r) => r.rule)).toEqual(["cannot-judge"]);
  }, 40_000);

  it("dies in the middle of a read: down (refused twice), then busy once it listens again", async () => {
    const t0 = Date.now();
    fronts.dying.mode = "die";
    const down = await waitFor("down", stateIs("dying", "down"), 15_000);
    // Down is a fact; it may be loading weights, so no restart is recommended before startupGraceSeconds.
    expect(down.restartRecommended).toBe(false);
    expect(down.reasons[0].rule).toBe("down-grace");
    expect(down.reasons.map((r) => r.rule)).toContain("down-refused");
    // The same process comes back on the same port (a network blip, not a restart).
    fronts.dying.mode = "pass";
    await fronts.dying.listen();
    await waitFor("busy again, stored", async () => (await transitions("dying", t0)).at(-1)?.to === "busy", 15_000);
    const path = (await transitions("dying", t0)).map((t) => t.to);
    expect(path).toContain("down");
    expect(path).not.toContain("stuck");
  }, 40_000);

  it("comes back as a new process: serving once proven (a probe here), the two processes' counters not compared", async () => {
    const t0 = Date.now();
    const before = await backend("phoenix");
    await sims.phoenix.crash();
    await waitFor("down", stateIs("phoenix", "down"), 15_000);
    await sims.phoenix.recover();
    const back = await waitFor("serving again", stateIs("phoenix", "idle", "busy"), 20_000);
    expect(back.processStartTime).not.toBe(before.processStartTime);
    const ts = await waitFor("the new process's transition stored", async () => {
      const x = await transitions("phoenix", t0);
      return x.at(-1)?.to === back.state ? x : null;
    }, 10_000);
    const path = ts.map((t) => t.to);
    expect(path).toContain("down");
    expect(path).not.toContain("stuck");
    // The new process had nothing running (its requests died with the old one): the idle probe,
    // not a comparison with the old process's counters, showed it serving.
    const first = ts[path.indexOf("down") + 1];
    expect(["starting", "idle"]).toContain(first.to);
    expect(first.reasons.map((r) => r.rule)).toContain("new-process");
  }, 50_000);

  it("answers only after the deadline: unknown while /health answers (slow is not dead), down once /health fails too, busy once in time", async () => {
    const t0 = Date.now();
    fronts.slow.mode = "slow";
    const unknown = await waitFor("unknown", stateIs("slow", "unknown"), 15_000);
    expect(unknown.reasons.map((r) => r.rule)).toContain("metrics-timeout");
    // Past stuckAfterSeconds (4 s) with /health answering: still unknown, never down.
    await new Promise((r) => setTimeout(r, 6000));
    expect((await backend("slow")).state).toBe("unknown");
    fronts.slow.mode = "slow-all";
    await waitFor("down", stateIs("slow", "down"), 20_000);
    fronts.slow.mode = "pass";
    await waitFor("busy again", stateIs("slow", "busy"), 20_000);
    const path = (await transitions("slow", t0)).map((t) => t.to);
    expect(path.slice(0, 2)).toEqual(["unknown", "down"]);
    expect(path).not.toContain("stuck");
    // Late answers to aborted reads did not disturb the app.
    expect(app.proc.exitCode).toBeNull();
  }, 60_000);
});
