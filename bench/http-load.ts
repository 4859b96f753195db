/**
 * Starts the dashboard bench's load generator (bench/http-load-loop.ts) in a fresh process of its
 * own, bundled (no TypeScript loader), and returns its figures. Why a process: http-load-loop.ts.
 */
import { bundled, firstJsonLine, startChild } from "./child";
import type { LoadAsk, LoadStats } from "./http-load-loop";

export type { LoadAsk, LoadStats } from "./http-load-loop";

export async function runHttpLoad(ask: LoadAsk): Promise<LoadStats> {
  const child = startChild(process.execPath, [bundled("bench/http-load-client.ts"), JSON.stringify(ask)]);
  try {
    const limit = ask.seconds * 1000 + 60_000;
    const out = await firstJsonLine<{ stats?: LoadStats; error?: string }>(child, limit, `load generator (${ask.path})`);
    if (!out.stats) throw new Error(`load generator (${ask.path}): ${out.error ?? "no figures"}`);
    return out.stats;
  } finally {
    await child.stop();
  }
}
