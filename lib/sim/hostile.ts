/**
 * A hostile (or badly broken) vLLM-looking backend for the security tests: a valid, idle vLLM
 * exposition whose every series carries one of `models` distinct model_name labels (30,000 by
 * default: the red team's case), an OpenAI model list as long, very long label values if asked,
 * and a probe endpoint that answers. Everything stepwatch keeps from it must stay small
 * (lib/check/caps.ts). Real HTTP on 127.0.0.1, like the simulator.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface HostileOptions {
  /** Distinct model_name label values (default 30,000). */
  models?: number;
  /** Characters of each model name (default ~12: "hostile-123"). Longer names are padded with "x". */
  nameLength?: number;
}

export interface HostileBackend {
  url: string;
  /** Bytes of one /metrics answer. */
  metricsBytes: number;
  /** GET /metrics answered so far. */
  metricsServed(): number;
  close(): Promise<void>;
}

function names(n: number, len: number | undefined): string[] {
  return Array.from({ length: n }, (_, i) => {
    const base = `hostile-${i}`;
    return len && len > base.length ? base + "x".repeat(len - base.length) : base;
  });
}

/** Every model name on the running gauge (the one series family a reading must have); one on the rest. */
export function hostileExposition(models: string[], processStart: number): string {
  const lines: string[] = [];
  for (const [family, type, labels] of [
    ["vllm:num_requests_running", "gauge", models],
    ["vllm:num_requests_waiting", "gauge", models.slice(0, 1)],
    ["vllm:prompt_tokens_total", "counter", models.slice(0, 1)],
    ["vllm:generation_tokens_total", "counter", models.slice(0, 1)],
  ] as const) {
    lines.push(`# HELP ${family} hostile`, `# TYPE ${family} ${type}`);
    for (const m of labels) lines.push(`${family}{model_name="${m}"} 0`);
  }
  lines.push("# TYPE process_start_time_seconds gauge", `process_start_time_seconds ${processStart}`);
  return lines.join("\n") + "\n";
}

export async function startHostileBackend(opts: HostileOptions = {}): Promise<HostileBackend> {
  const models = names(opts.models ?? 30_000, opts.nameLength);
  const metrics = Buffer.from(hostileExposition(models, Math.floor(Date.now() / 1000)));
  const modelList = Buffer.from(JSON.stringify({ object: "list", data: models.map((id) => ({ id, object: "model" })) }));
  let served = 0;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    req.resume();
    if (path === "/metrics") {
      served++;
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" }).end(metrics);
    } else if (path === "/health") res.writeHead(200).end();
    else if (path === "/v1/models") res.writeHead(200, { "content-type": "application/json" }).end(modelList);
    else if (path === "/v1/completions") res.writeHead(200, { "content-type": "application/json" }).end('{"choices":[{"text":"."}]}');
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    metricsBytes: metrics.length,
    metricsServed: () => served,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
