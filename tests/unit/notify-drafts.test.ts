/** The one builder of notification drafts (lib/notify/drafts.ts): every event's shape, table-driven. */
import { describe, expect, it } from "vitest";
import type { NotificationDraft } from "@/lib/core/events";
import { reason } from "@/lib/core/types";
import {
  problemDraft,
  recoveredDraft,
  reminderDraft,
  restartFinishedDraft,
  restartRequestedDraft,
  restartScheduledDraft,
  type DraftBase,
} from "@/lib/notify/drafts";

const T0 = Date.parse("2026-12-01T03:00:00Z");
const base: DraftBase = { backendId: "gb10-a", state: "stuck", reasons: [reason("no-progress-stuck", "no progress")], at: T0 };
const restart = { id: 7, requestedBy: "ana", note: "stuck again", overrideCooldown: false, action: "command: systemctl" };

const rows: Array<[string, NotificationDraft, NotificationDraft]> = [
  ["a problem opens", problemDraft(base, "stuck", "stalled"), { ...base, event: "stuck", previousState: "stalled", details: { openSince: "2026-12-01T03:00:00.000Z" } }],
  [
    "a reminder",
    reminderDraft(base, "down", "busy", T0 - 3600_000),
    { ...base, event: "down", previousState: "busy", details: { reminder: true, openSince: "2026-12-01T02:00:00.000Z" } },
  ],
  [
    "recovered",
    recoveredDraft({ ...base, state: "idle" }, "stuck", T0 - 90_400),
    { ...base, state: "idle", event: "recovered", previousState: "stuck", details: { problem: "stuck", openSince: "2026-12-01T02:58:29.600Z", problemSeconds: 90 } },
  ],
  [
    "restart scheduled",
    restartScheduledDraft(base, "stalled", T0 + 300_000, 300),
    { ...base, event: "restart-scheduled", previousState: "stalled", details: { scheduledAt: T0 + 300_000, scheduledAtIso: "2026-12-01T03:05:00.000Z", afterSeconds: 300 } },
  ],
  [
    "restart requested",
    restartRequestedDraft(base, restart),
    { ...base, event: "restart-requested", previousState: null, details: { restartId: 7, requestedBy: "ana", note: "stuck again", overrideCooldown: false, action: "command: systemctl" } },
  ],
  [
    "restart finished",
    restartFinishedDraft({ ...base, state: "idle" }, restart, { outcome: "recovered", resolution: "back", downtimeSeconds: 42 }),
    { ...base, state: "idle", event: "restart-finished", previousState: "restarting", details: { restartId: 7, requestedBy: "ana", outcome: "recovered", downtimeSeconds: 42, resolution: "back" } },
  ],
];

describe("notification drafts", () => {
  it.each(rows)("%s", (_, got, want) => {
    expect(got).toEqual(want);
  });
});
