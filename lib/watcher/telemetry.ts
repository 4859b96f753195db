/**
 * What the watcher tells about its own health, for the Prometheus export (lib/api/export/metrics.ts).
 * An interface here so the watcher does not import prom-client; the default does nothing, so tests
 * and the bench that start a watcher count nothing anywhere.
 */
import type { RestartOutcome } from "../../db/schema";
import type { FetchOutcome } from "../core/fetch";

export type ReadKind = "backend" | "proxy";

export interface WatcherTelemetry {
  /** How late a poll started after its slot (ms). Not called for a loop's first poll. */
  pollLag(ms: number): void;
  /** One read ended: its latency, how it ended, and whether it was seen late (lib/check/late.ts: kept, not judged). */
  read(kind: ReadKind, latencyMs: number, outcome: FetchOutcome, seenLate?: boolean): void;
  /** A database read or write failed (each failed attempt counts). */
  storageError(): void;
  /** A restart event was resolved by this process (the watcher, or the restart verb's failure). */
  restartResolved(backendId: string, outcome: RestartOutcome): void;
  /** Once per configured notification channel at start (its failure count exists at 0). */
  notificationChannel(channelId: string): void;
  /** One delivery attempt to a notification channel failed (it is retried; lib/notify/outbox.ts). */
  notificationFailed(channelId: string): void;
}

export const NO_TELEMETRY: WatcherTelemetry = {
  pollLag() {},
  read() {},
  storageError() {},
  restartResolved() {},
  notificationChannel() {},
  notificationFailed() {},
};
