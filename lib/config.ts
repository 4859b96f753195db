/**
 * stepwatch.config.json: validated at boot and on every reload (lib/reload.ts) with zod, defaults in one place (DEFAULTS), secrets
 * given as "env:NAME" resolved here so nothing downstream reads the environment. A bad file stops
 * the start with one line per problem, each naming the field (`backends[1].url: Invalid URL`).
 */
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { DEFAULT_THRESHOLDS, PROBE_CHOICES, type Thresholds } from "./core/types";
import type { CrashLoopRule } from "./core/crash-loop";
import { ENGINE_CHOICES } from "./core/engine";
import { LATENCY_EVERY_SECONDS } from "./core/latency";
import { DEFAULT_REPLAY_DAYS, MAX_REPLAY_DAYS } from "./core/replay";
import { LABELS_MAX, LABEL_KEY_RE, LABEL_VALUE_MAX } from "./core/labels";
import { CHANNEL_TYPES, NOTIFICATION_EVENTS } from "./core/events";
import { buildNetPolicy, isLooseTrust, trustRangeBits } from "./net/net-policy";
import { DomainError } from "./core/errors";

/** The most read threads a config may ask for (readThreads). */
export const MAX_READ_THREADS = 16;

/** Every default of the config, and only here (the classifier's thresholds come from DEFAULT_THRESHOLDS). */
export const DEFAULTS = {
  pollIntervalSeconds: 5,
  ...DEFAULT_THRESHOLDS,
  probeTimeoutSeconds: 10,
  latencyEverySeconds: LATENCY_EVERY_SECONDS,
  readThreads: "auto",
  restartCooldownSeconds: 600,
  engine: "auto",
  probe: "auto",
  retention: { rawHours: 48, rollupDays: 90 },
  /** The replay record (db `replay_readings`, folded into `replay_chunks`): the classifier's part of every reading, kept this many days. */
  history: { replayDays: DEFAULT_REPLAY_DAYS },
  /** Audit lines older than this are deleted (at start and by the retention job): about 13 months. */
  auditRetentionDays: 400,
  restartCommandTimeoutSeconds: 120,
  webhookMethod: "POST",
  webhookTimeoutSeconds: 30,
  /**
   * A crash loop: this many new processes stepwatch did not ask for within windowMinutes (a
   * supervisor restarting a server that keeps dying). It is over after windowMinutes without one.
   */
  crashLoop: { restarts: 3, windowMinutes: 5 },
  /** How long a restart waits for its incident's evidence capture before it runs anyway. */
  evidenceTimeoutSeconds: 30,
  /** All evidence bundles together, in bytes: past it the oldest are deleted first. */
  evidenceMaxTotalBytes: 256 * 1024 * 1024,
  evidence: {
    /** One bundle, in bytes (every command's output, the bodies and status routes together). */
    maxBytes: 4 * 1024 * 1024,
    retentionDays: 30,
    commandTimeoutSeconds: 10,
  },
  notifications: {
    renotifyMinutes: 60,
    /**
     * Flap debounce: a problem counts as over (one `recovered`) only after the backend stayed
     * healthy this long; a stuck -> busy -> stuck flap inside it sends nothing.
     */
    recoveredAfterSeconds: 60,
    /**
     * Grouping, as Alertmanager does it: problems (and recoveries) that start within this many
     * seconds go out as one message per channel, sent when the oldest is this old.
     */
    groupWaitSeconds: 10,
    /** The same for reminders: the reminders written within this many seconds go out as one message. */
    groupIntervalSeconds: 60,
    smtpPort: 587,
  },
} as const;

/**
 * The config as the schema leaves it: every default filled in, "env:NAME" resolved, `restart` and
 * `maintenance` in their parsed forms. The types below are read off it, so the schema (buildSchema)
 * is the one description of the config; a field is added there, never here.
 */
type Parsed = z.output<ReturnType<typeof buildSchema>>;

export type BackendConfig = Parsed["backends"][number];
export type RestartAction = NonNullable<BackendConfig["restart"]>;
/** Opt-in unattended restart (restart.unattended): off unless given. */
export type UnattendedConfig = NonNullable<BackendConfig["unattended"]>;
export type NotificationsConfig = Parsed["notifications"];
export type ChannelConfig = NotificationsConfig["channels"][number];
/**
 * A maintenance window from the config: one-off (start/end) or weekly (days, at HH:MM UTC,
 * minutes). backends null: all.
 */
export type MaintenanceWindowConfig = Parsed["maintenance"][number];
export type ProxyConfig = Parsed["proxies"][number];
export type OperatorConfig = Parsed["operators"][number];
export type PasswordSpec = OperatorConfig["password"];
/** operator: reads and restarts. viewer: reads only (when access.read is "signed-in"), never restarts. */
export type Role = OperatorConfig["role"];
/** The shortest API or /metrics token accepted: 32 characters (128 bits as hex, more as base64). */
export const MIN_TOKEN_CHARS = 32;

/** An API token for scripts (`Authorization: Bearer <token>`); `name` is recorded as the actor. */
export type TokenConfig = Parsed["tokens"][number];

/**
 * The parsed config and what parseConfig adds after the schema: these fields are not in the file
 * (where it came from, what resolving it saw, the file itself), so no schema field produces them.
 */
export type Config = Parsed & {
  /** The file it came from, or "demo" for the embedded demo config. */
  source: string;
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
};

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
/** A backend's or proxy's id, unanchored: it appears in URLs (lib/api/fast-lane.ts matches it in a path). */
export const ID_PATTERN = "[A-Za-z0-9][A-Za-z0-9_-]{0,63}";
const ID_RE = new RegExp(`^${ID_PATTERN}$`);
const ENV_RE = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;

/** `secretEnvNames` collects the name of every variable an "env:NAME" secret refers to. */
function buildSchema(env: Record<string, string | undefined>, allowInlinePasswords: boolean, secretEnvNames: Set<string>) {
  /** A string that may be "env:NAME"; resolved here, a missing variable is an error on the field. */
  const secret = z.string().transform((s, ctx) => {
    if (!s.startsWith("env:")) return s;
    const m = ENV_RE.exec(s);
    if (!m) {
      // Never the value: what follows "env:" is often the secret itself, pasted where its name belongs,
      // and this message reaches the dashboard (configError), the audit log and the server log.
      ctx.addIssue({ code: "custom", message: "malformed env reference: must be env:NAME (letters, digits and _; the value is not shown)" });
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
      unattended: z
        .strictObject({
          /** How long the backend must have been stuck (restart recommended) before stepwatch restarts it. */
          afterSeconds: seconds,
          /** At most this many unattended restarts of this backend in any 24 hours. */
          maxPerDay: z.number().int().positive(),
        })
        .optional(),
    })
    .superRefine((r, ctx) => {
      if ((r.command === undefined) === (r.webhook === undefined))
        ctx.addIssue({ code: "custom", message: "give exactly one of command or webhook" });
      if (r.webhook !== undefined && r.timeoutSeconds !== undefined)
        ctx.addIssue({ code: "custom", path: ["timeoutSeconds"], message: "only applies to command; a webhook takes webhook.timeoutSeconds" });
    })
    .transform((r) => ({
      action: r.command
        ? { kind: "command" as const, command: r.command, timeoutSeconds: r.timeoutSeconds ?? DEFAULTS.restartCommandTimeoutSeconds }
        : {
            kind: "webhook" as const,
            url: r.webhook!.url,
            method: r.webhook!.method ?? DEFAULTS.webhookMethod,
            headers: r.webhook!.headers ?? {},
            timeoutSeconds: r.webhook!.timeoutSeconds ?? DEFAULTS.webhookTimeoutSeconds,
          },
      ...(r.unattended ? { unattended: r.unattended } : {}),
    }));

  // Both fields optional: a backend may override one and keep the fleet's other.
  const crashLoop = z.strictObject({
    restarts: z.number().int().min(2, "must be a whole number of at least 2 (one new process is a restart, not a loop)").optional(),
    windowMinutes: z.number().positive().optional(),
  });
  // Evidence commands (issue 32): argv run without a shell, like the restart command; an env value
  // may be "env:NAME", and such values are kept apart (secretValues) so the capture can blank them
  // out of what the command printed: they are never stored, logged or shown.
  const evidenceCommand = z
    .strictObject({
      name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be 1-64 letters, digits, '.', '-' or '_' (it names a file in the .tar.gz)"),
      command: z.array(z.string().min(1)).min(1, "must name the program to run"),
      timeoutSeconds: seconds.max(600).optional(),
      env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name"), z.string()).optional(),
    })
    .transform((c, ctx) => {
      const env: Record<string, string> = {};
      const secretValues: string[] = [];
      for (const [name, value] of Object.entries(c.env ?? {})) {
        const r = secret.safeParse(value);
        if (!r.success) {
          for (const i of r.error.issues) ctx.addIssue({ code: "custom", path: ["env", name], message: i.message });
          continue;
        }
        env[name] = r.data;
        if (value.startsWith("env:")) secretValues.push(r.data);
      }
      return { name: c.name, command: c.command, timeoutSeconds: c.timeoutSeconds ?? DEFAULTS.evidence.commandTimeoutSeconds, env, secretValues };
    });
  const evidence = z
    .strictObject({
      commands: z.array(evidenceCommand).max(16).default([]),
      maxBytes: z.number().int().min(1024).max(64 * 1024 * 1024).optional(),
      retentionDays: seconds.optional(),
    })
    .superRefine((e, ctx) => {
      const names = new Set<string>();
      e.commands.forEach((c, i) => {
        if (names.has(c.name)) ctx.addIssue({ code: "custom", path: ["commands", i, "name"], message: `"${c.name}" appears twice` });
        names.add(c.name);
      });
    })
    .transform((e) => ({ commands: e.commands, maxBytes: e.maxBytes ?? DEFAULTS.evidence.maxBytes, retentionDays: e.retentionDays ?? DEFAULTS.evidence.retentionDays }));

  const password = z.string().transform((s, ctx) => {
    if (s.startsWith("scrypt:")) return { kind: "scrypt" as const, hash: s };
    if (s.startsWith("env:")) {
      const resolved = secret.safeParse(s);
      if (!resolved.success) {
        for (const i of resolved.error.issues) ctx.addIssue({ code: "custom", message: i.message });
        return z.NEVER;
      }
      // The variable may itself hold a hash (npm run hash-password) or the password.
      return resolved.data.startsWith("scrypt:")
        ? { kind: "scrypt" as const, hash: resolved.data }
        : { kind: "plain" as const, value: resolved.data, source: "env" as const };
    }
    if (!allowInlinePasswords) {
      ctx.addIssue({ code: "custom", message: 'must be "env:NAME" or a "scrypt:..." hash (npm run hash-password), not a clear-text password' });
      return z.NEVER;
    }
    // A clear-text password: from an env var (above), or (demo only) written in the config itself.
    return { kind: "plain" as const, value: s, source: "inline" as const };
  });

  const backend = z
    .strictObject({
      id,
      url: httpUrl,
      apiKey: secret.optional(),
      model: z.string().min(1).optional(),
      /** Which engine it runs ("auto": detected from its answers, again after every restart). */
      engine: z.enum(ENGINE_CHOICES).default(DEFAULTS.engine),
      /** Which request the idle probe sends ("auto" by engine, learning from 404/405; "none": metrics alone). */
      probe: z.enum(PROBE_CHOICES).default(DEFAULTS.probe),
      restart: restart.optional(),
      /** This backend's crash-loop rule, over the fleet's `crashLoop` field by field. */
      crashLoop: crashLoop.optional(),
      /** What to capture when it gets stuck or goes down, and before any restart (issue 32). */
      evidence: evidence.optional(),
      /** Free labels to filter and group the fleet by (site, GPU type, team); carried in the fleet answer. */
      labels: z
        .record(
          z.string(),
          z.string().min(1, "a label value must not be empty").max(LABEL_VALUE_MAX, `a label value must be at most ${LABEL_VALUE_MAX} characters`),
        )
        // The key is checked here rather than by the record's key schema: zod reports a bad key
        // only as "Invalid key in record", and the error should say what a key may be.
        .superRefine((l, ctx) => {
          const keys = Object.keys(l);
          for (const k of keys)
            if (!LABEL_KEY_RE.test(k))
              ctx.addIssue({ code: "custom", path: [k], message: "a label key must be 1-32 lower-case letters, digits or '_', starting with a letter" });
          if (keys.length > LABELS_MAX) ctx.addIssue({ code: "custom", message: `at most ${LABELS_MAX} labels per backend` });
        })
        .default({}),
    })
    // restart.unattended moves up beside the action: only a backend with an action has it.
    .transform(({ restart: r, ...b }) => ({
      ...b,
      ...(r ? { restart: r.action } : {}),
      ...(r?.unattended ? { unattended: r.unattended } : {}),
    }));

  const filters = {
    id,
    events: z.array(z.enum(NOTIFICATION_EVENTS)).min(1).optional(),
    backends: z.array(z.string()).min(1).optional(),
  };
  const channel = z
    .discriminatedUnion("type", [
      z.strictObject({ ...filters, type: z.literal("webhook"), url: secretUrl, headers: z.record(z.string(), secret).optional() }),
      z.strictObject({ ...filters, type: z.literal("slack"), url: secretUrl }),
      z.strictObject({ ...filters, type: z.literal("ntfy"), url: secretUrl, token: secret.optional() }),
      z.strictObject({
        ...filters,
        type: z.literal("email"),
        smtp: z.strictObject({
          host: z.string().min(1),
          port: z.number().int().min(1).max(65535).optional(),
          secure: z.boolean().optional(),
          user: z.string().min(1).optional(),
          password: secret.optional(),
        }),
        from: z.string().min(3),
        to: z.array(z.string().min(3)).min(1),
      }),
    ], { error: () => `type must be one of ${CHANNEL_TYPES.join(", ")}` })
    .transform((c) => {
      // events null: every event; backends null: every backend.
      const base = { id: c.id, events: c.events ?? null, backends: c.backends ?? null };
      switch (c.type) {
        case "webhook":
          return { ...base, type: c.type, url: c.url, headers: c.headers ?? {} };
        case "slack":
          return { ...base, type: c.type, url: c.url };
        case "ntfy":
          return { ...base, type: c.type, url: c.url, ...(c.token ? { token: c.token } : {}) };
        case "email":
          return {
            ...base,
            type: c.type,
            smtp: { ...c.smtp, port: c.smtp.port ?? DEFAULTS.notifications.smtpPort, secure: c.smtp.secure ?? false },
            from: c.from,
            to: c.to,
          };
      }
    });
  const notifications = z
    .strictObject({
      /** Where stepwatch is reached by people; links in messages are {publicUrl}/backends/{id}. */
      publicUrl: httpUrl.optional(),
      renotifyMinutes: z.number().positive().optional(),
      recoveredAfterSeconds: z.number().nonnegative().optional(),
      // At most an hour: a window is also how late a message may go out (lib/notify/outbox.ts).
      groupWaitSeconds: z.number().nonnegative().max(3600).optional(),
      groupIntervalSeconds: z.number().nonnegative().max(3600).optional(),
      channels: z.array(channel).default([]),
    })
    .transform(
      (n) => ({
        publicUrl: n.publicUrl ?? null,
        renotifyMinutes: n.renotifyMinutes ?? DEFAULTS.notifications.renotifyMinutes,
        recoveredAfterSeconds: n.recoveredAfterSeconds ?? DEFAULTS.notifications.recoveredAfterSeconds,
        groupWaitSeconds: n.groupWaitSeconds ?? DEFAULTS.notifications.groupWaitSeconds,
        groupIntervalSeconds: n.groupIntervalSeconds ?? DEFAULTS.notifications.groupIntervalSeconds,
        channels: n.channels,
      }),
    );

  const isoTime = z.iso.datetime({ offset: true, message: "must be an ISO 8601 date-time with a zone (2026-12-01T14:00:00Z)" });
  const maintenanceWindow = z
    .strictObject({
      backends: z.array(z.string()).min(1).optional(),
      note: z.string().max(500).optional(),
      start: isoTime.optional(),
      end: isoTime.optional(),
      weekly: z
        .strictObject({
          days: z.array(z.enum(WEEKDAYS)).min(1),
          at: z.string().regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$/, "must be HH:MM (UTC)"),
          minutes: z.number().int().positive().max(7 * 24 * 60),
        })
        .optional(),
    })
    .superRefine((w, ctx) => {
      const once = w.start !== undefined || w.end !== undefined;
      if (once === (w.weekly !== undefined)) ctx.addIssue({ code: "custom", message: "give either start and end, or weekly" });
      else if (once && (w.start === undefined || w.end === undefined)) ctx.addIssue({ code: "custom", message: "give both start and end" });
      else if (once && Date.parse(w.end!) <= Date.parse(w.start!)) ctx.addIssue({ code: "custom", path: ["end"], message: "must be after start" });
    })
    .transform((w) => {
      const base = { backends: w.backends ?? null, note: w.note ?? null };
      if (w.weekly) {
        const [h, m] = w.weekly.at.split(":").map(Number);
        return { ...base, kind: "weekly" as const, days: w.weekly.days.map((d) => WEEKDAYS.indexOf(d)), minuteOfDay: h * 60 + m, minutes: w.weekly.minutes };
      }
      return { ...base, kind: "once" as const, start: Date.parse(w.start!), end: Date.parse(w.end!) };
    });
  const proxy = z.strictObject({
    id,
    url: httpUrl,
    apiKey: secret.optional(),
    /** Ids of the backends this proxy fronts (each one is in `backends`): "1 of 2 healthy" beside its state. */
    backends: z.array(z.string()).optional(),
  });
  const role = z.enum(["operator", "viewer"]).default("operator");
  const operator = z.strictObject({ name: z.string().min(1).max(100), password, role });
  // Only "env:NAME" (the /metrics scrape token and API tokens): a token in a config file that is
  // often world-readable is no secret. At least MIN_TOKEN_CHARS: 32 hex characters are 128 bits, so
  // even unthrottled guessing is hopeless; the Bearer throttle (lib/auth/bearer.ts) is the second
  // wall, not the only one.
  const bearerToken = z
    .string()
    .refine((s) => s.startsWith("env:"), { message: 'must be "env:NAME" (the variable holds the token)' })
    .pipe(secret)
    .refine((s) => s.length >= MIN_TOKEN_CHARS, { message: `the token must be at least ${MIN_TOKEN_CHARS} characters (e.g. openssl rand -hex 16)` });
  const token = z.strictObject({
    name: z.string().min(1).max(100),
    token: bearerToken,
    role,
  });
  const proxyAddress = z.string().superRefine((entry, ctx) => {
    try {
      buildNetPolicy({ trustProxy: [entry], allowedHosts: [] });
    } catch {
      ctx.addIssue({ code: "custom", message: `"${entry}" is not an IP address or CIDR range (e.g. "127.0.0.1", "10.0.0.0/8", "::1")` });
      return;
    }
    // A /0 believes X-Forwarded-* (and the proxy's user header) from the whole internet.
    if (trustRangeBits(entry) === 0)
      ctx.addIssue({ code: "custom", message: "a /0 range trusts every address as a proxy; name the proxy's own addresses" });
  });
  const headerName = z
    .string()
    .regex(/^[A-Za-z0-9-]+$/, "must be a header name (e.g. X-Forwarded-User)")
    .transform((h) => h.toLowerCase());
  const readThreadsError = { error: `must be "auto" or a whole number from 0 to ${MAX_READ_THREADS}` };
  const hostName = z
    .string()
    .regex(/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/, "must be a host name without scheme or port (e.g. stepwatch.example.internal)");
  const server = z
    .strictObject({
      trustProxy: z.array(proxyAddress).default([]),
      allowedHosts: z.array(hostName).default([]),
    })
    .default({ trustProxy: [], allowedHosts: [] });

  return z
    .strictObject({
      pollIntervalSeconds: seconds.default(DEFAULTS.pollIntervalSeconds),
      stuckAfterSeconds: seconds.default(DEFAULTS.stuckAfterSeconds),
      probeTimeoutSeconds: seconds.default(DEFAULTS.probeTimeoutSeconds),
      /**
       * vLLM's latency percentiles (the dashboard's charts) are measured over this window: the
       * filtered read asks the latency histograms (two thirds of its bytes) once per this many
       * seconds, every read the figures a state is judged by; 0 asks them on every read.
       */
      latencyEverySeconds: z.number().nonnegative().default(DEFAULTS.latencyEverySeconds),
      /**
       * Threads that read the backends besides the watcher's own (lib/watcher/read-pool.ts): "auto"
       * runs some only for a fleet one thread cannot read on time (lib/watcher/read-threads.ts), 0 none.
       * Taken at start; a reload that would change it says so and keeps the running ones.
       */
      readThreads: z
        .union([z.literal("auto"), z.number().int(readThreadsError).min(0, readThreadsError).max(MAX_READ_THREADS, readThreadsError)], readThreadsError)
        .default(DEFAULTS.readThreads),
      idleProbeSeconds: seconds.default(DEFAULTS.idleProbeSeconds),
      restartCooldownSeconds: z.number().nonnegative().default(DEFAULTS.restartCooldownSeconds),
      /** A restart waits at most this long for its incident's evidence, then runs with what was captured. */
      evidenceTimeoutSeconds: z.number().nonnegative().max(600).default(DEFAULTS.evidenceTimeoutSeconds),
      /** Every evidence bundle together; the oldest go first past it. */
      evidenceMaxTotalBytes: z.number().int().min(1024 * 1024).default(DEFAULTS.evidenceMaxTotalBytes),
      recoveryTimeoutSeconds: seconds.default(DEFAULTS.recoveryTimeoutSeconds),
      startupGraceSeconds: z.number().nonnegative().default(DEFAULTS.startupGraceSeconds),
      retention: z
        .strictObject({
          rawHours: seconds.default(DEFAULTS.retention.rawHours),
          rollupDays: seconds.default(DEFAULTS.retention.rollupDays),
        })
        .default({ ...DEFAULTS.retention }),
      /** The fleet's crash-loop rule (a backend's own `crashLoop` overrides it field by field). */
      crashLoop: crashLoop
        .default({})
        .transform((c) => ({ restarts: c.restarts ?? DEFAULTS.crashLoop.restarts, windowMinutes: c.windowMinutes ?? DEFAULTS.crashLoop.windowMinutes })),
      /** What a replay can go back over (lib/check/replay.ts): whole days, 0 keeps no record. */
      history: z
        .strictObject({
          replayDays: z.number().int().min(0).max(MAX_REPLAY_DAYS).default(DEFAULTS.history.replayDays),
        })
        .default({ ...DEFAULTS.history }),
      /** The audit log (sign-ins, restarts, reloads) keeps this many days; older lines are deleted. */
      audit: z
        .strictObject({ retentionDays: seconds.default(DEFAULTS.auditRetentionDays) })
        .default({ retentionDays: DEFAULTS.auditRetentionDays }),
      /**
       * PostgreSQL for two or more replicas (docs/decisions.md "Replicas"); STEPWATCH_DATABASE_URL wins
       * over it. `url` carries no password (it would sit in the file and the Configuration page):
       * `password` is "env:NAME". Read at start only: a change needs a restart.
       */
      database: z
        .strictObject({
          url: z
            .string()
            .refine((u) => /^postgres(ql)?:\/\//.test(u), { message: "must start with postgres://" })
            .refine((u) => {
              try {
                return new URL(u).password === "";
              } catch {
                return false;
              }
            }, { message: 'must be a URL without a password: give the password as database.password "env:NAME"' }),
          password: z
            .string()
            .refine((p) => p.startsWith("env:"), { message: 'must be "env:NAME" (the variable holds the password)' })
            .pipe(secret)
            .optional(),
        })
        .optional(),
      backends: z.array(backend).default([]),
      proxies: z.array(proxy).default([]),
      operators: z.array(operator).default([]),
      /** GET /metrics: public (bearerToken null) or requiring `Authorization: Bearer <bearerToken>`. */
      metrics: z
        .strictObject({ bearerToken: bearerToken.optional() })
        .default({})
        .transform((m) => ({ bearerToken: m.bearerToken ?? null })),
      notifications: notifications.prefault({}),
      maintenance: z.array(maintenanceWindow).default([]),
      tokens: z.array(token).default([]),
      /** "public": anyone who reaches the port reads (the default); "signed-in": reading needs a viewer or operator. */
      access: z.strictObject({ read: z.enum(["public", "signed-in"]).default("public") }).default({ read: "public" }),
      /** Trusted reverse-proxy sign-in: the header (from server.trustProxy only) naming the signed-in user. */
      auth: z
        .strictObject({
          proxyHeader: headerName.optional(),
          /**
           * Proof a request came through the proxy: the proxy adds `secretHeader: <secret>`; without it
           * (or with another value) proxyHeader is not believed (a process on the proxy's host can
           * reach the port directly). Kubernetes' front-proxy does the same with a client certificate.
           */
          proxy: z.strictObject({ secretHeader: headerName, secret: bearerToken }).optional(),
        })
        .default({}),
      /**
       * The URL operators open stepwatch at (behind a proxy): its host passes the Host check, and it is
       * the base of messages' links. `notifications.publicUrl` is the same setting (issue 12's spelling);
       * give either, or both alike.
       */
      publicUrl: httpUrl.optional(),
      /** Who may speak for clients (trustProxy) and under which names stepwatch is served (allowedHosts). */
      server,
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
      const unknownBackends = (list: string[] | null, at: (string | number)[]) =>
        list?.forEach((b, j) => {
          if (!backendIds.has(b)) ctx.addIssue({ code: "custom", path: [...at, j], message: `no backend "${b}" in backends` });
        });
      const channelIds = new Set<string>();
      c.notifications.channels.forEach((ch, i) => {
        if (channelIds.has(ch.id)) ctx.addIssue({ code: "custom", path: ["notifications", "channels", i, "id"], message: `"${ch.id}" appears twice` });
        channelIds.add(ch.id);
        unknownBackends(ch.backends, ["notifications", "channels", i, "backends"]);
      });
      c.maintenance.forEach((w, i) => unknownBackends(w.backends, ["maintenance", i, "backends"]));
      c.tokens.forEach((t, i) => {
        if (names.has(t.name)) ctx.addIssue({ code: "custom", path: ["tokens", i, "name"], message: `"${t.name}" is already an operator's or another token's name` });
        names.add(t.name);
      });
      if (c.auth.proxyHeader && c.server.trustProxy.length === 0)
        ctx.addIssue({ code: "custom", path: ["auth", "proxyHeader"], message: "needs server.trustProxy: the header is believed only from those addresses" });
      if (c.auth.proxy && !c.auth.proxyHeader)
        ctx.addIssue({ code: "custom", path: ["auth", "proxy"], message: "proves the requests of auth.proxyHeader: give that too" });
      const top = c.publicUrl, inNotifications = c.notifications.publicUrl;
      if (top !== undefined && inNotifications !== null && top !== inNotifications)
        ctx.addIssue({ code: "custom", path: ["notifications", "publicUrl"], message: `differs from publicUrl ("${top}"): give one, or both alike` });
    });
}

/** Weekday names of maintenance.weekly.days, in Date.getUTCDay() order. */
export const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;

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
  // /metrics is outside the read gate (a scraper has no session): it has its own token (SECURITY.md).
  if (r.data.access.read === "signed-in" && r.data.metrics.bearerToken === null) {
    warnings.push('access.read is "signed-in" but metrics.bearerToken is unset: GET /metrics (backend ids, states, load) is readable by anyone who reaches the port');
  }
  // A user header believed on the word of loopback (every local process) or a wide range, with no
  // proof the request passed the proxy: accepted (a single-user host may want it), said at start and reload.
  if (r.data.auth.proxyHeader && !r.data.auth.proxy) {
    const loose = r.data.server.trustProxy.filter(isLooseTrust);
    if (loose.length)
      warnings.push(
        `auth.proxyHeader is believed from server.trustProxy ${loose.join(", ")} without auth.proxy.secretHeader: any process there can name itself an operator; have the proxy add a secret header`,
      );
  }
  // One setting under two names (issue 16's publicUrl, issue 12's notifications.publicUrl): each falls back on the other.
  const url = r.data.publicUrl ?? r.data.notifications.publicUrl ?? undefined;
  const notifications = { ...r.data.notifications, publicUrl: url ?? null };
  return { source, ...r.data, ...(url ? { publicUrl: url } : {}), notifications, secretEnvNames: [...secretEnvNames].sort(), warnings, raw: json };
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

/** The crash-loop rule of one backend: its own fields over the fleet's. */
export function crashLoopRuleOf(c: Pick<Config, "crashLoop">, b: Pick<BackendConfig, "crashLoop">): CrashLoopRule {
  return { restarts: b.crashLoop?.restarts ?? c.crashLoop.restarts, windowMinutes: b.crashLoop?.windowMinutes ?? c.crashLoop.windowMinutes };
}

export type EvidenceConfig = NonNullable<BackendConfig["evidence"]>;
export type EvidenceCommandConfig = EvidenceConfig["commands"][number];

/** A backend's evidence settings; one without `evidence` still gets its bundles (bodies, timeline, status routes), with the defaults. */
export function evidenceOf(b: Pick<BackendConfig, "evidence">): EvidenceConfig {
  return b.evidence ?? { commands: [], maxBytes: DEFAULTS.evidence.maxBytes, retentionDays: DEFAULTS.evidence.retentionDays };
}

/** The backend with this id in the config in force; a not-found DomainError (404) otherwise. The one not-found check of every verb and route that takes a backend id. */
export function backendOrThrow(backends: readonly BackendConfig[], id: string): BackendConfig {
  const b = backends.find((x) => x.id === id);
  if (!b) throw new DomainError("not-found", `no backend "${id}" in the config`);
  return b;
}
