/**
 * Issue 29: the simulator's llama.cpp (sim/engines/llamacpp.ts, option toMetrics: the builds the
 * real b10573 belongs to) against the real llama-server (STEPWATCH_LLAMA_SERVER, a missing one fails
 * the suite). Each scenario runs the same requests and the same assertions on both, so a difference
 * names the engine it was seen on. Bounded waits, no timing assertions.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@/sim/server";
import { cppDouble } from "@/sim/engines/llamacpp";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { call, waitFor, type Answer } from "./sim-support";
import { longCompletion, metricValue, sendLong, startLlama, stopAllLlama, wedgeMainThread } from "../support/llama-server";

/** One engine under test, driven the same way whichever it is. */
interface Engine {
  name: string;
  url: string;
  /** A new process on the same port (kill -9 and start again; the simulator's restart). */
  restart(): Promise<void>;
  /** The engine loop stops (the main thread ptrace-stopped; the simulator's mode "blocked" or "hang"). */
  stopLoop(): Promise<void>;
}
interface Setup {
  sleepIdleSeconds?: number;
  apiKey?: string;
}

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
  await stopAllLlama();
});

async function real(setup: Setup): Promise<Engine> {
  const extra = [
    ...(setup.sleepIdleSeconds !== undefined ? ["--sleep-idle-seconds", String(setup.sleepIdleSeconds)] : []),
    ...(setup.apiKey !== undefined ? ["--api-key", setup.apiKey] : []),
  ];
  let s = await startLlama(extra);
  return {
    name: "real",
    url: s.url,
    async restart() {
      await s.kill("SIGKILL");
      s = await startLlama(extra, { port: s.port });
    },
    async stopLoop() {
      closers.push(await wedgeMainThread(s.pid));
    },
  };
}

const sim = (stop: "blocked" | "hang", name = `sim (${stop})`) => async (setup: Setup): Promise<Engine> => {
  const s: Simulator = await startSimulator({
    engine: "llamacpp",
    weightsLoadSeconds: 0.3,
    engineOptions: { toMetrics: true, wakeSeconds: 0.3, ...(setup.sleepIdleSeconds !== undefined ? { sleepIdleSeconds: setup.sleepIdleSeconds } : {}) },
    ...(setup.apiKey !== undefined ? { apiKey: setup.apiKey } : {}),
  });
  closers.push(() => s.close());
  return {
    name,
    url: s.url,
    async restart() {
      await s.restart();
      await waitFor("the simulator's model to load", async () => (await call(`${s.url}/health`)).status === 200, 10_000, 50);
    },
    async stopLoop() {
      await s.setMode(stop);
    },
  };
};

type Start = (setup: Setup) => Promise<Engine>;
const REAL_AND_SIM: Array<[string, Start]> = [["real", real], ["sim", sim("blocked", "sim")]];

/** Runs `scenario` on the real server, then on the simulator: the same assertions on both. */
function onBoth(title: string, setup: Setup, scenario: (e: Engine) => Promise<void>, engines = REAL_AND_SIM) {
  describe(title, () => {
    it.each(engines)("%s llama-server", async (_name, start) => {
      await scenario(await start(setup));
    }, 90_000);
  });
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isSleeping = async (url: string, headers: Record<string, string> = {}) => JSON.parse((await call(`${url}/props`, { headers })).body).is_sleeping as boolean;
const shortCompletion = longCompletion(4);
const header = (a: Answer) => a.headers?.["process-start-time-unix"];

describe("the simulator's llama.cpp agrees with the real llama-server (b10573)", () => {
  onBoth("(a) idle timer: /metrics reads let it fall asleep; GET /slots and a completion wake it and keep it awake", { sleepIdleSeconds: 2 }, async (e) => {
    // Only metrics reads, every 300 ms: the countdown runs out all the same.
    await waitFor(`${e.name}: asleep under /metrics reads`, async () => {
      expect((await call(`${e.url}/metrics`)).status).toBe(200);
      return isSleeping(e.url);
    }, 20_000, 300);
    expect((await call(`${e.url}/slots`, { timeoutMs: 10_000 })).status).toBe(200);
    expect(await isSleeping(e.url), `${e.name}: GET /slots wakes it`).toBe(false);
    // A /slots or a completion every 500 ms, twice as long as the idle setting: it never sleeps.
    for (let i = 0; i < 8; i++) {
      const a = i % 2 === 0 ? await call(`${e.url}/slots`) : await call(`${e.url}/completion`, { body: shortCompletion, timeoutMs: 10_000 });
      expect(a.status, a.body).toBe(200);
      expect(await isSleeping(e.url), `${e.name}: awake after ${i + 1} tasks`).toBe(false);
      await pause(500);
    }
    await waitFor(`${e.name}: asleep again once the tasks stop`, () => isSleeping(e.url), 20_000, 300);
    expect((await call(`${e.url}/completion`, { body: shortCompletion, timeoutMs: 10_000 })).status).toBe(200);
    expect(await isSleeping(e.url), `${e.name}: a completion wakes it`).toBe(false);
  });

  onBoth("(b) the exposition: the same families, types and help; every value printed as ostream << double (6 significant digits)", {}, async (e) => {
    const body = (await call(`${e.url}/metrics`)).body;
    const p = parsePrometheus(body);
    expect(p.errors).toEqual([]);
    expect([...p.types].sort()).toEqual([...REAL_FAMILIES].sort());
    expect(p.help.get("llamacpp:n_decode_total")).toBe("Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding");
    const values = [...body.matchAll(/^llamacpp:\S+ (\S+)$/gm)].map((m) => m[1]);
    expect(values.length).toBe(15);
    for (const v of values) expect(cppDouble(Number(v)), `${e.name} printed ${v}`).toBe(v);
  });

  onBoth("(c) --api-key: 401 Invalid API Key on every route but /health; Bearer and X-Api-Key both accepted", { apiKey: "K" }, async (e) => {
    const refused = JSON.stringify({ error: { message: "Invalid API Key", type: "authentication_error", code: 401 } });
    const routes: Array<[string, string]> = [["GET", "/metrics"], ["GET", "/props"], ["GET", "/slots"], ["GET", "/v1/models"], ["GET", "/models"], ["POST", "/completion"], ["POST", "/v1/chat/completions"]];
    for (const [method, route] of routes) {
      for (const headers of [{}, { authorization: "Bearer wrong" }] as Array<Record<string, string>>) {
        const a = await call(`${e.url}${route}`, { method, headers, ...(method === "POST" ? { body: shortCompletion } : {}) });
        expect(a.status, `${e.name} ${method} ${route}`).toBe(401);
        expect(a.body, `${e.name} ${method} ${route}`).toBe(refused);
      }
    }
    for (const route of ["/health", "/v1/health"]) {
      const a = await call(`${e.url}${route}`);
      expect(a.status, `${e.name} ${route}`).toBe(200);
      expect(JSON.parse(a.body)).toEqual({ status: "ok" });
    }
    for (const headers of [{ authorization: "Bearer K" }, { "x-api-key": "K" }] as Array<Record<string, string>>) {
      for (const route of ["/metrics", "/slots", "/props"]) expect((await call(`${e.url}${route}`, { headers })).status, `${e.name} ${route} ${Object.keys(headers)[0]}`).toBe(200);
    }
  });

  onBoth("(d) Process-Start-Time-Unix: only on /metrics, a monotonic microsecond clock (not unix time), the same across sleep, new and larger per restart", { sleepIdleSeconds: 1 }, async (e) => {
    const first = await call(`${e.url}/metrics`);
    const start = String(header(first));
    expect(start).toMatch(/^\d+$/);
    // Not a unix time in seconds, milliseconds or microseconds: seconds since boot (CLOCK_MONOTONIC) are far below the epoch's.
    expect(Number(start) / 1e6).toBeLessThan(Date.now() / 1000 - 1e8);
    for (const route of ["/health", "/props", "/slots", "/v1/models"]) expect(header(await call(`${e.url}${route}`)), `${e.name} ${route}`).toBeUndefined();
    await waitFor(`${e.name}: asleep`, () => isSleeping(e.url), 20_000, 300);
    expect(header(await call(`${e.url}/metrics`)), `${e.name} asleep`).toBe(start);
    expect((await call(`${e.url}/slots`, { timeoutMs: 10_000 })).status).toBe(200);
    expect(header(await call(`${e.url}/metrics`)), `${e.name} woken`).toBe(start);
    await e.restart();
    const again = String(header(await call(`${e.url}/metrics`)));
    expect(again).not.toBe(start);
    expect(Number(again)).toBeGreaterThan(Number(start));
  });

  // With the loop stopped and slots busy, b10573 shows one of two signatures, the same for every
  // read of one wedge, depending on where the thread stopped: /metrics (and /slots) answered at
  // once with frozen values, or not answered at all. The simulator has one mode for each: "hang"
  // (frozen answers) and "blocked" (the reads wait on the loop).
  onBoth("(e) /metrics during a decode: answered with n_decode_total moving; with the loop stopped, frozen or unanswered, never moving", {}, async (e) => {
    const load = sendLong(e.url, 2);
    closers.push(() => load.stop());
    await waitFor(`${e.name}: both slots decoding`, async () => (await metricValue(e.url, "llamacpp:requests_processing")) === 2, 20_000, 100);
    const before = (await metricValue(e.url, "llamacpp:n_decode_total"))!;
    await waitFor(`${e.name}: n_decode_total to move between reads`, async () => ((await metricValue(e.url, "llamacpp:n_decode_total")) ?? 0) > before, 20_000, 100);
    await e.stopLoop();
    const seen: Array<number | "TIMEOUT"> = [];
    for (let i = 0; i < 4; i++) {
      const a = await call(`${e.url}/metrics`, { timeoutMs: 2500 });
      if (a.error === "TIMEOUT") {
        seen.push("TIMEOUT");
        continue;
      }
      expect(a.status, `${e.name}: /metrics with the loop stopped`).toBe(200);
      const p = parsePrometheus(a.body);
      expect(p.samples.find((s) => s.name === "llamacpp:requests_processing")?.value).toBe(2);
      seen.push(p.samples.find((s) => s.name === "llamacpp:n_decode_total")!.value);
      await pause(300);
    }
    const answered = seen.filter((v) => v !== "TIMEOUT");
    expect(new Set(answered).size, `${e.name}: n_decode_total with the loop stopped: ${seen.join(", ")}`).toBeLessThanOrEqual(1);
    expect((await call(`${e.url}/health`)).status).toBe(200);
  }, [["real", real], ["sim (blocked)", sim("blocked")], ["sim (hang)", sim("hang")]]);

  onBoth("(e) idle with the loop stopped: /metrics is not answered (the loop serves it), /health is", {}, async (e) => {
    expect((await call(`${e.url}/metrics`)).status).toBe(200);
    await e.stopLoop();
    expect((await call(`${e.url}/metrics`, { timeoutMs: 3000 })).error, `${e.name}: /metrics with an idle loop stopped`).toBe("TIMEOUT");
    expect((await call(`${e.url}/health`)).status).toBe(200);
  });
});

/** The 15 families of the real b10573 exposition (/work/notes/llamacpp-idle.prom, issue 29). */
const REAL_FAMILIES: Array<[string, string]> = [
  ["llamacpp:n_busy_slots_per_decode", "gauge"],
  ["llamacpp:n_decode_total", "counter"],
  ["llamacpp:n_tokens_max", "counter"],
  ["llamacpp:predicted_tokens_seconds", "gauge"],
  ["llamacpp:prompt_seconds_total", "counter"],
  ["llamacpp:prompt_tokens_cached_total", "counter"],
  ["llamacpp:prompt_tokens_seconds", "gauge"],
  ["llamacpp:prompt_tokens_total", "counter"],
  ["llamacpp:requests_deferred", "gauge"],
  ["llamacpp:requests_processing", "gauge"],
  ["llamacpp:spec_decode_num_accepted_tokens_total", "counter"],
  ["llamacpp:spec_decode_num_draft_tokens_total", "counter"],
  ["llamacpp:spec_decode_num_drafts_total", "counter"],
  ["llamacpp:tokens_predicted_seconds_total", "counter"],
  ["llamacpp:tokens_predicted_total", "counter"],
];
