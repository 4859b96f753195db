/**
 * The load generator's process (bench/http-load.ts runHttpLoad): one JSON argument (LoadAsk), one
 * JSON line out ({stats} or {error}), then exit.
 */
import { loadTest, type LoadAsk } from "./http-load-loop";

async function main(): Promise<void> {
  const ask = JSON.parse(process.argv[2] ?? "null") as LoadAsk | null;
  if (!ask || typeof ask.base !== "string" || typeof ask.path !== "string") throw new Error("usage: http-load-client '<LoadAsk JSON>'");
  process.stdout.write(`${JSON.stringify({ stats: await loadTest(ask) })}\n`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stdout.write(`${JSON.stringify({ error: (e as Error).message })}\n`);
    process.exit(1);
  },
);
