/**
 * A hostile (or badly broken) backend for the security tests, in the shape of any engine stepwatch
 * reads: a valid, idle exposition (or answer) whose every list is as long as `models` (30,000 by
 * default: the red team's case), very long names if asked, made-up data-parallel `engine` labels if
 * asked, and a probe endpoint that answers (and records which model it was asked for). Everything
 * stepwatch keeps from it must stay small (lib/core/caps.ts). Real HTTP on 127.0.0.1, like the
 * simulator.
 * - vllm: every model_name on vllm:num_requests_running; `dpEngines` engine labels on the load gauges.
 * - sglang: every model_name on sglang:num_running_reqs.
 * - llamacpp: /props names one model of `nameLength` characters; /metrics is llama.cpp's.
 * - tgi: an empty /metrics (TGI before its first request) and /info naming one long model id.
 * - ollama: no /metrics (404), /api/version, and /api/ps listing every model.
 * - none: /metrics is an HTML page (no engine's), /v1/models lists every model.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type HostileShape = "vllm" | "sglang" | "llamacpp" | "tgi" | "ollama" | "none";

export interface HostileOptions {
  /** Which engine it looks like (default vllm). */
  shape?: HostileShape;
  /** Distinct model names (default 30,000). */
  models?: number;
  /** Characters of each model name (default ~12: "hostile-123"). Longer names are padded with "x". */
  nameLength?: number;
  /** vllm only: distinct `engine` labels on the load gauges (default none). */
  dpEngines?: number;
}

export interface HostileBackend {
  url: string;
  /** Bytes of one /metrics answer. */
  metricsBytes: number;
  /** GET /metrics answered so far. */
  metricsServed(): number;
  /** The `model` of every probe (POST /v1/completions, /v1/chat/completions) received, in order. */
  probedModels(): string[];
  close(): Promise<void>;
}

function names(n: number, len: number | undefined): string[] {
  return Array.from({ length: n }, (_, i) => {
    const base = `hostile-${i}`;
    return len && len > base.length ? base + "x".repeat(len - base.length) : base;
  });
}

type Family = readonly [name: string, type: string, series: readonly string[]];

function exposition(families: Family[], processStart: number | null): string {
  const lines: string[] = [];
  for (const [family, type, series] of families) {
    lines.push(`# HELP ${family} hostile`, `# TYPE ${family} ${type}`);
    for (const labels of series) lines.push(`${family}${labels} 0`);
  }
  if (processStart !== null) lines.push("# TYPE process_start_time_seconds gauge", `process_start_time_seconds ${processStart}`);
  return lines.join("\n") + "\n";
}

/** vLLM: every model name on the running gauge (the one series family a reading must have); one on the rest. */
export function hostileExposition(models: string[], processStart: number, dpEngines = 0): string {
  const one = [`{model_name="${models[0]}"}`];
  const engines = dpEngines > 0 ? Array.from({ length: dpEngines }, (_, i) => `{model_name="${models[0]}",engine="${i}"}`) : one;
  return exposition(
    [
      ["vllm:num_requests_running", "gauge", [...models.map((m) => `{model_name="${m}"}`), ...(dpEngines > 0 ? engines : [])]],
      ["vllm:num_requests_waiting", "gauge", engines],
      ["vllm:prompt_tokens_total", "counter", one],
      ["vllm:generation_tokens_total", "counter", one],
    ],
    processStart,
  );
}

function metricsOf(shape: HostileShape, models: string[], dpEngines: number): Buffer | null {
  const start = Math.floor(Date.now() / 1000);
  switch (shape) {
    case "vllm":
      return Buffer.from(hostileExposition(models, start, dpEngines));
    case "sglang":
      return Buffer.from(
        exposition(
          [
            ["sglang:num_running_reqs", "gauge", models.map((m) => `{model_name="${m}"}`)],
            ["sglang:num_queue_reqs", "gauge", [`{model_name="${models[0]}"}`]],
            ["sglang:gen_throughput", "gauge", [`{model_name="${models[0]}"}`]],
          ],
          null,
        ),
      );
    case "llamacpp":
      return Buffer.from(
        exposition(
          [
            ["llamacpp:requests_processing", "gauge", [""]],
            ["llamacpp:requests_deferred", "gauge", [""]],
            ["llamacpp:n_decode_total", "counter", [""]],
          ],
          null,
        ),
      );
    case "tgi":
      return Buffer.from("");
    case "none":
      return Buffer.from(`<!doctype html><html><body>${"<p>not metrics</p>".repeat(1000)}</body></html>`);
    case "ollama":
      return null;
  }
}

export async function startHostileBackend(opts: HostileOptions = {}): Promise<HostileBackend> {
  const shape = opts.shape ?? "vllm";
  const models = names(opts.models ?? 30_000, opts.nameLength);
  const metrics = metricsOf(shape, models, opts.dpEngines ?? 0);
  const json = (v: unknown) => Buffer.from(JSON.stringify(v));
  const modelList = json({ object: "list", data: models.map((id) => ({ id, object: "model" })) });
  const routes: Record<string, Buffer | undefined> = {
    "/v1/models": modelList,
    ...(shape === "llamacpp" ? { "/props": json({ model_path: `/models/${models[0]}`, total_slots: 1, is_sleeping: false, n_ctx: 4096 }) } : {}),
    ...(shape === "tgi" ? { "/info": json({ model_id: models[0], version: "3.3.6" }) } : {}),
    ...(shape === "ollama" ? { "/api/version": json({ version: "0.33.0" }), "/api/ps": json({ models: models.map((name) => ({ name, model: name })) }) } : {}),
  };
  let served = 0;
  const probed: string[] = [];
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (path === "/metrics" && metrics) {
        served++;
        res.writeHead(200, { "content-type": shape === "none" ? "text/html" : "text/plain; version=0.0.4" }).end(metrics);
      } else if (path === "/health") res.writeHead(200).end();
      else if (routes[path]) res.writeHead(200, { "content-type": "application/json" }).end(routes[path]);
      else if (req.method === "POST" && (path === "/v1/completions" || path === "/v1/chat/completions")) {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model?: unknown };
          probed.push(typeof body.model === "string" ? body.model : "");
        } catch {
          probed.push("");
        }
        res.writeHead(200, { "content-type": "application/json" }).end('{"choices":[{"text":"."}]}');
      } else res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    metricsBytes: metrics?.length ?? 0,
    metricsServed: () => served,
    probedModels: () => [...probed],
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
