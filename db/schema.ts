import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex, customType } from "drizzle-orm/sqlite-core";
import { BACKEND_STATES, PROXY_STATES } from "../lib/core/states";
import { CHANNEL_TYPES, DELIVERY_STATUSES, NOTIFICATION_EVENTS } from "../lib/core/events";
import { normaliseReasons, type Reason } from "../lib/core/types";
import { EVIDENCE_TRIGGERS, type EvidenceBundle } from "../lib/core/evidence";

/**
 * A sample's reading: encodeRecord's text (lib/core/replay.ts), written as given, since the watcher
 * encodes a reading once for its sample and its replay row; anything else (a Reading) is written as
 * its JSON, as the column always held. Read back as the stored text, which decodeReading turns into
 * a Reading either way (db/queries/readings.ts recentReadings). The SQL type is text, as before: no
 * migration.
 */
const readingText = customType<{ data: unknown; driverData: string }>({
  dataType: () => "text",
  toDriver: (v) => (typeof v === "string" ? v : JSON.stringify(v)),
  fromDriver: (v) => v,
});

/** Every state a transition row can hold: a backend's states and a proxy's. */
const TRANSITION_STATES = [...new Set([...BACKEND_STATES, ...PROXY_STATES])] as [string, ...string[]];

/**
 * A JSON text column whose reasons are read back through normaliseReasons: rows written before
 * reasons had rule ids hold plain strings, and every read of the table (drizzle maps each row)
 * sees `{ rule: "unclassified", text }` for them. The SQL type is text, as before: no migration.
 */
const reasonsJson = customType<{ data: Reason[]; driverData: string }>({
  dataType: () => "text",
  toDriver: (v) => JSON.stringify(v),
  fromDriver: (v) => normaliseReasons(JSON.parse(v)),
});

/** A restart's evidence (JSON text): its reasons read back as reasonsJson's, the readings as stored. */
export interface RestartEvidence {
  reasons: Reason[];
  readings: unknown[];
}
const evidenceJson = customType<{ data: RestartEvidence; driverData: string }>({
  dataType: () => "text",
  toDriver: (v) => JSON.stringify(v),
  fromDriver: (v) => {
    const e = JSON.parse(v) as Partial<RestartEvidence> | null;
    return { reasons: normaliseReasons(e?.reasons), readings: Array.isArray(e?.readings) ? e.readings : [] };
  },
});

/**
 * How a restart ended. `unknown`: its command was started by a leader that stopped leading before
 * the command's result was recorded (a `kill -9`, a lost lease); it may or may not have run to its
 * end, and is never run again automatically (docs/decisions.md "Replicas").
 */
export const RESTART_OUTCOMES = ["recovered", "failed", "timed-out", "unknown"] as const;
export type RestartOutcome = (typeof RESTART_OUTCOMES)[number];

/**
 * The vLLM latency columns (lib/metrics/vllm-latency.ts `LATENCY_FIELDS`), alike in `samples` and
 * `sample_minutes`. A function, not one shared object: each table gets its own column builders.
 */
function latencyColumns() {
  return {
    ttftP50: real("ttft_p50"),
    ttftP95: real("ttft_p95"),
    itlP50: real("itl_p50"),
    itlP95: real("itl_p95"),
    e2eP50: real("e2e_p50"),
    e2eP95: real("e2e_p95"),
    queueP50: real("queue_p50"),
    queueP95: real("queue_p95"),
    preemptionsPerSecond: real("preemptions_per_second"),
    successStopPerSecond: real("success_stop_per_second"),
    successLengthPerSecond: real("success_length_per_second"),
    successAbortPerSecond: real("success_abort_per_second"),
    successErrorPerSecond: real("success_error_per_second"),
    successOtherPerSecond: real("success_other_per_second"),
  };
}

/**
 * One row per reading of a backend. Raw rows are kept for a bounded window (retention.rawHours),
 * then folded into `sample_minutes` and deleted.
 */
export const samples = sqliteTable(
  "samples",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    backendId: text("backend_id").notNull(),
    at: integer("at").notNull(), // ms since epoch
    state: text("state", { enum: BACKEND_STATES }).notNull(),
    outcome: text("outcome").notNull(), // FetchOutcome of GET /metrics
    error: text("error"),
    latencyMs: integer("latency_ms").notNull(),
    running: real("running"),
    waiting: real("waiting"),
    steps: real("steps"),
    promptTokens: real("prompt_tokens"),
    generationTokens: real("generation_tokens"),
    finishedRequests: real("finished_requests"),
    kvCacheUsage: real("kv_cache_usage"),
    processStartTime: real("process_start_time"),
    stepsPerSecond: real("steps_per_second"),
    generationTokensPerSecond: real("generation_tokens_per_second"),
    promptTokensPerSecond: real("prompt_tokens_per_second"),
    /** null: no probe sent with this read; 1 answered; 0 failed. */
    probeOk: integer("probe_ok", { mode: "boolean" }),
    probeLatencyMs: integer("probe_latency_ms"),
    /**
     * vLLM latency p50/p95 (seconds) and rates over the interval since the previous read of the
     * same process, from histogram and counter deltas (lib/metrics/vllm-latency.ts); null when
     * not exposed or across a restart.
     */
    ...latencyColumns(),
    /**
     * The Reading (less its histograms and body) as encodeRecord's text (lib/core/replay.ts), so the
     * classifier can be re-fed after a restart of stepwatch: the same string as its replay row's.
     * Rows written before it was shared hold the Reading's plain JSON, which decodeReading reads too.
     */
    reading: readingText("reading").notNull(),
    /**
     * Already counted in `sample_minutes`: the retention job folds a raw sample a few minutes after
     * it is written (and deletes it after retention.rawHours), so a long-range history reads the
     * rollups plus only the few raw samples not folded yet (`samples_unfolded`).
     */
    folded: integer("folded", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    index("samples_backend_at").on(t.backendId, t.at),
    index("samples_at").on(t.at),
    index("samples_unfolded").on(t.backendId, t.at).where(sql`folded = 0`),
  ],
);

/**
 * The replay record (lib/core/replay.ts): per reading, only what the classifier reads
 * (`replayRecord`: no byte counts, no latency histograms, no model lists) and the state the watcher
 * recorded from it, kept history.replayDays (7 by default) so a week can be judged again with other
 * thresholds (lib/check/replay.ts). A row per reading as the watcher writes it; the retention job
 * folds rows older than a minute into `replay_chunks` (below), so these hold the last minutes. A row of its own rather than `samples` kept longer: a sample
 * carries the figures, 14 latency columns and three indexes for the history view, a week of which
 * is several times this table (bench/RESULTS.md "Replay").
 */
export const replayReadings = sqliteTable(
  "replay_readings",
  {
    // The rowid itself (no AUTOINCREMENT): ids are never shown, and reuse after a delete is harmless.
    id: integer("id").primaryKey(),
    backendId: text("backend_id").notNull(),
    at: integer("at").notNull(), // ms since epoch
    state: text("state", { enum: BACKEND_STATES }).notNull(),
    /** The recorded verdict recommended a restart (a down inside startupGraceSeconds did not). */
    recommended: integer("recommended", { mode: "boolean" }).notNull(),
    /** encodeRecord(reading) (lib/core/replay.ts), the sample's text: read back as its replayRecord, `at` in its column. */
    reading: text("reading").notNull(),
  },
  // By time too: the retention pass for backends no longer configured deletes by age alone.
  (t) => [index("replay_readings_backend_at").on(t.backendId, t.at), index("replay_readings_at").on(t.at)],
);

/**
 * The replay record, folded: consecutive records of one backend in one row (encodeChunk,
 * lib/core/replay.ts: each record as what changed since the one before; deflated, base64 so both
 * engines store it as text). The watcher writes `replay_readings` rows as it reads (durable each
 * flush); the retention job folds those older than a minute into chunks here, and a replay reads
 * both (db/queries/replay.ts). A chunk is deleted once its newest record is past history.replayDays.
 */
export const replayChunks = sqliteTable(
  "replay_chunks",
  {
    id: integer("id").primaryKey(),
    backendId: text("backend_id").notNull(),
    /** The first and the last record's `at` (ms since epoch), and how many records the chunk holds. */
    firstAt: integer("first_at").notNull(),
    lastAt: integer("last_at").notNull(),
    n: integer("n").notNull(),
    /** base64(deflateRaw(encodeChunk(rows))). */
    data: text("data").notNull(),
  },
  (t) => [index("replay_chunks_backend_last").on(t.backendId, t.lastAt), index("replay_chunks_last").on(t.lastAt)],
);

/** What a rollup row holds, alike in `sample_minutes` and `sample_rollups`: the readings' count, means and maxima, the worst state. */
function rollupColumns() {
  return {
    n: integer("n").notNull(),
    runningAvg: real("running_avg"),
    runningMax: real("running_max"),
    waitingAvg: real("waiting_avg"),
    waitingMax: real("waiting_max"),
    stepsPerSecond: real("steps_per_second"),
    generationTokensPerSecond: real("generation_tokens_per_second"),
    promptTokensPerSecond: real("prompt_tokens_per_second"),
    kvCacheUsage: real("kv_cache_usage"),
    /** Means over the window's readings (a mean of percentiles: a guide, not an exact percentile). */
    ...latencyColumns(),
    /** The least healthy state seen in the window. */
    worstState: text("worst_state", { enum: BACKEND_STATES }).notNull(),
  };
}

/** Per-minute rollups of samples, kept for retention.rollupDays. */
export const sampleMinutes = sqliteTable(
  "sample_minutes",
  {
    backendId: text("backend_id").notNull(),
    minute: integer("minute").notNull(), // ms since epoch, floored to the minute
    ...rollupColumns(),
  },
  (t) => [primaryKey({ columns: [t.backendId, t.minute] }), index("sample_minutes_minute").on(t.minute)],
);

/**
 * Coarser windows of `sample_minutes` (db/queries/history.ts ROLLUP_WIDTHS_MS: 10 minutes and an hour),
 * each recomputed from its minutes whenever the retention job folds readings into one of them, so a
 * window always sums exactly its minutes. A week's history reads ~1,000 of these rows as they are,
 * instead of grouping ~10,000 minutes per request. Kept until the window's end is rollupDays old.
 */
export const sampleRollups = sqliteTable(
  "sample_rollups",
  {
    backendId: text("backend_id").notNull(),
    widthMs: integer("width_ms").notNull(),
    start: integer("start").notNull(), // ms since epoch, a multiple of widthMs
    ...rollupColumns(),
  },
  (t) => [primaryKey({ columns: [t.backendId, t.widthMs, t.start] }), index("sample_rollups_start").on(t.widthMs, t.start)],
);

/** State changes of backends and proxies, with the reasons. Kept forever. */
export const transitions = sqliteTable(
  "transitions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    kind: text("kind", { enum: ["backend", "proxy"] }).notNull(),
    targetId: text("target_id").notNull(),
    at: integer("at").notNull(),
    fromState: text("from_state", { enum: TRANSITION_STATES }),
    toState: text("to_state", { enum: TRANSITION_STATES }).notNull(),
    reasons: reasonsJson("reasons").notNull(),
  },
  (t) => [index("transitions_target_at").on(t.kind, t.targetId, t.at)],
);

/**
 * Every new process the watcher saw (a new process_start_time, a new llama.cpp start token, or
 * counters that went down), and whether stepwatch caused it (a restart of its own was pending).
 * The ones it did not cause are the restarts by others: the crash-loop rule counts them and the
 * availability report lists them. One row per restart: kept forever, like transitions.
 */
export const processStarts = sqliteTable(
  "process_starts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    backendId: text("backend_id").notNull(),
    /** ms: the read that first saw the new process. */
    at: integer("at").notNull(),
    /** The process's own start time (process_start_time_seconds), when it exposes one. */
    processStartTime: real("process_start_time"),
    /** A restart asked for from stepwatch was pending: the event that caused it. */
    restartId: integer("restart_id"),
    byStepwatch: integer("by_stepwatch", { mode: "boolean" }).notNull(),
  },
  (t) => [index("process_starts_backend_at").on(t.backendId, t.at)],
);

/**
 * Restarts asked for by operators. Kept forever. `outcome` is null while the restart is pending;
 * the partial unique index makes "one pending restart per backend" a database fact, so two
 * concurrent confirms cannot both insert (see lib/restart).
 */
export const restartEvents = sqliteTable(
  "restart_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    backendId: text("backend_id").notNull(),
    requestedAt: integer("requested_at").notNull(),
    requestedBy: text("requested_by").notNull(),
    note: text("note"),
    stateAtRequest: text("state_at_request", { enum: BACKEND_STATES }).notNull(),
    healthyAtRequest: integer("healthy_at_request", { mode: "boolean" }).notNull(),
    runningAtRequest: real("running_at_request"),
    waitingAtRequest: real("waiting_at_request"),
    processStartTimeAtRequest: real("process_start_time_at_request"),
    /** Reasons and the readings the verdict was decided from, as JSON. */
    evidence: evidenceJson("evidence").notNull(),
    overrideCooldown: integer("override_cooldown", { mode: "boolean" }).notNull().default(false),
    confirmedHealthy: integer("confirmed_healthy", { mode: "boolean" }).notNull().default(false),
    action: text("action").notNull(), // "command: argv0 ..." or "webhook: POST url" (no secrets)
    commandExitCode: integer("command_exit_code"),
    commandOutput: text("command_output"),
    commandError: text("command_error"),
    commandFinishedAt: integer("command_finished_at"),
    recoveredAt: integer("recovered_at"),
    downtimeSeconds: real("downtime_seconds"),
    outcome: text("outcome", { enum: RESTART_OUTCOMES }),
    resolvedAt: integer("resolved_at"),
    resolution: text("resolution"), // a sentence on how the outcome was decided
    /**
     * When the leader began to run the action, which replica and with which lease epoch: set once,
     * in a fenced transaction just before the command runs (lib/restart/request.ts). A row without
     * it is waiting for the leader; one with it and without commandFinishedAt is running, or was
     * when its leader went (then `unknown`).
     */
    startedAt: integer("started_at"),
    startedBy: text("started_by"),
    startedEpoch: integer("started_epoch"),
  },
  (t) => [
    index("restart_events_backend_requested").on(t.backendId, t.requestedAt),
    uniqueIndex("restart_events_one_pending").on(t.backendId).where(sql`outcome IS NULL`),
  ],
);

/**
 * Operator sessions, server-side: the cookie holds a random token, this table its SHA-256 (a
 * copied database row cannot be replayed as a cookie). Signing out, a changed password (the
 * credential fingerprint no longer matches) or the operator's removal from the config end a
 * session; it never outlives expiresAt, set once at sign-in.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(), // hex SHA-256 of the token
    operator: text("operator").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
    address: text("address"),
    userAgent: text("user_agent"),
    /** HMAC of the operator's password spec at sign-in: a changed password ends the session. */
    credential: text("credential").notNull(),
  },
  (t) => [index("sessions_operator").on(t.operator), index("sessions_expires").on(t.expiresAt)],
);

/**
 * Who did what: sign-ins (ok and failed, with the name tried and the client address), sign-outs,
 * restarts, config reloads, acknowledgements, maintenance. Kept forever; written through
 * recordAudit (db/queries/auth.ts), read by operators only.
 */
export const auditLog = sqliteTable(
  "audit_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    at: integer("at").notNull(),
    /** The operator, token or proxy user; for a failed sign-in the name that was tried; null for the system. */
    actor: text("actor"),
    actorKind: text("actor_kind", { enum: ["operator", "token", "proxy", "anonymous", "system"] }).notNull(),
    action: text("action").notNull(),
    target: text("target"),
    address: text("address"),
    detail: text("detail"),
  },
  (t) => [index("audit_log_at").on(t.at)],
);

export type SampleRow = typeof samples.$inferSelect;
export type SampleMinuteRow = typeof sampleMinutes.$inferSelect;
export type TransitionRow = typeof transitions.$inferSelect;
export type RestartEventRow = typeof restartEvents.$inferSelect;
export type ProcessStartRow = typeof processStarts.$inferSelect;
export type SessionRow = typeof sessions.$inferSelect;
export type AuditRow = typeof auditLog.$inferSelect;

// ---- the on-call loop (lib/notify, lib/oncall) ----

/**
 * One row per notification: what happened, written in the same transaction as the transition or
 * restart event that caused it. `uid` is the id receivers see, the same on every retry.
 */
export const notifications = sqliteTable(
  "notifications",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    uid: text("uid").notNull().unique(),
    event: text("event", { enum: NOTIFICATION_EVENTS }).notNull(),
    backendId: text("backend_id").notNull(),
    state: text("state", { enum: BACKEND_STATES }).notNull(),
    previousState: text("previous_state", { enum: BACKEND_STATES }),
    reasons: reasonsJson("reasons").notNull(),
    at: integer("at").notNull(),
    link: text("link"),
    /** Event-specific facts: who/note (restart-requested), outcome/downtime, scheduledAt, reminder. */
    details: text("details", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    /** The backend's labels (config `backends[].labels`) when it was written: the message carries them. */
    labels: text("labels", { mode: "json" }).$type<Record<string, string>>().notNull().default({}),
  },
  (t) => [index("notifications_backend_at").on(t.backendId, t.at), index("notifications_at").on(t.at)],
);

/**
 * The outbox: one row per notification and channel, delivered in the background and retried.
 * Deliveries of one channel are grouped into one message at send time (lib/notify/outbox.ts): a
 * row waits (pending, `next_attempt_at` = its group window's end) with `message_uid` null, and gets
 * the grouped message's id when it is first sent; from then on its group is retried as one, with
 * that id, and every attempt is recorded on each member row.
 */
export const notificationDeliveries = sqliteTable(
  "notification_deliveries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    notificationId: integer("notification_id").notNull(),
    channelId: text("channel_id").notNull(),
    channelType: text("channel_type", { enum: CHANNEL_TYPES }).notNull(),
    status: text("status", { enum: DELIVERY_STATUSES }).notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    lastError: text("last_error"),
    deliveredAt: integer("delivered_at"),
    createdAt: integer("created_at").notNull(),
    /** The id of the message that carries it (X-Stepwatch-Notification-Id); null until first sent. */
    messageUid: text("message_uid"),
  },
  (t) => [
    index("notification_deliveries_due").on(t.status, t.nextAttemptAt),
    uniqueIndex("notification_deliveries_one").on(t.notificationId, t.channelId),
    index("notification_deliveries_channel").on(t.channelId, t.createdAt),
    index("notification_deliveries_message").on(t.messageUid),
  ],
);

/** Every delivery attempt and its result (kept with its delivery). */
export const notificationAttempts = sqliteTable(
  "notification_attempts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    deliveryId: integer("delivery_id").notNull(),
    at: integer("at").notNull(),
    ok: integer("ok", { mode: "boolean" }).notNull(),
    statusCode: integer("status_code"),
    error: text("error"),
    durationMs: integer("duration_ms").notNull(),
  },
  (t) => [index("notification_attempts_delivery").on(t.deliveryId, t.at)],
);

/**
 * "Someone is on it": stops reminders and unattended restarts for the current problem. Cleared
 * (cleared_at) once the backend is healthy again. Kept forever: who, when, note.
 */
export const acknowledgements = sqliteTable(
  "acknowledgements",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    backendId: text("backend_id").notNull(),
    at: integer("at").notNull(),
    by: text("by").notNull(),
    note: text("note"),
    stateAtAck: text("state_at_ack", { enum: BACKEND_STATES }).notNull(),
    clearedAt: integer("cleared_at"),
    clearedReason: text("cleared_reason"),
  },
  (t) => [index("acknowledgements_backend_at").on(t.backendId, t.at)],
);

/** Maintenance started from the API (config windows live in the config). Kept forever. */
export const maintenancePeriods = sqliteTable(
  "maintenance_periods",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    backendId: text("backend_id").notNull(),
    startsAt: integer("starts_at").notNull(),
    endsAt: integer("ends_at").notNull(),
    by: text("by").notNull(),
    note: text("note"),
    endedAt: integer("ended_at"),
    endedBy: text("ended_by"),
  },
  (t) => [index("maintenance_periods_backend_ends").on(t.backendId, t.endsAt)],
);

export type NotificationRow = typeof notifications.$inferSelect;
export type NotificationDeliveryRow = typeof notificationDeliveries.$inferSelect;
export type NotificationAttemptRow = typeof notificationAttempts.$inferSelect;
export type AcknowledgementRow = typeof acknowledgements.$inferSelect;
export type MaintenancePeriodRow = typeof maintenancePeriods.$inferSelect;

/**
 * Evidence bundles (issue 32): one per incident, captured when a backend becomes stuck or goes
 * down past its grace, and before any restart when the incident has none yet. The bundle is one
 * JSON text (lib/core/evidence.ts EvidenceBundle), written when the capture starts and again when
 * it ends; `sizeBytes` is its length, summed for the total cap. `expiresAt` is startedAt plus the
 * backend's evidence.retentionDays when it was captured.
 */
export const evidenceBundles = sqliteTable(
  "evidence_bundles",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    backendId: text("backend_id").notNull(),
    trigger: text("trigger", { enum: EVIDENCE_TRIGGERS }).notNull(),
    startedAt: integer("started_at").notNull(),
    finishedAt: integer("finished_at"),
    expiresAt: integer("expires_at").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    bundle: text("bundle", { mode: "json" }).$type<EvidenceBundle>().notNull(),
  },
  (t) => [index("evidence_bundles_backend_started").on(t.backendId, t.startedAt), index("evidence_bundles_started").on(t.startedAt)],
);

/**
 * Which bundle a restart event links (`evidenceId` of GET /api/restarts). A table of its own, so
 * restart_events keeps its shape; a bundle deleted by retention takes its links with it.
 */
export const restartEvidence = sqliteTable("restart_evidence", {
  restartEventId: integer("restart_event_id").primaryKey(),
  evidenceId: integer("evidence_id")
    .notNull()
    .references(() => evidenceBundles.id, { onDelete: "cascade" }),
});

export type EvidenceBundleRow = typeof evidenceBundles.$inferSelect;
