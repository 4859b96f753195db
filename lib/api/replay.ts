/**
 * GET /api/backends/{id}/replay and /advice: the replay record of one backend (db/queries/replay.ts)
 * judged again with candidate thresholds, and the settings advised from it (lib/check/replay.ts).
 * Read verbs: nothing is applied. A bad parameter is a 400 naming it; a period without readings
 * too (there is nothing to judge), never a 500.
 */
import { backendOrThrow, thresholdsOf, type Config } from "../config";
import { DomainError } from "../core/errors";
import { advise, candidateThresholds, checkPeriod, checkRowCount, replay, ReplayInputError } from "../check/replay";
import { countReplayRows, replayRows, replaySpan, type SqlHandle } from "../../db/queries/replay";
import { getRuntime } from "../runtime";
import type { AdviceResponse, ReplayResponse } from "./types";

const DAY = 86_400_000;

/** The period asked (`from`, `to`: ms since epoch), by default the last history.replayDays (at least one day). */
function periodOf(sp: URLSearchParams, config: Config, now: number): { from: number; to: number } {
  const num = (name: string) => {
    const raw = sp.get(name);
    if (raw === null || raw === "") return null;
    const n = Number(raw);
    if (!Number.isInteger(n)) throw new ReplayInputError(name, `must be ms since epoch, not "${raw.slice(0, 20)}"`);
    return n;
  };
  const days = Math.max(1, config.history.replayDays);
  const to = num("to") ?? now;
  const from = num("from") ?? to - days * DAY;
  checkPeriod(from, to, Math.max(days, 1));
  return { from, to };
}

function rowsOf(client: SqlHandle, id: string, from: number, to: number) {
  let n: number;
  try {
    n = countReplayRows(client, id, from, to);
  } catch (e) {
    throw new DomainError("unavailable", `cannot read the replay record from the database: ${(e as Error).message}`);
  }
  checkRowCount(n, id, n === 0 ? replaySpan(client, id) : null);
  return replayRows(client, id, from, to);
}

function asBadRequest<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof ReplayInputError) throw new DomainError("bad-request", e.message, { param: e.param });
    throw e;
  }
}

export async function getReplay(id: string, sp: URLSearchParams, now: number = Date.now()): Promise<ReplayResponse> {
  const rt = await getRuntime();
  const config = rt.config;
  const backend = backendOrThrow(config.backends, id);
  return asBadRequest(() => {
    const configured = thresholdsOf(config);
    const candidate = candidateThresholds(
      {
        stuckAfterSeconds: sp.get("stuckAfterSeconds"),
        startupGraceSeconds: sp.get("startupGraceSeconds"),
        pollIntervalSeconds: sp.get("pollIntervalSeconds"),
        minStuckWindowSeconds: sp.get("minStuckWindowSeconds"),
      },
      configured,
    );
    const { from, to } = periodOf(sp, config, now);
    const rows = rowsOf(rt.db.db.$client, id, from, to);
    return replay({ backendId: id, from, to, rows, candidate, configured, probe: backend.probe });
  });
}

export async function getAdvice(id: string, sp: URLSearchParams, now: number = Date.now()): Promise<AdviceResponse> {
  const rt = await getRuntime();
  const config = rt.config;
  const backend = backendOrThrow(config.backends, id);
  return asBadRequest(() => {
    const { from, to } = periodOf(sp, config, now);
    const rows = rowsOf(rt.db.db.$client, id, from, to);
    return advise({
      backendId: id,
      from,
      to,
      rows,
      url: backend.url,
      current: {
        stuckAfterSeconds: config.stuckAfterSeconds,
        startupGraceSeconds: config.startupGraceSeconds,
        probeTimeoutSeconds: config.probeTimeoutSeconds,
        pollIntervalSeconds: config.pollIntervalSeconds,
      },
    });
  });
}
