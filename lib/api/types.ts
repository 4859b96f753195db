/**
 * Shapes of the JSON API (docs/api.md). Shared by route handlers, the browser
 * components and the tests; imports nothing server-side, so client files may import it.
 */
import type { BackendState, ProxyHealth, ProxyState } from "../core/states";
import type { EvidenceBundle, EvidenceTrigger } from "../core/evidence";
import type { Figures, Reason } from "../core/types";
import type { EngineKind } from "../core/engine";
import type { LatencySample } from "../core/latency";
import type { Config } from "../config";
import type { ChannelType, DeliveryStatus } from "../core/events";
import type { ChannelStatus, NotificationDraft } from "../core/events";
import type { HistoryColumns, Transition } from "../core/history";
import type { AvailabilityPeriod, Outage, UptimeWindow } from "../core/outages";
import type { Acknowledgement, Maintenance } from "../core/oncall";
import type { Labels } from "../core/labels";
import type { Advice, ReplayReport } from "../core/replay";
import type { ColumnRows } from "../core/columns";

export interface FleetBackend extends Figures {
  id: string;
  url: string;
  model: string | null;
  /** The engine it runs: configured, or detected from its answers (null until one answered). */
  engine: EngineKind | null;
  /** The models it serves or has loaded (Ollama: /api/ps). */
  models: string[];
  /** Its `labels` from the config (site, GPU type, team), {} when none: the fleet page filters and groups by them. */
  labels: Labels;
  /** A configuration problem that keeps stepwatch from judging it (the probe needs the API key: 401). */
  configProblem: string | null;
  state: BackendState;
  healthy: boolean;
  /** When the current state began (ms since epoch), null before the first verdict. */
  since: number | null;
  processStartTime: number | null;
  lastReadAt: number | null;
  restartRecommended: boolean;
  /** The verdict's evidence: each reason's rule id (`RULES`, docs/states.md) and its words. */
  reasons: Reason[];
  /** Whether a restart action is configured for this backend. */
  restartConfigured: boolean;
  /** The pending restart, if any. */
  pendingRestartId: number | null;
  /** Until when a new restart is refused without an override (ms), null when none. */
  cooldownUntil: number | null;
  /** The open problem (stuck/down notified, not yet recovered), or null. */
  problem: { event: "stuck" | "down"; since: number } | null;
  /** Who acknowledged the current problem, when, and why; null when nobody did. */
  acknowledged: { by: string; at: number; note: string | null } | null;
  /** The maintenance in force: no notification, no restart recommendation, no unattended restart. */
  maintenance: { until: number; by: string | null; note: string | null; source: "api" | "config" } | null;
  /** When the unattended restart will run unless someone acknowledges (ms), or null. */
  unattendedRestartAt: number | null;
  /** Whether restart.unattended is configured for this backend. */
  unattendedConfigured: boolean;
  /**
   * A crash loop going on (lib/core/crash-loop.ts): `restarts` new processes stepwatch did not
   * cause since `since`, at least `threshold` within `windowMinutes`; over at `clearsAt` (ms) if
   * no new one comes. null when none.
   */
  crashLoop: CrashLoopDTO | null;
}

export interface CrashLoopDTO {
  since: number;
  restarts: number;
  lastAt: number;
  clearsAt: number;
  threshold: number;
  windowMinutes: number;
}

/** A channel's recent health as the outbox keeps it; `failing` is shown on the dashboard. */
export type ChannelStatusDTO = ChannelStatus;

export type AcknowledgementDTO = Acknowledgement;

export type MaintenanceDTO = Maintenance;

export interface NotificationAttemptDTO {
  at: number;
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** A notification as written (the outbox's draft), with its id, link and deliveries. */
export interface NotificationDTO extends Required<NotificationDraft> {
  id: string;
  link: string | null;
  /** The backend's labels when it was written (the message carries them). */
  labels: Record<string, string>;
  deliveries: Array<{
    channelId: string;
    channelType: ChannelType;
    /** The message that carried (or carries) it: X-Stepwatch-Notification-Id, shared by a group; null until first sent. */
    messageId: string | null;
    status: DeliveryStatus;
    attempts: number;
    nextAttemptAt: number | null;
    lastError: string | null;
    deliveredAt: number | null;
    recentAttempts: NotificationAttemptDTO[];
  }>;
}

export interface NotificationsResponse {
  channels: ChannelStatusDTO[];
  notifications: NotificationDTO[];
}

/** One sparkline point: [at ms, running, generation tokens/s]. */
export type SparkPoint = [number, number | null, number | null];

/**
 * GET /api/fleet/recent: the sparklines' points, apart from the fleet list, which every dashboard
 * polls every 1.5 s and which should stay small (60 points x 100 backends tripled its size).
 */
export interface FleetRecentResponse {
  generatedAt: number;
  /** Backend id -> its recent points, oldest first. */
  backends: Record<string, SparkPoint[]>;
}

export interface FleetProxy {
  id: string;
  url: string;
  state: ProxyState;
  models: string[];
  lastReadAt: number | null;
  since: number | null;
  error: string | null;
  /** Of the backends the config says this proxy fronts (`proxies[].backends`), how many are healthy now; null when it names none. */
  healthyBackends: number | null;
  totalBackends: number | null;
  /** Of the healthy ones, how many are `sleeping` (counted healthy: parked on purpose, not a fault; docs/check.md). */
  sleepingBackends: number | null;
  /**
   * What the counts above mean for the proxy's colour: "ok" every named backend healthy, "degraded"
   * some, "none" not one (a proxy that answers /v1/models with nothing healthy behind it); null
   * when the config names none. `state` only says whether the proxy itself answers.
   */
  health: ProxyHealth | null;
}


/** A config reload that was refused: the running config is the older one. */
export interface ConfigErrorDTO {
  at: number;
  /** "SIGHUP", "file change", "operator NAME". */
  trigger: string;
  /** One line per problem, each naming its field (`backends[1].url: Invalid URL`). */
  problems: string[];
}

export interface FleetResponse {
  generatedAt: number;
  demo: boolean;
  /** How often the watcher reads each backend (the page itself may ask for the fleet more often). */
  pollIntervalSeconds: number;
  /** A storage problem the operator should know about (disk full, unwritable file), else null. */
  storageError: string | null;
  /** Notification channels and how their recent attempts went. */
  notificationChannels: ChannelStatusDTO[];
  /** The last config reload's problems while an older config keeps running, else null. */
  configError: ConfigErrorDTO | null;
  backends: FleetBackend[];
  proxies: FleetProxy[];
}

/**
 * The fleet page's first answer as the server renders it into the page (app/page.tsx): the same
 * fleet as GET /api/fleet, its backends as columns (lib/core/columns.ts), so React's payload
 * carries each key once and not 500 times. The page turns it back into a FleetResponse.
 */
export interface FleetSeed extends Omit<FleetResponse, "backends"> {
  backends: ColumnRows<FleetBackend>;
}

export interface RestartEventDTO {
  id: number;
  backendId: string;
  requestedAt: number;
  requestedBy: string;
  note: string | null;
  stateAtRequest: BackendState;
  healthyAtRequest: boolean;
  runningAtRequest: number | null;
  waitingAtRequest: number | null;
  evidence: { reasons: Reason[]; readings: unknown[] };
  overrideCooldown: boolean;
  confirmedHealthy: boolean;
  action: string;
  commandExitCode: number | null;
  commandOutput: string | null;
  commandError: string | null;
  commandFinishedAt: number | null;
  recoveredAt: number | null;
  downtimeSeconds: number | null;
  /** When the leader began the action, which replica, with which lease epoch; null while it waits for the leader. */
  startedAt: number | null;
  startedBy: string | null;
  startedEpoch: number | null;
  /** `unknown`: started by a leader that went before its result was recorded; never run again. */
  outcome: "recovered" | "failed" | "timed-out" | "unknown" | null;
  resolvedAt: number | null;
  resolution: string | null;
  /** The incident's evidence bundle captured before the action ran (GET /api/evidence/{id}); null when none. */
  evidenceId: number | null;
}

/** GET /api/evidence/{id}: one evidence bundle (lib/core/evidence.ts), as captured before a restart. */
export interface EvidenceDTO extends EvidenceBundle {
  id: number;
  /** Bytes of the stored bundle. */
  sizeBytes: number;
  /** When retention deletes it (evidence.retentionDays after the capture), unless the total cap does earlier. */
  expiresAt: number;
}

/** One bundle in a backend's list (GET /api/evidence?backend=): without its contents. */
export interface EvidenceSummaryDTO {
  id: number;
  backendId: string;
  trigger: EvidenceTrigger;
  startedAt: number;
  finishedAt: number | null;
  sizeBytes: number;
}

/** What a restart of one backend would do, for the dialog (GET /api/backends/{id}/restart-plan). */
export interface RestartPlanDTO {
  backendId: string;
  /** "command: systemctl restart vllm" or "webhook: POST https://host/path": no env, no headers, no credentials in URLs. */
  action: string | null;
  /** The cooldown that starts with this restart. */
  cooldownSeconds: number;
  /** The downtime of this backend's last restart that recovered: what to expect this time. */
  expectedOutageSeconds: number | null;
  lastRestartAt: number | null;
}

/** A transition as the API answers it: the stored row, as is. */
export type TransitionDTO = Transition;

export interface HistoryResponse {
  backendId: string;
  from: number;
  to: number;
  /** "raw" readings (up to 6 h), or rollup windows (a minute, 10 minutes, an hour) for longer ranges. */
  resolution: "raw" | "rollup";
  /** A rollup point's width in seconds (60, 600, 3600 or whole hours past 62 days); null for raw readings. */
  bucketSeconds: number | null;
  /** How many points (the length of every column). */
  count: number;
  columns: HistoryColumns;
  transitions: TransitionDTO[];
  restarts: RestartEventDTO[];
}

/** A secret as the Configuration page shows it: `env:NAME` as written, anything else `***`. */
export type SecretShown = string;

export type RestartActionView =
  | { kind: "command"; command: string[]; timeoutSeconds: number }
  | { kind: "webhook"; url: string; method: string; headers: Record<string, SecretShown>; timeoutSeconds: number };

/** GET /api/config: what is loaded, secrets as `***` (or `env:NAME`). */
export interface ConfigView {
  /** The config file, null for the embedded demo fleet. */
  path: string | null;
  demo: boolean;
  loadedAt: number;
  loadedBy: string;
  lastChange: { at: number; trigger: string; added: string[]; removed: string[]; changed: string[] } | null;
  configError: ConfigErrorDTO | null;
  settings: Pick<
    Config,
    | "pollIntervalSeconds"
    | "stuckAfterSeconds"
    | "probeTimeoutSeconds"
    | "idleProbeSeconds"
    | "restartCooldownSeconds"
    | "recoveryTimeoutSeconds"
    | "startupGraceSeconds"
    | "latencyEverySeconds"
    | "readThreads"
    | "retention"
    | "history"
  > & {
    /** Read threads running now (taken at start: a reload that asks for another number keeps these). */
    readThreadsRunning: number;
    /** GET /metrics' bearer token (`env:NAME` or `***`), null when /metrics is public. */
    metricsBearerToken: SecretShown | null;
  };
  backends: Array<{
    id: string;
    url: string;
    model: string | null;
    /** As configured: "auto" (detected) or an engine. */
    engine: string;
    /** As configured: "auto" or the probe kind. */
    probe: string;
    apiKey: SecretShown | null;
    restart: RestartActionView | null;
    /** The backend's labels as configured ({} for none): not secret, shown and edited as they are. */
    labels: Labels;
  }>;
  proxies: Array<{ id: string; url: string; apiKey: SecretShown | null; backends: string[] }>;
  operators: Array<{ name: string; password: SecretShown }>;
}

/** POST /api/config/reload. */
export interface ReloadResponse {
  ok: boolean;
  added: string[];
  removed: string[];
  changed: string[];
  problems: string[];
}

/** Uptime of one backend over the last 24 h, 7 d and 30 d (percent, null where nothing was watched). */
export interface UptimeDTO {
  backendId: string;
  uptime: Record<UptimeWindow, number | null>;
}


/** GET /api/outages?backend=&from=&to= */
export interface OutagesResponse {
  from: number;
  to: number;
  /** Newest first. */
  outages: Outage[];
  uptime: UptimeDTO[];
}

/** One backend over one period of GET /api/availability: where the time went, restarts, recovery. */
export interface AvailabilityRow {
  backendId: string;
  /** ms: the period, clipped to the asked range (and to now). */
  start: number;
  end: number;
  /** end - start, in seconds: the states and maintenanceSeconds add up to it. */
  seconds: number;
  /** Seconds in each state outside maintenance; `unknown` includes the time before stepwatch first saw it. */
  states: Record<BackendState, number>;
  /** Seconds inside maintenance (the API's periods and the config's windows), whatever the state. */
  maintenanceSeconds: number;
  /** Seconds in healthy states (idle, busy, sleeping) over seconds outside maintenance, 0..100; null when all of it was maintenance. */
  availablePercent: number | null;
  /** Restarts asked for from stepwatch (operators and unattended) in the period. */
  restartsByStepwatch: number;
  /** New processes stepwatch did not cause (a supervisor, a crash, someone on the host). */
  restartsByOthers: number;
  /** Outages (lib/outages.ts) that ended in the period, and the mean of their durations (null: none). */
  recoveries: number;
  meanTimeToRecoverSeconds: number | null;
}

/** GET /api/availability?backend=&from=&to=&period= */
export interface AvailabilityResponse {
  from: number;
  to: number;
  period: AvailabilityPeriod;
  /** By backend (the config's order), then by period, oldest first. */
  rows: AvailabilityRow[];
}

/**
 * Who is looking at a page, as the server pages hand it to client components (never a token or a
 * session id): the name shown in the top bar and the role that decides which buttons exist.
 */
export interface Viewer {
  name: string;
  role: "operator" | "viewer";
}

/** GET /api/backends/{id}/replay: the record judged again with candidate thresholds (lib/check/replay.ts). */
export type ReplayResponse = ReplayReport;
/** GET /api/backends/{id}/advice: settings advised from the record, never applied. */
export type AdviceResponse = Advice;
