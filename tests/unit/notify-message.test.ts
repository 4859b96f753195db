import { describe, expect, it } from "vitest";
import { reason } from "@/lib/core/types";
import { clockWithZone, emailContent, headline, ntfyPriority, ntfyRequest, slackBody, type MessagePayload, type NotificationPayload } from "@/lib/notify/message";

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
  evidenceLink: null,
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

  it("a problem's and a restart's message point at the backend's evidence bundles; a recovery's does not", async () => {
    const { messageOf } = await import("@/lib/notify/message");
    const row = (event: string) => ({ id: 1, uid: "n-1", event, backendId: "gb10-a", state: "stuck", previousState: "stalled", reasons: [], at: 0, link: "https://sw.example.org/backends/gb10-a", details: {}, labels: {} }) as never;
    for (const event of ["stuck", "down", "restart-requested", "restart-finished"]) {
      const m = messageOf("m-1", null, [row(event)], "https://sw.example.org");
      expect(m.evidenceLink, event).toBe("https://sw.example.org/backends/gb10-a#evidence");
      expect(emailContent(m).text, event).toContain("evidence: https://sw.example.org/backends/gb10-a#evidence");
    }
    expect(messageOf("m-2", null, [row("recovered")], "https://sw.example.org").evidenceLink).toBeNull();
  });

  it("a group: the count and the first names in the headline, every one in the body, within Slack's and ntfy's limits", () => {
    const group = (members: NotificationPayload[], g: MessagePayload["group"] = "problem"): MessagePayload => ({
      ...members[0],
      id: "g-1",
      group: g,
      count: members.length,
      notifications: members,
      fleetLink: "https://sw.example.org/",
    });
    const member = (i: number, over: Partial<NotificationPayload> = {}) =>
      p({
        id: `n-${i}`,
        backendId: `b${String(i).padStart(3, "0")}`,
        link: `https://sw.example.org/backends/b${String(i).padStart(3, "0")}`,
        acknowledgeLink: `https://sw.example.org/backends/b${String(i).padStart(3, "0")}#acknowledge`,
        labels: { site: "ams" },
        ...over,
      });
    const mixed = group([member(1), member(2, { event: "down", state: "down" }), member(3)]);
    expect(headline(mixed)).toBe("3 backends stuck or down (1 down, 2 stuck): b001, b002, b003");
    expect(emailContent(mixed).subject).toBe("[stepwatch] 3 backends stuck or down (1 down, 2 stuck): b001, b002, b003 [stuck, down]");
    expect(emailContent(mixed).text).toContain("- b002: stalled -> down; 2 running, 0 new steps in 134 s [site=ams]\n  https://sw.example.org/backends/b002  acknowledge: https://sw.example.org/backends/b002#acknowledge");
    expect(headline(group([member(1, { details: { reminder: true } }), member(2, { details: { reminder: true } })], "reminder"))).toBe(
      "2 backends stuck: b001, b002 (reminder: not acknowledged)",
    );

    const hundred = group(Array.from({ length: 100 }, (_, i) => member(i + 1, { event: "down", state: "down" })));
    expect(headline(hundred)).toBe("100 backends down: b001, b002, b003, b004, b005 and 95 more");
    const push = ntfyRequest(hundred);
    expect(Buffer.byteLength(push.body)).toBeLessThanOrEqual(4096);
    expect(push.body).toMatch(/\n\.\.\. and \d+ more: https:\/\/sw\.example\.org\/$/);
    expect(push.headers).toMatchObject({ priority: "5", click: "https://sw.example.org/", "x-stepwatch-notification-id": "g-1" });
    const slack = slackBody(hundred);
    const sections = slack.blocks.filter((b) => (b as { type: string }).type === "section") as Array<{ text: { text: string } }>;
    expect(sections.length).toBeGreaterThan(1);
    expect(sections.every((b) => b.text.text.length <= 3000)).toBe(true);
    for (let i = 1; i <= 100; i++) expect(sections.map((b) => b.text.text).join("\n")).toContain(`|b${String(i).padStart(3, "0")}>`);
  });
});
