/**
 * The Configuration page's view of what is loaded, and the reload verb of the API. Built field by
 * field like every other answer (lib/api/snapshot.ts): a secret (API keys, operator passwords,
 * webhook URL given as env and header values) is shown as `env:NAME` when the file says so, else
 * `***`; URLs through publicUrl. A value read from the environment is never shown.
 */
import { DEFAULTS, type Config } from "../config";
import { DomainError } from "../core/errors";
import { publicUrl } from "../net/public-url";
import type { ConfigStatus, ReloadTrigger } from "../reload";
import { getRuntime } from "../runtime";
import type { ConfigView, ReloadResponse, RestartActionView, SecretShown } from "./types";
import { configErrorDTO } from "./snapshot";

const ENV_REF = /^env:[A-Za-z_][A-Za-z0-9_]*$/;

/** `env:NAME` as written in the file, else `***` (a literal secret, a hash, anything). */
export function shownSecret(raw: unknown): SecretShown {
  return typeof raw === "string" && ENV_REF.test(raw) ? raw : "***";
}

function at(raw: unknown, ...keys: Array<string | number>): unknown {
  let v = raw;
  for (const k of keys) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string | number, unknown>)[k];
  }
  return v;
}

export function configView(c: Config, status: ConfigStatus, demo: boolean, readThreadsRunning = 0): ConfigView {
  const raw = c.raw;
  return {
    path: status.path,
    demo,
    loadedAt: status.loadedAt,
    loadedBy: status.loadedBy,
    lastChange: status.lastChange
      ? {
          at: status.lastChange.at,
          trigger: status.lastChange.trigger,
          added: [...status.lastChange.added],
          removed: [...status.lastChange.removed],
          changed: [...status.lastChange.changed],
        }
      : null,
    configError: status.error ? configErrorDTO(status.error) : null,
    settings: {
      pollIntervalSeconds: c.pollIntervalSeconds,
      stuckAfterSeconds: c.stuckAfterSeconds,
      probeTimeoutSeconds: c.probeTimeoutSeconds,
      idleProbeSeconds: c.idleProbeSeconds,
      restartCooldownSeconds: c.restartCooldownSeconds,
      recoveryTimeoutSeconds: c.recoveryTimeoutSeconds,
      startupGraceSeconds: c.startupGraceSeconds,
      latencyEverySeconds: c.latencyEverySeconds,
      readThreads: c.readThreads,
      readThreadsRunning,
      retention: { rawHours: c.retention.rawHours, rollupDays: c.retention.rollupDays },
      history: { replayDays: c.history.replayDays },
      metricsBearerToken: c.metrics.bearerToken === null ? null : shownSecret(at(raw, "metrics", "bearerToken")),
    },
    backends: c.backends.map((b, i) => {
      let restart: RestartActionView | null = null;
      if (b.restart?.kind === "command") {
        // The argv is shown in the restart log too (SECURITY.md: keep secrets out of it).
        restart = { kind: "command", command: [...b.restart.command], timeoutSeconds: b.restart.timeoutSeconds };
      } else if (b.restart?.kind === "webhook") {
        const rawUrl = at(raw, "backends", i, "restart", "webhook", "url");
        restart = {
          kind: "webhook",
          url: typeof rawUrl === "string" && ENV_REF.test(rawUrl) ? rawUrl : publicUrl(b.restart.url),
          method: b.restart.method,
          headers: Object.fromEntries(Object.keys(b.restart.headers).map((h) => [h, shownSecret(at(raw, "backends", i, "restart", "webhook", "headers", h))])),
          timeoutSeconds: b.restart.timeoutSeconds,
        };
      }
      return {
        id: b.id,
        url: publicUrl(b.url),
        model: b.model ?? null,
        engine: b.engine ?? DEFAULTS.engine,
        probe: b.probe ?? DEFAULTS.probe,
        apiKey: b.apiKey === undefined ? null : shownSecret(at(raw, "backends", i, "apiKey")),
        restart,
        labels: { ...b.labels },
      };
    }),
    proxies: c.proxies.map((p, i) => ({
      id: p.id,
      url: publicUrl(p.url),
      apiKey: p.apiKey === undefined ? null : shownSecret(at(raw, "proxies", i, "apiKey")),
      backends: [...(p.backends ?? [])],
    })),
    operators: c.operators.map((o, i) => ({ name: o.name, password: shownSecret(at(raw, "operators", i, "password")) })),
  };
}

export async function getConfigView(): Promise<ConfigView> {
  const rt = await getRuntime();
  return configView(rt.config, rt.configStatus, rt.demo, rt.watcher.readPool?.threads ?? 0);
}

/** POST /api/config/reload: 409 for the demo fleet (no file); a bad file is 422 with its problems. */
export async function reloadConfigAs(operator: string): Promise<ReloadResponse> {
  const rt = await getRuntime();
  if (rt.demo || rt.configStatus.path === null) {
    throw new DomainError("conflict", "the embedded demo fleet runs: there is no config file to reload");
  }
  const trigger: ReloadTrigger = `operator ${operator}`;
  const r = rt.reloadConfig(trigger);
  const body: ReloadResponse = {
    ok: r.ok,
    added: r.change?.added ?? [],
    removed: r.change?.removed ?? [],
    changed: r.change?.changed ?? [],
    problems: [...r.problems],
  };
  if (!r.ok && r.unrecorded) throw new DomainError("unavailable", `the config was not reloaded; the running config stays: ${r.problems.join("; ")}`, { ...body });
  if (!r.ok) throw new DomainError("invalid-config", `the config was not reloaded; the running config stays: ${r.problems.join("; ")}`, { ...body });
  return body;
}
