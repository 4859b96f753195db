/**
 * Ollama. Read from server/routes.go (ollama/ollama @ fb30760, v0.33.0-rc2); see docs/engines.md.
 *
 * It has no /metrics and nothing shows how many requests run or wait, so its load cannot be seen
 * and a probe would queue behind whatever runs: stepwatch never probes it. Liveness comes from
 * GET /api/version, the loaded models from GET /api/ps.
 */
import type { EngineAdapter } from "./adapter";

export const ollamaAdapter: EngineAdapter = {
  kind: "ollama",
  prefix: null,
  families: new Set(), // no /metrics: read from /api/version and /api/ps
  rules: { minStuckWindowSeconds: 0, livenessPath: "/api/version", probe: "never", metricsFlag: null },
  reads: {
    metricsPath: null,
    withoutMetrics: {
      liveness: { path: "/api/version", maxBytes: 64 * 1024, parse: (body) => parseOllamaVersion(body) },
      models: { path: "/api/ps", maxBytes: 1024 * 1024, parse: (body) => parseOllamaPs(body) },
    },
  },
  extract() {
    return { metrics: null, warnings: [], error: "Ollama exposes no load metrics" };
  },
};

/** GET /api/version body -> the version, or null when it is not Ollama's answer. */
export function parseOllamaVersion(body: string): string | null {
  try {
    const j = JSON.parse(body) as Record<string, unknown>;
    return j && typeof j === "object" && typeof j.version === "string" ? j.version : null;
  } catch {
    return null;
  }
}

/** GET /api/ps body -> the names of the loaded models (null when the body is not a model list). */
export function parseOllamaPs(body: string): string[] | null {
  try {
    const j = JSON.parse(body) as { models?: Array<{ name?: unknown; model?: unknown }> };
    if (!j || !Array.isArray(j.models)) return null;
    return j.models.map((m) => (typeof m.name === "string" ? m.name : typeof m.model === "string" ? m.model : null)).filter((n): n is string => n !== null);
  } catch {
    return null;
  }
}
