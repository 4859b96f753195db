/**
 * `next build`, watched: the build must not start stepwatch's runtime (issue 27). It runs the
 * project's one build (the one `npm test` needs anyway) with a config whose backend and proxy are a
 * counting HTTP server on 127.0.0.1 and a database path in a temp folder, then fails, naming what
 * it saw, if anything connected to that server or anything was written under that folder. A
 * runtime started by any build step (its workers, a prerendered page) polls at once and opens the
 * database, so either count shows it.
 *
 * Usage: tsx scripts/build-guarded.ts [next build arguments]. The exit code is the build's when it
 * fails, 1 when the guard does.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { parseConfigText } from "../lib/config";

/** Long enough for the sockets of a process that just exited to be accepted here. */
const DRAIN_MS = 500;

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => !e.isDirectory()).map((e) => path.join(e.parentPath, e.name));
}

async function main(): Promise<number> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "stepwatch-build-guard-"));
  const seen: string[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.statusCode = 404;
    res.end();
  });
  // A connection counts even if no request line ever arrives (a read cut short by the build's exit).
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;

  try {
    const dataDir = path.join(tmp, "data");
    const configPath = path.join(tmp, "stepwatch.config.json");
    const configText = JSON.stringify({
      pollIntervalSeconds: 1,
      backends: [{ id: "build-guard", url, engine: "vllm" }],
      proxies: [{ id: "build-guard-lb", url, backends: ["build-guard"] }],
    });
    // A config the runtime would refuse would make this guard pass without proving anything.
    parseConfigText(configText, configPath);
    fs.writeFileSync(configPath, configText);

    const env: NodeJS.ProcessEnv = { ...process.env, STEPWATCH_CONFIG: configPath, STEPWATCH_DB: path.join(dataDir, "stepwatch.db") };
    delete env.STEPWATCH_DEMO; // the config above, not the demo fleet
    delete env.STEPWATCH_SESSION_SECRET; // a started runtime writes session.key next to the database
    const next = path.join(process.cwd(), "node_modules", ".bin", "next");
    console.log(`build guard: next build with STEPWATCH_CONFIG -> ${url}, STEPWATCH_DB under ${dataDir}`);
    const child = spawn(next, ["build", ...process.argv.slice(2)], { env, stdio: "inherit" });
    const code = await new Promise<number>((resolve) => {
      child.on("error", (e) => {
        console.error(`build guard: cannot run ${next}: ${e.message}`);
        resolve(1);
      });
      child.on("exit", (c, signal) => resolve(c ?? (signal ? 128 : 1)));
    });
    await new Promise((r) => setTimeout(r, DRAIN_MS));

    const written = filesUnder(dataDir);
    if (connections > 0 || seen.length > 0 || written.length > 0) {
      console.error(
        [
          `build guard: FAILED: next build started stepwatch's runtime (issue 27).`,
          `  ${connections} connection(s), ${seen.length} request(s) to the configured backend/proxy${seen.length ? `: ${[...new Set(seen)].join(", ")}` : ""}`,
          `  ${written.length} file(s) written under the database's folder${written.length ? `: ${written.map((f) => path.relative(tmp, f)).join(", ")}` : ""}`,
          `  The runtime starts only when serving: getRuntime() refuses during the build, and a page that needs it is rendered per request.`,
        ].join("\n"),
      );
      return code === 0 ? 1 : code;
    }
    if (code !== 0) return code;
    console.log("build guard: 0 connections, 0 requests, nothing written: the build did not start the runtime");
    return 0;
  } finally {
    server.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`build guard: ${(e as Error)?.stack ?? String(e)}`);
    process.exit(1);
  },
);
