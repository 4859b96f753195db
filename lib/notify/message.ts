/**
 * What a message says, per channel type: pure functions from stored notifications (one, or a group
 * of them: lib/notify/grouping.ts) to the webhook JSON, the Slack-compatible body, ntfy's headers
 * and the email's subject and text. No I/O.
 */
import type { NotificationRow } from "../../db/schema";
import { formatClock, formatDuration, zoneName, type TimeZone } from "../core/format";
import type { NotificationEvent } from "../core/events";
import type { Labels } from "../core/labels";
import { type Reason } from "../core/types";
import type { MessageGroup } from "./grouping";

/** The webhook body (README "Notifications" documents it). `id` is the same on every retry. */
export interface NotificationPayload {
  id: string;
  event: NotificationEvent;
  backendId: string;
  state: string;
  previousState: string | null;
  /** The evidence: each reason's rule id and its words. */
  reasons: Reason[];
  /** ISO 8601. */
  at: string;
  /** {publicUrl}/backends/{id}, where the restart dialog is one click away; null without publicUrl. */
  link: string | null;
  /** Event-specific: requestedBy/note, outcome/downtimeSeconds, scheduledAt, reminder, openSince. */
  details: Record<string, unknown>;
  /** The backend's labels (config `backends[].labels`) when it was written. */
  labels: Labels;
  /** For a problem: {link}#acknowledge, the backend page at its Acknowledge button; else null. */
  acknowledgeLink: string | null;
  /**
   * For a problem and a restart: {link}#evidence, the backend page at its evidence bundles (issue 32:
   * captured when it got stuck or went down, and before any restart); else null.
   */
  evidenceLink: string | null;
}

/**
 * One message as sent: the oldest notification's fields at the top (what a message was before
 * grouping, so a receiver written for one notification per message still reads a lone one as
 * before), with the message's own `id`, its `group`, the `count` and every notification.
 */
export interface MessagePayload extends NotificationPayload {
  /** problem | reminder | recovered; null for an event that always goes out alone (restarts). */
  group: MessageGroup | null;
  count: number;
  /** Every notification of the message, oldest first (`count` of them; the lone one for a single). */
  notifications: NotificationPayload[];
  /** {publicUrl}/, the fleet: where a group is looked at; null without publicUrl. */
  fleetLink: string | null;
}

export function payloadOf(n: NotificationRow): NotificationPayload {
  return {
    id: n.uid,
    event: n.event,
    backendId: n.backendId,
    state: n.state,
    previousState: n.previousState,
    reasons: n.reasons,
    at: new Date(n.at).toISOString(),
    link: n.link,
    details: n.details,
    labels: n.labels ?? {},
    acknowledgeLink: n.link && (n.event === "stuck" || n.event === "down") ? acknowledgeLinkOf(n.link) : null,
    evidenceLink: n.link && EVIDENCE_EVENTS.has(n.event) ? evidenceLinkOf(n.link) : null,
  };
}

/** The message carrying `rows` (oldest first) under `id` (lib/notify/grouping.ts `messageIdOf`). */
export function messageOf(id: string, group: MessageGroup | null, rows: NotificationRow[], publicUrl: string | null): MessagePayload {
  const notifications = rows.map(payloadOf);
  return { ...notifications[0], id, group, count: notifications.length, notifications, fleetLink: publicUrl ? `${publicUrl}/` : null };
}

export function linkOf(publicUrl: string | null, backendId: string): string | null {
  return publicUrl ? `${publicUrl}/backends/${encodeURIComponent(backendId)}` : null;
}

/** The backend page scrolled to its on-call panel (components/OnCallPanel.tsx, id="acknowledge"). */
export function acknowledgeLinkOf(backendLink: string): string {
  return `${backendLink}#acknowledge`;
}

/** The events whose message points at the evidence: the problems a bundle is captured for, and restarts (each captures first). */
const EVIDENCE_EVENTS = new Set<string>(["stuck", "down", "restart-requested", "restart-finished"]);

/** The backend page scrolled to its evidence bundles (components/EvidencePanel.tsx, id="evidence"). */
export function evidenceLinkOf(backendLink: string): string {
  return `${backendLink}#evidence`;
}

/** The notifications a message carries: a bare notification (tests, older callers) is its own. */
function membersOf(p: NotificationPayload | MessagePayload): NotificationPayload[] {
  return "notifications" in p && p.notifications.length > 0 ? p.notifications : [p];
}

const isGroup = (p: NotificationPayload | MessagePayload): p is MessagePayload => membersOf(p).length > 1;

/** "03:15 UTC": the server's clock, its zone named (a message is read later, somewhere else). */
export function clockWithZone(at: number, timeZone: TimeZone = "local"): string {
  return `${formatClock(at, timeZone)} ${zoneName(at, timeZone)}`;
}

const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** One line a person reads first: subject, push title, Slack's fallback text. */
export function headline(p: NotificationPayload | MessagePayload): string {
  return isGroup(p) ? groupHeadline(p) : oneHeadline(membersOf(p)[0]);
}

function oneHeadline(p: NotificationPayload): string {
  const d = p.details;
  const again = d.reminder ? " (reminder: not acknowledged)" : "";
  switch (p.event) {
    case "stuck":
      return `${p.backendId} is stuck${again}`;
    case "down":
      return `${p.backendId} is down${again}`;
    case "recovered":
      return `${p.backendId} recovered (${p.state})`;
    case "restart-requested":
      return `${str(d.requestedBy) ?? "someone"} asked to restart ${p.backendId}`;
    case "restart-finished": {
      const downtime = num(d.downtimeSeconds);
      return `restart of ${p.backendId}: ${str(d.outcome) ?? "finished"}${downtime !== null ? ` after ${formatDuration(downtime)} down` : ""}`;
    }
    case "crash-loop":
      return `${p.backendId} is in a crash loop: ${num(d.restarts) ?? "several"} new processes in ${num(d.windowMinutes) ?? "a few"} minutes, not restarted by stepwatch`;
    case "restart-scheduled": {
      const at = num(d.scheduledAt);
      return `${p.backendId} will be restarted at ${at !== null ? clockWithZone(at) : "soon"} unless someone acknowledges`;
    }
  }
}

/** How many names a group's headline spells out before "and N more" (the body names every one). */
const NAMES_IN_HEADLINE = 5;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** "20 backends down: b001, b002, b003, b004, b005 and 15 more". */
function groupHeadline(m: MessagePayload): string {
  const ids = [...new Set(m.notifications.map((x) => x.backendId))];
  const names = ids.length <= NAMES_IN_HEADLINE ? ids.join(", ") : `${ids.slice(0, NAMES_IN_HEADLINE).join(", ")} and ${ids.length - NAMES_IN_HEADLINE} more`;
  const n = plural(ids.length, "backend");
  if (m.group === "recovered") return `${n} recovered: ${names}`;
  const down = m.notifications.filter((x) => x.event === "down").length;
  const stuck = m.notifications.filter((x) => x.event === "stuck").length;
  const what = stuck === 0 ? "down" : down === 0 ? "stuck" : `stuck or down (${down} down, ${stuck} stuck)`;
  return `${n} ${what}: ${names}${m.group === "reminder" ? " (reminder: not acknowledged)" : ""}`;
}

/** The body lines under the headline: reasons, the note, the link and where to acknowledge (a group: one line per notification). */
export function bodyLines(p: NotificationPayload | MessagePayload): string[] {
  if (isGroup(p)) return groupLines(p, { links: true, budget: null });
  const one = membersOf(p)[0];
  const lines = [`state: ${one.previousState ? `${one.previousState} -> ` : ""}${one.state}`, ...one.reasons.map((r) => `- ${r.text}`)];
  const labels = labelText(one.labels);
  if (labels) lines.push(`labels: ${labels}`);
  const note = str(one.details.note);
  if (note) lines.push(`note: ${note}`);
  const resolution = str(one.details.resolution);
  if (resolution) lines.push(resolution);
  if (one.link) {
    lines.push(one.link);
    if (one.acknowledgeLink) lines.push(`acknowledge: ${one.acknowledgeLink}`);
    if (one.evidenceLink) lines.push(`evidence: ${one.evidenceLink}`);
  }
  return lines;
}

function labelText(l: Labels | undefined): string {
  return Object.entries(l ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

/** One notification of a group in one line: "- b001: busy -> down; connection refused ... [site=ams]". */
function memberLine(x: NotificationPayload, name: string = x.backendId): string {
  const labels = labelText(x.labels);
  const why = x.reasons[0]?.text;
  return `- ${name}: ${x.previousState ? `${x.previousState} -> ` : ""}${x.state}${why ? `; ${why}` : ""}${labels ? ` [${labels}]` : ""}`;
}

/**
 * A group's lines, oldest first. `links`: each notification's link and acknowledge link under it
 * (email). `budget`: at most this many characters (a chat message or a push has a size limit),
 * the rest counted in a last line that points at the fleet.
 */
function groupLines(m: MessagePayload, o: { links: boolean; budget: number | null }): string[] {
  const lines: string[] = [];
  let used = 0;
  for (let i = 0; i < m.notifications.length; i++) {
    const x = m.notifications[i];
    const chunk = [memberLine(x)];
    if (o.links && x.link) chunk.push(`  ${x.link}${x.acknowledgeLink ? `  acknowledge: ${x.acknowledgeLink}` : ""}`);
    const size = chunk.reduce((a, l) => a + l.length + 1, 0);
    if (o.budget !== null && used + size > o.budget) {
      lines.push(`... and ${m.notifications.length - i} more${m.fleetLink ? `: ${m.fleetLink}` : ""}`);
      return lines;
    }
    lines.push(...chunk);
    used += size;
  }
  if (o.links && m.fleetLink) lines.push(`fleet: ${m.fleetLink}`);
  return lines;
}

/** ntfy's message is at most 4096 bytes (https://docs.ntfy.sh/publish/#limitations); room is kept for the "more" line. */
const NTFY_BUDGET = 3500;
/** Slack: a section's text is at most 3000 characters, a message at most 50 blocks. */
const SLACK_SECTION = 2900;
const SLACK_SECTIONS = 40;

/** Slack-compatible incoming webhook body (Mattermost and Discord's /slack endpoint take it too). */
export function slackBody(p: NotificationPayload | MessagePayload): { text: string; blocks: unknown[] } {
  if (isGroup(p)) {
    const head = headline(p);
    // Each backend's name links to its page; a problem's line ends with where to acknowledge it.
    const line = (x: NotificationPayload) =>
      escapeSlack(memberLine(x, "\u0000")).replace("\u0000", x.link ? `<${x.link}|${escapeSlack(x.backendId)}>` : escapeSlack(x.backendId)) +
      (x.acknowledgeLink ? ` <${x.acknowledgeLink}|acknowledge>` : "");
    // Every backend named: the lines fill as many sections as they need, within Slack's limits.
    const sections: string[][] = [[`*${escapeSlack(head)}*`]];
    let size = sections[0][0].length;
    const lines = p.notifications.map(line);
    for (let i = 0; i < lines.length; i++) {
      if (size + lines[i].length + 1 > SLACK_SECTION) {
        if (sections.length === SLACK_SECTIONS) {
          sections[sections.length - 1].push(escapeSlack(`... and ${lines.length - i} more${p.fleetLink ? `: ${p.fleetLink}` : ""}`));
          break;
        }
        sections.push([]);
        size = 0;
      }
      sections[sections.length - 1].push(lines[i]);
      size += lines[i].length + 1;
    }
    const blocks: unknown[] = sections.map((ls) => ({ type: "section", text: { type: "mrkdwn", text: ls.join("\n") } }));
    if (p.fleetLink) blocks.push({ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "Open the fleet" }, url: p.fleetLink }] });
    return { text: `${head}${p.fleetLink ? ` <${p.fleetLink}|open>` : ""}`, blocks };
  }
  const one = membersOf(p)[0];
  const text = `${headline(one)}${one.link ? ` <${one.link}|open>` : ""}`;
  const blocks: unknown[] = [
    { type: "section", text: { type: "mrkdwn", text: `*${escapeSlack(headline(one))}*\n${bodyLines({ ...one, link: null }).map(escapeSlack).join("\n")}` } },
  ];
  if (one.link) {
    const elements: unknown[] = [{ type: "button", text: { type: "plain_text", text: `Open ${one.backendId}` }, url: one.link }];
    if (one.acknowledgeLink) elements.push({ type: "button", text: { type: "plain_text", text: "Acknowledge" }, url: one.acknowledgeLink });
    blocks.push({ type: "actions", elements });
  }
  return { text, blocks };
}

// Slack's mrkdwn treats &, < and > as control characters.
function escapeSlack(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** ntfy priorities: 5 max, 4 high, 3 default. A stuck or down server wakes someone. */
export function ntfyPriority(e: NotificationEvent): number {
  return e === "stuck" || e === "down" ? 5 : e === "restart-scheduled" || e === "crash-loop" ? 4 : 3;
}

/**
 * The header every HTTP delivery carries (webhook, Slack, ntfy): the message's stable id, the
 * same on every retry, so a receiver (or a relay in front of Slack or ntfy, which show every POST)
 * can drop a copy it already has. ntfy has no idempotency header of its own (its sequence id
 * updates a message in place, and older servers publish a second one): ours is sent there too.
 */
export const NOTIFICATION_ID_HEADER = "x-stepwatch-notification-id";

/** ntfy takes the message as the body and the rest as headers (https://docs.ntfy.sh/publish/). */
export function ntfyRequest(p: NotificationPayload | MessagePayload, token?: string): { headers: Record<string, string>; body: string } {
  const members = membersOf(p);
  const group = isGroup(p);
  const one = members[0];
  const events = members.map((x) => x.event);
  const headers: Record<string, string> = {
    // Header values must be Latin-1; backend ids are slugs, but reasons are free text: keep it ASCII.
    title: asciiHeader(headline(p)),
    priority: String(Math.max(...events.map(ntfyPriority))),
    tags: events.every((e) => e === "recovered") ? "white_check_mark" : events.some((e) => e === "stuck" || e === "down" || e === "crash-loop") ? "rotating_light" : "wrench",
    "content-type": "text/plain; charset=utf-8",
    [NOTIFICATION_ID_HEADER]: p.id,
  };
  const click = group ? ("fleetLink" in p ? p.fleetLink : null) : one.link;
  if (click) headers.click = click;
  // ntfy's action buttons (https://docs.ntfy.sh/publish/#action-buttons): a lone problem gets one to acknowledge.
  if (!group && one.acknowledgeLink) headers.actions = asciiHeader(`view, Acknowledge, ${one.acknowledgeLink}`);
  if (token) headers.authorization = `Bearer ${token}`;
  const body = group ? groupLines(p as MessagePayload, { links: false, budget: NTFY_BUDGET }).join("\n") : bodyLines({ ...one, link: null }).join("\n");
  return { headers, body };
}

function asciiHeader(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 250);
}

export function emailContent(p: NotificationPayload | MessagePayload): { subject: string; text: string } {
  // The subject names the backends and the states, so a mailbox list alone tells the story.
  const states = [...new Set(membersOf(p).map((x) => x.state))].join(", ");
  return { subject: `[stepwatch] ${headline(p)} [${states}]`, text: `${headline(p)}\n\n${bodyLines(p).join("\n")}\n` };
}
