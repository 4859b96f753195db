import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "@/lib/config";
import { DEMO_SCRIPT, SIDE_SCHEDULE, startDemoFleet, type DemoFleet } from "@/sim/demo";
import { startSimulatorFleet } from "@/bench/child";
import { call, waitFor } from "./sim-support";

let fleet: DemoFleet | null = null;
afterEach(async () => {
  await fleet?.stop();
  fleet = null;
});

describe("demo fleet", () => {
  it("returns a valid stepwatch config and plays the scripted day: load, a hang, a crash and its return", async () => {
    const timeScale = 60; // hang at 2 s, crash at 4 s for 1 s
    fleet = await startDemoFleet({ timeScale, weightsLoadSeconds: 0.3 });
    const config = parseConfig(fleet.config, "demo", { allowInlinePasswords: true });
    expect(config.backends.map((b) => b.id)).toEqual(["gb10-a", "gb10-b", "gb10-llama", "gb10-sglang"]);
    expect(config.proxies.map((p) => p.id)).toEqual(["gb10-proxy"]);
    expect(fleet.config.stuckAfterSeconds).toBe(30);
    const a = fleet.simulators["gb10-a"];
    const b = fleet.simulators["gb10-b"];
    expect(config.backends[0].restart).toMatchObject({ kind: "webhook", url: `${a.url}/_sim/restart`, method: "POST" });

    await waitFor("the batch job on both backends", () => a.state().running >= 2 && b.state().running >= 2, 5000);
    // The mixed fleet: llama.cpp and SGLang speak their own engines, each under its batch job.
    const llama = fleet.simulators["gb10-llama"];
    const sglang = fleet.simulators["gb10-sglang"];
    expect([llama.engine, sglang.engine]).toEqual(["llamacpp", "sglang"]);
    await waitFor("the side job on llama.cpp and SGLang", () => llama.state().running >= 1 && sglang.state().running >= 1, 5000);
    expect(JSON.parse((await call(`${llama.url}/props`)).body)).toMatchObject({ total_slots: 4, is_sleeping: false });
    expect((await call(`${sglang.url}/metrics`)).body).toContain("sglang:num_running_reqs{");
    expect(JSON.parse((await call(`${fleet.proxy.url}/v1/models`)).body).data[0].id).toBe("gb10/llama-3.1-70b-fp8");

    await waitFor("gb10-a to hang", () => a.mode() === "hang", ((DEMO_SCRIPT.hangAt + 30) * 1000) / timeScale);
    await waitFor("gb10-b to crash", () => b.phase() === "crashed", ((DEMO_SCRIPT.crashAt - DEMO_SCRIPT.hangAt + 30) * 1000) / timeScale);
    expect((await call(`${b.url}/metrics`)).error).toBe("ECONNREFUSED");
    await waitFor("gb10-b back as a new process", () => b.phase() === "listening" && b.state().generation === 2, 5000);

    await waitFor("gb10-sglang to hang", () => sglang.mode() === "hang", ((DEMO_SCRIPT.sglangHangAt - DEMO_SCRIPT.crashAt + 30) * 1000) / timeScale);

    // The operator's restart (the config's webhook) cures the hang.
    expect((await call(`${a.url}/_sim/restart`, { method: "POST", body: {} })).status).toBe(202);
    await waitFor("gb10-a back after its restart", () => a.phase() === "listening" && a.state().generation === 2, 5000);
    expect(a.mode()).toBe("normal");

    await fleet.stop();
    expect((await call(`${a.url}/health`)).error).toBe("ECONNREFUSED");
    expect((await call(`${fleet.proxy.url}/v1/models`)).error).toBe("ECONNREFUSED");
  });
});

describe("demo fleet's llama.cpp", () => {
  it("falls asleep in the side job's pause (nothing polls it here) and the next batch wakes it", async () => {
    const timeScale = 120;
    fleet = await startDemoFleet({ timeScale, weightsLoadSeconds: 0.3 });
    const llama = fleet.simulators["gb10-llama"];
    const cycle = SIDE_SCHEDULE.reduce((t, p) => t + p.seconds, 0);
    await waitFor("gb10-llama to sleep", () => llama.state().engineState?.sleeping === true, (cycle * 1000) / timeScale + 5000, 100);
    await waitFor("the next batch to wake it", () => llama.state().engineState?.wokenBy.some((w) => w.path === "/v1/completions"), (cycle * 1000) / timeScale + 5000, 100);
  });
});

describe("sim CLI", () => {
  it("prints one JSON line when ready, serves, and exits 0 on SIGTERM", async () => {
    const root = path.resolve(__dirname, "../..");
    const child = spawn(process.execPath, ["--import", "tsx", "sim/cli.ts", "--count", "2", "--proxy", "0", "--model", "cli/model"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("the CLI printed no ready line in 20 s")), 20_000);
        readline.createInterface({ input: child.stdout! }).once("line", (l) => {
          clearTimeout(timer);
          resolve(l);
        });
        child.once("exit", (code) => reject(new Error(`the CLI exited with ${code}`)));
      });
      const ready = JSON.parse(line) as { ready: boolean; simulators: Array<{ url: string }>; proxy: { url: string } };
      expect(ready.ready).toBe(true);
      expect(ready.simulators).toHaveLength(2);
      for (const s of ready.simulators) expect((await call(`${s.url}/metrics`)).status).toBe(200);
      expect(JSON.parse((await call(`${ready.proxy.url}/v1/models`)).body).data[0].id).toBe("cli/model");
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect((await call(`${ready.simulators[0].url}/health`)).error).toBe("ECONNREFUSED");
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it("runs bundled by esbuild as the benchmarks start it: ready, the same exposition, stopped by pid", async () => {
    const { child, urls } = await startSimulatorFleet(2, 30_000, ["--model", "bundled/model", "--http-keep-alive-seconds", "15"]);
    try {
      expect(child.proc.spawnargs.some((a) => a.endsWith("cli.bundle.cjs"))).toBe(true);
      expect(urls).toHaveLength(2);
      const res = await call(`${urls[1]}/metrics`);
      expect(res.status).toBe(200);
      expect(res.body).toContain('vllm:num_requests_running{engine="0",model_name="bundled/model"} 0.0\n');
      expect(res.body).toContain("# TYPE vllm:iteration_tokens_total histogram\n");
    } finally {
      await child.stop();
    }
    expect(child.proc.exitCode).toBe(0);
    expect((await call(`${urls[0]}/health`)).error).toBe("ECONNREFUSED");
  });
});
