import { describe, expect, it } from "vitest";
import { reason } from "@/lib/core/types";
import { clockWithZone, emailContent, headline, ntfyPriority, ntfyRequest, slackBody, type NotificationPayload } from "@/lib/notify/message";

const p = (over: Partial<NotificationPayload> = {}): NotificationPayload => ({
  id: "n-1",
  event: "stuck",
  backendId: "gb10-a",
  state: "stuck",
  previousState: "stalled",
  reasons: [reason("no-progress", "2 running, 0 new steps in 134 s")],
  at: "2026-12-01T03:05:00.000Z",
  link: "https://sw.example.org/backends/gb10-a",
  details: {},
  labels: {},
  acknowledgeLink: null,
  ...over,
});

describe("notification messages", () => {
  it("one headline per event, naming the backend", () => {
    const at = Date.parse("2026-12-01T03:15:00Z");
    expect(headline(p())).toBe("gb10-a is stuck");
    expect(headline(p({ details: { reminder: true } }))).toBe("gb10-a is stuck (reminder: not acknowledged)");
    expect(headline(p({ event: "down", state: "down" }))).toBe("gb10-a is down");
    expect(headline(p({ event: "recovered", state: "idle" }))).toBe("gb10-a recovered (idle)");
    expect(headline(p({ event: "restart-requested", details: { requestedBy: "alice" } }))).toBe("alice asked to restart gb10-a");
    expect(headline(p({ event: "restart-finished", details: { outcome: "recovered", downtimeSeconds: 95 } }))).toMatch(/^restart of gb10-a: recovered after .+ down$/);
    expect(headline(p({ event: "restart-finished", details: { outcome: "failed", downtimeSeconds: null } }))).toBe("restart of gb10-a: failed");
    expect(headline(p({ event: "restart-scheduled", details: { scheduledAt: at } }))).toBe(`gb10-a will be restarted at ${clockWithZone(at)} unless someone acknowledges`);
  });

  it("slack escapes mrkdwn; ntfy keeps headers ASCII and wakes someone for stuck/down; email subject has the state", () => {
    expect(slackBody(p({ reasons: [reason("no-progress", "a <b> & c")] })).blocks[0]).toMatchObject({ text: { text: expect.stringContaining("a &lt;b&gt; &amp; c") } });
    expect(ntfyRequest(p({ backendId: "gb10-a", event: "restart-requested", details: { requestedBy: "zoë" } })).headers.title).toBe("zo? asked to restart gb10-a");
    expect([ntfyPriority("stuck"), ntfyPriority("down"), ntfyPriority("restart-scheduled"), ntfyPriority("recovered")]).toEqual([5, 5, 4, 3]);
    expect(ntfyRequest(p(), "tok").headers).toMatchObject({ click: "https://sw.example.org/backends/gb10-a", authorization: "Bearer tok" });
    expect(ntfyRequest(p({ link: null })).headers.click).toBeUndefined();
    expect(emailContent(p()).subject).toBe("[stepwatch] gb10-a is stuck [stuck]");
    expect(emailContent(p()).text).toContain("https://sw.example.org/backends/gb10-a");
  });
});
