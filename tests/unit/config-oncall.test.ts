import { describe, expect, it } from "vitest";
import { ConfigError, DEFAULTS, parseConfig } from "@/lib/config";

const env = { HOOK: "Bearer h", SMTP_PW: "pw", NTFY: "tk" };
const backends = [
  { id: "gb10-a", url: "http://127.0.0.1:1", restart: { command: ["/bin/true"], unattended: { afterSeconds: 300, maxPerDay: 2 } } },
  { id: "gb10-b", url: "http://127.0.0.1:2" },
];

function problems(json: Record<string, unknown>): string[] {
  try {
    parseConfig({ backends, ...json }, "t.json", { env });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error("expected a ConfigError");
}

describe("config: notifications, maintenance, unattended restart", () => {
  it("defaults: no channel, renotify every hour, no maintenance, unattended off", () => {
    const c = parseConfig({ backends: [{ id: "x", url: "http://127.0.0.1:1", restart: { command: ["/bin/true"] } }] }, "t", { env });
    expect(c.notifications).toEqual({
      publicUrl: null,
      renotifyMinutes: 60,
      recoveredAfterSeconds: DEFAULTS.notifications.recoveredAfterSeconds,
      groupWaitSeconds: 10,
      groupIntervalSeconds: 60,
      channels: [],
    });
    expect(c.maintenance).toEqual([]);
    expect(c.backends[0].unattended).toBeUndefined();
    expect(c.backends[0].restart).toMatchObject({ kind: "command" });
  });

  it("parses every channel type, resolves env: secrets and lists them as secret", () => {
    const c = parseConfig(
      {
        backends,
        notifications: {
          publicUrl: "https://sw.example.org/",
          renotifyMinutes: 30,
          groupWaitSeconds: 0,
          groupIntervalSeconds: 120,
          channels: [
            { id: "hook", type: "webhook", url: "https://hooks.example.org/x", headers: { authorization: "env:HOOK" }, events: ["stuck", "down"] },
            { id: "chat", type: "slack", url: "https://hooks.slack.com/services/T/B/X", backends: ["gb10-a"] },
            { id: "phone", type: "ntfy", url: "https://ntfy.sh/my-topic", token: "env:NTFY" },
            { id: "mail", type: "email", smtp: { host: "smtp.example.org", user: "sw", password: "env:SMTP_PW" }, from: "sw@example.org", to: ["oncall@example.org"] },
          ],
        },
      },
      "t",
      { env },
    );
    expect(c.notifications.publicUrl).toBe("https://sw.example.org");
    expect(c.notifications.renotifyMinutes).toBe(30);
    expect([c.notifications.groupWaitSeconds, c.notifications.groupIntervalSeconds]).toEqual([0, 120]);
    expect(c.notifications.channels).toEqual([
      { id: "hook", type: "webhook", url: "https://hooks.example.org/x", headers: { authorization: "Bearer h" }, events: ["stuck", "down"], backends: null },
      { id: "chat", type: "slack", url: "https://hooks.slack.com/services/T/B/X", events: null, backends: ["gb10-a"] },
      { id: "phone", type: "ntfy", url: "https://ntfy.sh/my-topic", token: "tk", events: null, backends: null },
      {
        id: "mail",
        type: "email",
        smtp: { host: "smtp.example.org", port: 587, secure: false, user: "sw", password: "pw" },
        from: "sw@example.org",
        to: ["oncall@example.org"],
        events: null,
        backends: null,
      },
    ]);
    expect(c.secretEnvNames).toEqual(["HOOK", "NTFY", "SMTP_PW"]);
    expect(c.backends[0].unattended).toEqual({ afterSeconds: 300, maxPerDay: 2 });
  });

  it("names the field of every mistake", () => {
    expect(problems({ notifications: { channels: [{ id: "x", type: "pager", url: "http://a" }] } })).toEqual([
      "notifications.channels[0].type: type must be one of webhook, slack, ntfy, email",
    ]);
    expect(problems({ notifications: { channels: [{ id: "x", type: "webhook", url: "ftp://a" }] } })).toEqual(["notifications.channels[0].url: Invalid URL"]);
    expect(problems({ notifications: { channels: [{ id: "x", type: "webhook", url: "http://a", events: ["stuk"] }] } })[0]).toMatch(/^notifications\.channels\[0\]\.events\[0\]: /);
    expect(problems({ notifications: { channels: [{ id: "x", type: "slack", url: "http://a", backends: ["nope"] }] } })).toEqual([
      'notifications.channels[0].backends[0]: no backend "nope" in backends',
    ]);
    expect(
      problems({ notifications: { channels: [{ id: "x", type: "slack", url: "http://a" }, { id: "x", type: "slack", url: "http://b" }] } }),
    ).toEqual(['notifications.channels[1].id: "x" appears twice']);
    expect(problems({ notifications: { channels: [{ id: "m", type: "email", smtp: { host: "h" }, from: "a@b", to: [] }] } })[0]).toMatch(/^notifications\.channels\[0\]\.to: /);
    expect(problems({ notifications: { channels: [{ id: "h", type: "webhook", url: "http://a", headers: { a: "env:MISSING" } }] } })).toEqual([
      "notifications.channels[0].headers.a: environment variable MISSING is not set",
    ]);
    expect(problems({ notifications: { renotifyMinutes: 0 } })[0]).toMatch(/^notifications\.renotifyMinutes: /);
    expect(problems({ notifications: { groupWaitSeconds: -1 } })[0]).toMatch(/^notifications\.groupWaitSeconds: /);
    expect(problems({ notifications: { groupIntervalSeconds: 7200 } })[0]).toMatch(/^notifications\.groupIntervalSeconds: /);
    expect(problems({ backends: [{ id: "a", url: "http://127.0.0.1:1", restart: { command: ["x"], unattended: { afterSeconds: 60, maxPerDay: 0 } } }] })[0]).toMatch(
      /^backends\[0\]\.restart\.unattended\.maxPerDay: /,
    );
    expect(problems({ maintenance: [{ start: "2026-12-01T14:00:00Z" }] })).toEqual(["maintenance[0]: give both start and end"]);
    expect(problems({ maintenance: [{ start: "2026-12-01T14:00:00Z", end: "2026-12-01T13:00:00Z" }] })).toEqual(["maintenance[0].end: must be after start"]);
    expect(problems({ maintenance: [{ weekly: { days: ["sun"], at: "25:00", minutes: 60 } }] })).toEqual(["maintenance[0].weekly.at: must be HH:MM (UTC)"]);
    expect(problems({ maintenance: [{ start: "tomorrow", end: "2026-12-01T13:00:00Z" }] })[0]).toMatch(/^maintenance\[0\]\.start: must be an ISO 8601/);
    expect(problems({ maintenance: [{ backends: ["ghost"], weekly: { days: ["mon"], at: "02:00", minutes: 60 } }] })).toEqual([
      'maintenance[0].backends[0]: no backend "ghost" in backends',
    ]);
  });
});
