/**
 * Shapes of the JSON API (docs/api.md). Shared by route handlers, the browser
 * components and the tests; imports nothing server-side, so client files may import it.
 */
import type { BackendState, ProxyState } from "../check/states";
import type { Figures } from "../check/types";
import type { LatencySample } from "../metrics/vllm-latency";

export interface FleetBackend extends Figures {
  id: string;
  url: string;
  model: string | null;
  state: BackendState;
  healthy: boolean;
  /** When the current state began (ms since epoch), null before the first verdict. */
  since: number | null;
  processStartTime: number | null;
  lastReadAt: number | null;
  restartRecommended: boolean;
  reasons: string[];
  /** Whether a restart action is configured for this backend. */
  restartConfigured: boolean;
  /** The pending restart, if any. */
  pendingRestartId: number | null;
  /** Until when a new restart is refused without an override (ms), null when none. */
  cooldownUntil: number | null;
  /** Recent points for the sparkline: [at ms, running, generation tokens/s]. */
  recent: Array<[number, number | null, number | null]>;
}

export interface FleetProxy {
  id: string;
  url: string;
  state: ProxyState;
  models: string[];
  lastReadAt: number | null;
  since: number | null;
  error: string | null;
}

export interface FleetResponse {
  generatedAt: number;
  demo: boolean;
  /** How often the watcher reads each backend (the page itself may ask for the fleet more often). */
  pollIntervalSeconds: number;
  /** A storage problem the operator should know about (disk full, unwritable file), else null. */
  storageError: string | null;
  backends: FleetBackend[];
  proxies: FleetProxy[];
}

/** A point of a backend's history; the vLLM latency figures are absent or null where not exposed. */
export interface HistoryPoint extends Figures, Partial<LatencySample> {
  at: number;
  state: BackendState;
}

export interface TransitionDTO {
  at: number;
  from: string | null;
  to: string;
  reasons: string[];
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
  evidence: { reasons: string[]; readings: unknown[] };
  overrideCooldown: boolean;
  confirmedHealthy: boolean;
  action: string;
  commandExitCode: number | null;
  commandOutput: string | null;
  commandError: string | null;
  commandFinishedAt: number | null;
  recoveredAt: number | null;
  downtimeSeconds: number | null;
  outcome: "recovered" | "failed" | "timed-out" | null;
  resolvedAt: number | null;
  resolution: string | null;
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

export interface HistoryResponse {
  backendId: string;
  from: number;
  to: number;
  /** "raw" readings or "minute" rollups, whichever fits the range. */
  resolution: "raw" | "minute";
  points: HistoryPoint[];
  transitions: TransitionDTO[];
  restarts: RestartEventDTO[];
}
