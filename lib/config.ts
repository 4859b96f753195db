/**
 * stepwatch.config.json: validated at boot and on every reload (lib/reload.ts) with zod, defaults in one place (DEFAULTS), secrets
 * given as "env:NAME" resolved here so nothing downstream reads the environment. A bad file stops
 * the start with one line per problem, each naming the field (`backends[1].url: Invalid URL`).
 */
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { DEFAULT_THRESHOLDS, PROBE_CHOICES, type ProbeChoice, type Thresholds } from "./check/types";
import { ENGINE_CHOICES, type EngineChoice } from "./engines/types";

/** Every default of the config, and only here (the classifier's thresholds come from DEFAULT_THRESHOLDS). */
export const DEFAULTS = {
  pollIntervalSeconds: 5,
  ...DEFAULT_THRESHOLDS,
  probeTimeoutSeconds: 10,
  restartCooldownSeconds: 600,
  engine: "auto",
  probe: "auto",
  retention: { rawHours: 48, rollupDays: 90 },
  restartCommandTimeoutSeconds: 120,
  webhookMethod: "POST",
  webhookTimeoutSeconds: 30,
} as const;

export type PasswordSpec =
  | { kind: "scrypt"; hash: string }
  /** A clear-text password: from an env var, or (demo only) written in the config itself. */
  | { kind: "plain"; value: string; source: "env" | "inline" };

export type RestartAction =
  | { kind: "command"; command: string[]; timeoutSeconds: number }
  | { kind: "webhook"; url: string; method: string; headers: Record<string, string>; timeoutSeconds: number };

export interface BackendConfig {
  id: string;
  url: string;
  apiKey?: string;
  model?: string;
  /** Which engine it runs ("auto": detected from its answers, again after every restart). */
  engine?: EngineChoice;
  /** Which request the idle probe sends ("auto" by engine, learning from 404/405; "none": metrics alone). */
  probe?: ProbeChoice;
  restart?: RestartAction;
}

export interface ProxyConfig {
  id: string;
  url: string;
  apiKey?: string;
  /** Ids of the backends this proxy fronts (each one is in `backends`): "1 of 2 healthy" beside its state. */
  backends?: string[];
}

export interface OperatorConfig {
  name: string;
  password: PasswordSpec;
}

export interface Config {
  /** The file it came from, or "demo" for the embedded demo config. */
  source: string;
  pollIntervalSeconds: number;
  stuckAfterSeconds: number;
  probeTimeoutSeconds: number;
  idleProbeSeconds: number;
  restartCooldownSeconds: number;
  recoveryTimeoutSeconds: number;
  startupGraceSeconds: number;
  retention: { rawHours: number; rollupDays: number };
  backends: BackendConfig[];
  proxies: ProxyConfig[];
  operators: OperatorConfig[];
  /** GET /metrics: public (null) or requiring `Authorization: Bearer <bearerToken>`. */
  metrics: { bearerToken: string | null };
  /**
   * Every variable an "env:NAME" secret was read from, sorted. Restart commands run without them
   * (lib/restart/execute.ts restartCommandEnv): a command's output is shown to every reader.
   */
  secretEnvNames: string[];
  /** Things that are accepted but worth a line in the log (a clear-text demo password). */
  warnings: string[];
  /**
   * The JSON as written, before "env:NAME" was resolved. Read only by the redacted view of the
   * Configuration page (lib/api/config-view.ts), to show `env:NAME` instead of `***`; never sent.
   */
  raw: unknown;
}

export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(`invalid config ${source}:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

export interface ParseOptions {
  /** Where "env:NAME" secrets are looked up; process.env by default. */
  env?: Record<string, string | undefined>;
  /** Accept clear-text operator passwords written in the file (the embedded demo config only). */
  allowInlinePasswords?: boolean;
}

// Ids appear in URLs (/backends/{id}) and in the DB: keep them slug-like.
const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const ENV_RE = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;

/** `secretEnvNames` collects the name of every variable an "env:NAME" secret refers to. */
function buildSchema(env: Record<string, string | undefined>, allowInlinePasswords: boolean, secretEnvNames: Set<string>) {
  /** A string that may be "env:NAME"; resolved here, a missing variable is an error on the field. */
  const secret = z.string().transform((s, ctx) => {
    if (!s.startsWith("env:")) return s;
    const m = ENV_RE.exec(s);
    if (!m) {
      ctx.addIssue({ code: "custom", message: `"${s}" is not a valid env reference (env:NAME)` });
      return z.NEVER;
    }
    secretEnvNames.add(m[1]);
    const value = env[m[1]];
    if (value === undefined || value === "") {
      ctx.addIssue({ code: "custom", message: `environment variable ${m[1]} is not set` });
      return z.NEVER;
    }
    return value;
  });
  const httpUrl = z
    .url({ protocol: /^https?$/, message: "Invalid URL" })
    // One spelling per target, so "{url}/metrics" never becomes "//metrics".
    .transform((u) => u.replace(/\/+$/, ""));
  const secretUrl = secret.pipe(httpUrl);
  const id = z.string().regex(ID_RE, "must be 1-64 letters, digits, '-' or '_' (it appears in URLs)");
  const seconds = z.number().positive();

  const restart = z
    .strictObject({
      command: z.array(z.string().min(1)).min(1, "must name the program to run").optional(),
      timeoutSeconds: seconds.optional(),
      webhook: z
        .strictObject({
          url: secretUrl,
          method: z.enum(["POST", "PUT", "GET"]).optional(),
          headers: z.record(z.string(), secret).optional(),
          timeoutSeconds: seconds.optional(),
        })
        .optional(),
    })
    .superRefine((r, ctx) => {
      if ((r.command === undefined) === (r.webhook === undefined))
        ctx.addIssue({ code: "custom", message: "give exactly one of command or webhook" });
      if (r.webhook !== undefined && r.timeoutSeconds !== undefined)
        ctx.addIssue({ code: "custom", path: ["timeoutSeconds"], message: "only applies to command; a webhook takes webhook.timeoutSeconds" });
    })
    .transform((r): RestartAction =>
      r.command
        ? { kind: "command", command: r.command, timeoutSeconds: r.timeoutSeconds ?? DEFAULTS.restartCommandTimeoutSeconds }
        : {
            kind: "webhook",
            url: r.webhook!.url,
            method: r.webhook!.method ?? DEFAULTS.webhookMethod,
            headers: r.webhook!.headers ?? {},
            timeoutSeconds: r.webhook!.timeoutSeconds ?? DEFAULTS.webhookTimeoutSeconds,
          },
    );

  const password = z.string().transform((s, ctx): PasswordSpec => {
    if (s.startsWith("scrypt:")) return { kind: "scrypt", hash: s };
    if (s.startsWith("env:")) {
      const resolved = secret.safeParse(s);
      if (!resolved.success) {
        for (const i of resolved.error.issues) ctx.addIssue({ code: "custom", message: i.message });
        return z.NEVER;
      }
      // The variable may itself hold a hash (npm run hash-password) or the password.
      return resolved.data.startsWith("scrypt:")
        ? { kind: "scrypt", hash: resolved.data }
        : { kind: "plain", value: resolved.data, source: "env" };
    }
    if (!allowInlinePasswords) {
      ctx.addIssue({ code: "custom", message: 'must be "env:NAME" or a "scrypt:..." hash (npm run hash-password), not a clear-text password' });
      return z.NEVER;
    }
    return { kind: "plain", value: s, source: "inline" };
  });

  const backend = z.strictObject({
    id,
    url: httpUrl,
    apiKey: secret.optional(),
    model: z.string().min(1).optional(),
    engine: z.enum(ENGINE_CHOICES).default(DEFAULTS.engine),
    probe: z.enum(PROBE_CHOICES).default(DEFAULTS.probe),
    restart: restart.optional(),
  });
  const proxy = z.strictObject({ id, url: httpUrl, apiKey: secret.optional(), backends: z.array(z.string()).optional() });
  const operator = z.strictObject({ name: z.string().min(1), password });
  // Only "env:NAME": a scrape token in a config file that is often world-readable is no secret.
  const bearerToken = z
    .string()
    .refine((s) => s.startsWith("env:"), { message: 'must be "env:NAME" (the variable holds the token)' })
    .pipe(secret)
    .refine((s) => s.length >= 16, { message: "the token must be at least 16 characters" });

  return z
    .strictObject({
      pollIntervalSeconds: seconds.default(DEFAULTS.pollIntervalSeconds),
      stuckAfterSeconds: seconds.default(DEFAULTS.stuckAfterSeconds),
      probeTimeoutSeconds: seconds.default(DEFAULTS.probeTimeoutSeconds),
      idleProbeSeconds: seconds.default(DEFAULTS.idleProbeSeconds),
      restartCooldownSeconds: z.number().nonnegative().default(DEFAULTS.restartCooldownSeconds),
      recoveryTimeoutSeconds: seconds.default(DEFAULTS.recoveryTimeoutSeconds),
      startupGraceSeconds: z.number().nonnegative().default(DEFAULTS.startupGraceSeconds),
      retention: z
        .strictObject({
          rawHours: seconds.default(DEFAULTS.retention.rawHours),
          rollupDays: seconds.default(DEFAULTS.retention.rollupDays),
        })
        .default({ ...DEFAULTS.retention }),
      backends: z.array(backend).default([]),
      proxies: z.array(proxy).default([]),
      operators: z.array(operator).default([]),
      metrics: z
        .strictObject({ bearerToken: bearerToken.optional() })
        .default({})
        .transform((m) => ({ bearerToken: m.bearerToken ?? null })),
    })
    .superRefine((c, ctx) => {
      // Backends and proxies share one id space: transitions and logs name them by id alone.
      const seen = new Map<string, string>();
      const check = (list: { id: string }[], key: "backends" | "proxies") =>
        list.forEach((t, i) => {
          const where = `${key}[${i}]`;
          const first = seen.get(t.id);
          if (first) ctx.addIssue({ code: "custom", path: [key, i, "id"], message: `"${t.id}" is already used by ${first}` });
          else seen.set(t.id, where);
        });
      check(c.backends, "backends");
      check(c.proxies, "proxies");
      const backendIds = new Set(c.backends.map((b) => b.id));
      c.proxies.forEach((p, i) =>
        p.backends?.forEach((b, j) => {
          if (!backendIds.has(b)) ctx.addIssue({ code: "custom", path: ["proxies", i, "backends", j], message: `no backend "${b}" in backends` });
        }),
      );
      const names = new Set<string>();
      c.operators.forEach((o, i) => {
        if (names.has(o.name)) ctx.addIssue({ code: "custom", path: ["operators", i, "name"], message: `"${o.name}" appears twice` });
        names.add(o.name);
      });
    });
}

/** `backends[1].url` from zod's path array. */
export function formatPath(p: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const k of p) {
    if (typeof k === "number") out += `[${k}]`;
    else out += out ? `.${String(k)}` : String(k);
  }
  return out || "(root)";
}

function formatIssues(issues: z.core.$ZodIssue[]): string[] {
  const lines: string[] = [];
  for (const i of issues) {
    if (i.code === "unrecognized_keys") {
      for (const k of i.keys) lines.push(`${formatPath([...i.path, k])}: unknown field`);
    } else {
      lines.push(`${formatPath(i.path)}: ${i.message}`);
    }
  }
  return lines;
}

/** Validate an already-parsed JSON value. `source` names it in errors (a path, or "demo"). */
export function parseConfig(json: unknown, source: string, opts: ParseOptions = {}): Config {
  const secretEnvNames = new Set<string>();
  const schema = buildSchema(opts.env ?? process.env, opts.allowInlinePasswords ?? false, secretEnvNames);
  const r = schema.safeParse(json);
  if (!r.success) throw new ConfigError(source, formatIssues(r.error.issues));
  const warnings = r.data.operators
    .filter((o) => o.password.kind === "plain" && o.password.source === "inline")
    .map((o) => `operator "${o.name}" has a clear-text password in the config (accepted for the demo only)`);
  return { source, ...r.data, secretEnvNames: [...secretEnvNames].sort(), warnings, raw: json };
}

/** Read and validate a config file. Throws ConfigError naming the file and the fields. */
export function loadConfig(file: string, opts: ParseOptions = {}): Config {
  return parseConfigText(readConfigText(file), file, opts);
}

/** The file's text; a missing or unreadable file is a ConfigError. */
export function readConfigText(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(file, [`cannot read the file: ${(e as Error).message}`]);
  }
}

/** Validate the text of a config file (the reload compares texts before parsing). */
export function parseConfigText(text: string, source: string, opts: ParseOptions = {}): Config {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(source, [`not valid JSON: ${jsonProblem((e as Error).message, text)}`]);
  }
  return parseConfig(json, source, opts);
}

/**
 * V8's JSON error without the piece of the file it quotes (`..."apiKey": sk-live-..."`): the
 * problem is shown on the dashboard and in the log, and the file holds secrets. Where V8 gives a
 * position, it becomes a line and column.
 */
export function jsonProblem(message: string, text: string): string {
  const what = message
    .replace(/,\s*(\.\.\.)?".*$/s, "")
    .replace(/\s+in JSON at position \d+.*$/s, "")
    .replace(/\s+at position \d+.*$/s, "")
    .trim();
  const pos = /at position (\d+)/.exec(message);
  if (!pos) return what;
  const before = text.slice(0, Number(pos[1]));
  const line = before.split("\n").length;
  const column = before.length - before.lastIndexOf("\n");
  return `${what} at line ${line}, column ${column}`;
}

/**
 * STEPWATCH_CONFIG if set (it must exist: a typo must not silently start the demo), else
 * ./stepwatch.config.json when present, else null (the embedded demo fleet runs).
 * STEPWATCH_DEMO=1 (`npm run demo`) asks for the demo fleet whatever config is around.
 */
export function resolveConfigPath(
  env: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd(),
): string | null {
  if (env.STEPWATCH_DEMO === "1") return null;
  const explicit = env.STEPWATCH_CONFIG;
  if (explicit) return path.resolve(cwd, explicit);
  const local = path.join(cwd, "stepwatch.config.json");
  return fs.existsSync(local) ? local : null;
}

/** The classifier's thresholds, from the config. */
export function thresholdsOf(c: Pick<Config, "stuckAfterSeconds" | "idleProbeSeconds" | "recoveryTimeoutSeconds" | "startupGraceSeconds">): Thresholds {
  return {
    stuckAfterSeconds: c.stuckAfterSeconds,
    idleProbeSeconds: c.idleProbeSeconds,
    recoveryTimeoutSeconds: c.recoveryTimeoutSeconds,
    startupGraceSeconds: c.startupGraceSeconds,
  };
}
