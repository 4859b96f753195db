/**
 * The simulator's admin API under /_sim/ (tests, the benchmarks and the demo drive the simulated
 * server through it): GET state and received; POST reset-log, mode, restart, crash and load.
 * Restart and crash answer 202 first and act once the answer is sent (they close its socket).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { SIM_MODES, type SimMode } from "./modes";
import { BadRequest } from "./openai";
import { readJson, sendJson } from "./reply";
import type { Simulator } from "./types";

export const ADMIN_PREFIX = "/_sim/";

export async function handleAdmin(
  sim: Simulator,
  defaults: { weightsLoadSeconds: number },
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  method: string,
): Promise<void> {
  const route = path.slice(ADMIN_PREFIX.length);
  const post = method === "POST" || method === "PUT";
  if (route === "state" && method === "GET") return sendJson(res, 200, sim.state());
  if (route === "received" && method === "GET") return sendJson(res, 200, sim.received());
  if (route === "reset-log" && post) {
    sim.resetLog();
    return sendJson(res, 200, { ok: true });
  }
  if (!post) return sendJson(res, route.match(/^(state|received|reset-log|mode|restart|crash|load)$/) ? 405 : 404, { error: `no admin route ${method} ${path}` });
  // A restart webhook may carry any body (or none): only mode and load need a valid one.
  const lenient = route === "restart" || route === "crash";
  const body = (await readJson(req).catch((err) => {
    if (lenient) return {};
    throw err;
  })) as Record<string, unknown>;
  const num = (k: string): number | undefined => {
    const v = body?.[k];
    if (v === undefined) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) throw new BadRequest(`${k} must be a non-negative number`);
    return v;
  };
  // Restart and crash close the socket this answer travels on: answer 202 first, act once it is sent.
  const afterAnswer = (act: () => Promise<void>, info: unknown) => {
    res.once("finish", () => void act().catch((err) => console.error(`[sim] ${sim.url}:`, err)));
    sendJson(res, 202, info);
  };
  switch (route) {
    case "mode": {
      const mode = body?.mode;
      if (typeof mode !== "string" || !(SIM_MODES as readonly string[]).includes(mode))
        throw new BadRequest(`mode must be one of ${SIM_MODES.join(", ")}`);
      // "loading" restarts the engines that refuse while they load: it may close this socket too.
      if (mode === "restart" || mode === "crash" || mode === "loading") {
        const opts = { weightsLoadSeconds: num("weightsLoadSeconds"), forSeconds: num("forSeconds") };
        return afterAnswer(() => sim.setMode(mode, opts), { mode, accepted: true });
      }
      await sim.setMode(mode as SimMode, { waiting: num("waiting"), forSeconds: num("forSeconds") });
      return sendJson(res, 200, sim.state());
    }
    case "restart": {
      const weightsLoadSeconds = num("weightsLoadSeconds") ?? defaults.weightsLoadSeconds;
      return afterAnswer(() => sim.restart({ weightsLoadSeconds }), { restarting: true, weightsLoadSeconds });
    }
    case "crash": {
      const forSeconds = num("forSeconds");
      return afterAnswer(() => sim.crash({ forSeconds }), { crashing: true, forSeconds: forSeconds ?? null });
    }
    case "load": {
      const requests = num("requests");
      if (requests === undefined) throw new BadRequest("requests is required");
      const submitted = sim.load({ requests, promptTokens: num("promptTokens"), maxTokens: num("maxTokens"), outputTokens: num("outputTokens") });
      const s = sim.state();
      return sendJson(res, 200, { submitted, running: s.running, waiting: s.waiting });
    }
    default:
      return sendJson(res, 404, { error: `no admin route ${method} ${path}` });
  }
}
