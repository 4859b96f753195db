import { describe, expect, it } from "vitest";
import { acknowledgedLine, canAcknowledge, crashLoopLine, failingChannelLine, maintenanceLine, unattendedLine } from "@/lib/ui/oncall";

const at = Date.parse("2026-12-01T14:30:00Z");

describe("on-call lines", () => {
  it("maintenance: until when, who and why (or the config)", () => {
    expect(maintenanceLine({ until: at, by: "alice", note: "driver update", source: "api" })).toBe("maintenance until 14:30 UTC (alice: driver update)");
    expect(maintenanceLine({ until: at, by: "alice", note: null, source: "api" }, "UTC")).toBe("maintenance until 14:30 UTC (alice)");
    expect(maintenanceLine({ until: at, by: null, note: "weekly reboot", source: "config" }, "Asia/Tokyo")).toBe("maintenance until 23:30 GMT+9 (config: weekly reboot)");
  });
  it("acknowledged, unattended, failing channel", () => {
    expect(acknowledgedLine({ by: "bo", at, note: "on it" })).toBe("acknowledged by bo at 14:30 UTC: on it");
    expect(unattendedLine("gb10-a", Date.parse("2026-12-01T03:15:00Z"))).toBe("gb10-a will be restarted at 03:15 UTC unless someone acknowledges");
    const since = Date.parse("2026-12-01T14:02:00Z");
    expect(crashLoopLine({ since, restarts: 4, lastAt: since + 60_000, clearsAt: since + 360_000, threshold: 3, windowMinutes: 5 })).toBe(
      "crash loop: 4 new processes since 14:02 UTC not restarted by stepwatch (3 in 5 min); over at 14:08 UTC if no new one comes",
    );
    expect(
      failingChannelLine({ id: "ops", type: "webhook", consecutiveFailures: 4, lastAttemptAt: at, lastOkAt: null, lastError: "HTTP 503", failing: true }),
    ).toBe("notification channel ops (webhook) keeps failing: 4 attempts in a row, last: HTTP 503. Messages are kept and retried.");
  });
  it("acknowledge only an unhealthy, not yet acknowledged backend", () => {
    expect(canAcknowledge({ healthy: false, acknowledged: null })).toBe(true);
    expect(canAcknowledge({ healthy: true, acknowledged: null })).toBe(false);
    expect(canAcknowledge({ healthy: false, acknowledged: { by: "a", at, note: null } })).toBe(false);
  });
});
