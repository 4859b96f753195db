/**
 * An evidence bundle: what stepwatch keeps of an incident for the post-mortem, captured once per
 * incident before anything restarts the server (the only remedy for a hung engine destroys the
 * state that explains it). The words shared by the capture (lib/restart/evidence.ts), the storage
 * (db/), the API and the page. Pure; safe for client code.
 */
import type { Reason } from "./types";

/** What started a capture: the backend became stuck, went down past its grace, or a restart was asked first. */
export const EVIDENCE_TRIGGERS = ["stuck", "down", "restart"] as const;
export type EvidenceTrigger = (typeof EVIDENCE_TRIGGERS)[number];

/** One raw /metrics body the verdict rests on, as read (cut at MAX_RAW_BODY_CHARS). */
export interface EvidenceMetricsBody {
  at: number;
  /** The state the watcher judged from this reading. */
  state: string | null;
  /** The body was longer than MAX_RAW_BODY_CHARS (or the bundle's share of maxBytes) and is cut. */
  cut: boolean;
  body: string;
}

/** One GET of the engine's own status routes (the ones its adapter reads; nothing that generates). */
export interface EvidenceStatusRoute {
  path: string;
  outcome: string;
  status: number | null;
  latencyMs: number;
  body: string;
}

/** One operator-configured evidence command, as it ran. */
export interface EvidenceCommandRun {
  name: string;
  /** The argv as configured (its env is never recorded: it may hold secrets). */
  argv: string[];
  startedAt: number;
  /** null while it still runs (the bundle is read before its capture ended). */
  finishedAt: number | null;
  durationMs: number | null;
  exitCode: number | null;
  /** Why it did not succeed: "timed out after 2 s; process group killed", "cannot run ...: ENOENT", "exited with status 3". */
  error: string | null;
  timedOut: boolean;
  /** stdout and stderr as they came, made safe to show (safeText) and cut at the command's cap. */
  output: string;
  /** Bytes the command printed; output holds at most the cap of them. */
  outputBytes: number;
}

export interface EvidenceTransition {
  at: number;
  from: string | null;
  to: string;
  reasons: Reason[];
}

/** The bundle as stored (one JSON text) and answered by GET /api/evidence/{id}. */
export interface EvidenceBundle {
  backendId: string;
  trigger: EvidenceTrigger;
  startedAt: number;
  /** null while the capture still runs. */
  finishedAt: number | null;
  /** The verdict when the capture started. */
  state: string | null;
  reasons: Reason[];
  /** The incident's transitions, oldest first, from the last healthy state on. */
  timeline: EvidenceTransition[];
  metrics: EvidenceMetricsBody[];
  status: EvidenceStatusRoute[];
  commands: EvidenceCommandRun[];
  /** Sentences about what was cut or left out (a cap reached, a route refused). */
  notes: string[];
}

/** Raw /metrics bodies kept per backend in the watcher's memory (the last few reads). */
export const RAW_BODIES_KEPT = 3;
/** One raw body kept is cut here: a real 8-engine vLLM exposition is well under 100 KB. */
export const MAX_RAW_BODY_CHARS = 64 * 1024;
/** One status route's body in a bundle. */
export const MAX_STATUS_BODY_BYTES = 16 * 1024;
/** One command's output in a bundle (and never more than the bundle's maxBytes). */
export const MAX_COMMAND_OUTPUT_BYTES = 256 * 1024;

// Every C0 control but tab and newline, DEL and the C1 controls (ESC starts terminal escape codes,
// CSI 0x9b too): shown as \xNN so a hostile or colourful output can neither drive a terminal that
// prints the .tar.gz nor hide text, and the reader still sees what was sent.
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Text made safe to show and store: control characters (escape codes) written as `\xNN`. Bytes
 * that were not UTF-8 are already U+FFFD (the replacement character) by the time a Buffer became a
 * string. Pure.
 */
export function safeText(s: string): string {
  return s.replace(CONTROL_RE, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Every occurrence of each secret value replaced by a marker that names no value. */
export function redact(s: string, secrets: readonly string[]): string {
  let out = s;
  for (const v of secrets) if (v.length > 0) out = out.split(v).join("[secret redacted]");
  return out;
}
