/**
 * Issue 32's "done when", through the built app (`next start`) over HTTP: a stuck simulator with
 * evidence commands configured, restarted by an operator through the API, leaves a restart event
 * whose bundle holds the commands' output captured before the restart command ran (the commands'
 * recorded finish against the time the restart command wrote), downloadable as JSON and as a
 * .tar.gz that Debian's `tar` unpacks. The secret given to a command never appears in either.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EvidenceDTO, FleetResponse, RestartEventDTO } from "@/lib/api/types";
import { startSimulator, type Simulator } from "@/sim/server";
import { askRestart, assertBuilt, call, getJson, nodeScript, signIn, startApp, waitFor, type RunningApp } from "./faults-support";

const SECRET = "app-evidence-secret-41d9be";
let dir: string;
let app: RunningApp | null = null;
let sim: Simulator;
let cookie: string;
let stamp: string;

beforeAll(async () => {
  assertBuilt();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-evidence-app-"));
  sim = await startSimulator({ weightsLoadSeconds: 0.5 });
  sim.load({ requests: 2, promptTokens: 100, maxTokens: 1_000_000 });
  await sim.setMode("hang");
  stamp = path.join(dir, "restart-ran-at");
  const prints = nodeScript(dir, "prints", `console.log("hello evidence"); console.log("token=" + process.env.EVIDENCE_TOKEN); process.stdout.write("\\u001b[31mred\\u001b[0m\\n");`);
  const hangs = nodeScript(dir, "hangs", `console.log("started"); setInterval(() => {}, 1000);`);
  const big = nodeScript(dir, "big", `const c = Buffer.alloc(1024 * 1024, 0x42); for (let i = 0; i < 10; i++) process.stdout.write(c);`);
  const restart = nodeScript(dir, "restart", `require("fs").appendFileSync(process.argv[2], Date.now() + "\\n");`, [stamp]);
  const configPath = path.join(dir, "stepwatch.config.json");
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      pollIntervalSeconds: 1,
      stuckAfterSeconds: 3,
      idleProbeSeconds: 60,
      backends: [
        {
          id: "hung",
          url: sim.url,
          restart: { command: restart },
          evidence: {
            commands: [
              { name: "prints", command: prints, timeoutSeconds: 20, env: { EVIDENCE_TOKEN: "env:SW_EVIDENCE_SECRET" } },
              { name: "hangs", command: hangs, timeoutSeconds: 2 },
              { name: "big", command: big, timeoutSeconds: 20 },
              { name: "missing", command: [path.join(dir, "no-such-tool")] },
            ],
          },
        },
      ],
      operators: [{ name: "olga", password: "env:SW_EVIDENCE_PW" }],
    }),
  );
  app = await startApp({ STEPWATCH_CONFIG: configPath, STEPWATCH_DB: path.join(dir, "db", "stepwatch.db"), SW_EVIDENCE_PW: "evidence-pw-1", SW_EVIDENCE_SECRET: SECRET });
  cookie = await signIn(app, "olga", "evidence-pw-1");
}, 120_000);

afterAll(async () => {
  await app?.stop();
  await sim?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("evidence first, then the restart", () => {
  it("an operator's restart of a stuck backend links a bundle captured before the restart command ran, as JSON and .tar.gz", async () => {
    await waitFor("hung is stuck", async () => (await getJson<FleetResponse>(`${app!.url}/api/fleet`))?.body.backends.find((b) => b.id === "hung")?.state === "stuck", 60_000);
    const asked = await askRestart(app!, cookie, "hung", { note: "evidence test" });
    expect(asked.status, asked.text).toBe(202);
    const evidenceId = (asked.json as { event: RestartEventDTO }).event.evidenceId;
    expect(evidenceId).toEqual(expect.any(Number));

    const event = await waitFor(
      "the restart command ran",
      async () => (await getJson<RestartEventDTO[]>(`${app!.url}/api/restarts`))?.body.find((e) => e.backendId === "hung" && e.commandFinishedAt !== null),
      60_000,
    );
    expect(event.evidenceId).toBe(evidenceId);
    const ranAt = Number(fs.readFileSync(stamp, "utf8").trim().split("\n")[0]);

    const json = await call(`${app!.url}/api/evidence/${evidenceId}`);
    expect(json.status).toBe(200);
    expect(json.text).not.toContain(SECRET);
    const e = json.json as EvidenceDTO;
    expect(e).toMatchObject({ id: evidenceId, backendId: "hung", state: "stuck" });
    const run = Object.fromEntries(e.commands.map((c) => [c.name, c]));
    for (const c of e.commands) {
      expect(c.finishedAt, c.name).not.toBeNull();
      expect(c.finishedAt!, c.name).toBeLessThanOrEqual(ranAt);
    }
    expect(run.prints.output).toContain("hello evidence");
    expect(run.prints.output).toContain("token=[secret redacted]");
    expect(run.prints.output).toContain("\\x1b[31m");
    expect(run.hangs.timedOut).toBe(true);
    expect(run.big.outputBytes).toBe(10 * 1024 * 1024);
    expect(run.missing.error).toMatch(/cannot run/);
    expect(e.metrics.length).toBeGreaterThan(0);

    const res = await fetch(`${app!.url}/api/evidence/${evidenceId}?format=tar.gz`, { signal: AbortSignal.timeout(30_000) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/gzip");
    const file = path.join(dir, "bundle.tar.gz");
    fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    const out = path.join(dir, "untarred");
    fs.mkdirSync(out);
    execFileSync("tar", ["-xzf", file, "-C", out]);
    const root = path.join(out, `evidence-${evidenceId}`);
    expect(fs.readFileSync(path.join(root, "commands", "prints.out"), "utf8")).toContain("hello evidence");
    expect(JSON.parse(fs.readFileSync(path.join(root, "commands", "hangs.json"), "utf8"))).toMatchObject({ timedOut: true });
    const everything = execFileSync("tar", ["-xzOf", file], { maxBuffer: 64 * 1024 * 1024 }).toString("utf8");
    expect(everything).not.toContain(SECRET);

    // The backend page shows it (server-rendered), the secret nowhere.
    const page = await call(`${app!.url}/backends/hung`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-testid="evidence-panel"');
    expect(page.text).toContain("hello evidence");
    expect(page.text).not.toContain(SECRET);
    expect((await call(`${app!.url}/api/evidence/999999`)).status).toBe(404);
    expect((await call(`${app!.url}/api/evidence/${evidenceId}?format=zip`)).status).toBe(400);
  }, 180_000);
});
