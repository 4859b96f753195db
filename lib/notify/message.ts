/**
 * What a notification says, per channel type: pure functions from a stored notification to the
 * webhook JSON, the Slack-compatible body, ntfy's headers and the email's subject and text. No I/O.
 */
import type { NotificationRow } from "../../db/schema";
import { formatClock, formatDuration, zoneName, type TimeZone } from "../core/format";
import type { NotificationEvent } from "../core/events";
import { type Reason } from "../core/types";

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
  };
}

export function linkOf(publicUrl: string | null, backendId: string): string | null {
  return publicUrl ? `${publicUrl}/backends/${encodeURIComponent(backendId)}` : null;
}

/** "03:15 UTC": the server's clock, its zone named (a message is read later, somewhere else). */
export function clockWithZone(at: number, timeZone: TimeZone = "local"): string {
  return `${formatClock(at, timeZone)} ${zoneName(at, timeZone)}`;
}

const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** One line a person reads first: subject, push title, Slack's fallback text. */
export function headline(p: NotificationPayload): string {
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

/** The body lines under the headline: reasons, the note, the link. */
export function bodyLines(p: NotificationPayload): string[] {
  const lines = [`state: ${p.previousState ? `${p.previousState} -> ` : ""}${p.state}`, ...p.reasons.map((r) => `- ${r.text}`)];
  const note = str(p.details.note);
  if (note) lines.push(`note: ${note}`);
  const resolution = str(p.details.resolution);
  if (resolution) lines.push(resolution);
  if (p.link) lines.push(p.link);
  return lines;
}

/** Slack-compatible incoming webhook body (Mattermost and Discord's /slack endpoint take it too). */
export function slackBody(p: NotificationPayload): { text: string; blocks: unknown[] } {
  const text = `${headline(p)}${p.link ? ` <${p.link}|open>` : ""}`;
  const blocks: unknown[] = [
    { type: "section", text: { type: "mrkdwn", text: `*${escapeSlack(headline(p))}*\n${bodyLines({ ...p, link: null }).map(escapeSlack).join("\n")}` } },
  ];
  if (p.link) {
    blocks.push({ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: `Open ${p.backendId}` }, url: p.link }] });
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
 * The header every HTTP delivery carries (webhook, Slack, ntfy): the notification's stable id, the
 * same on every retry, so a receiver (or a relay in front of Slack or ntfy, which show every POST)
 * can drop a copy it already has. ntfy has no idempotency header of its own (its sequence id
 * updates a message in place, and older servers publish a second one): ours is sent there too.
 */
export const NOTIFICATION_ID_HEADER = "x-stepwatch-notification-id";

/** ntfy takes the message as the body and the rest as headers (https://docs.ntfy.sh/publish/). */
export function ntfyRequest(p: NotificationPayload, token?: string): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    // Header values must be Latin-1; backend ids are slugs, but reasons are free text: keep it ASCII.
    title: asciiHeader(headline(p)),
    priority: String(ntfyPriority(p.event)),
    tags: p.event === "recovered" ? "white_check_mark" : p.event === "stuck" || p.event === "down" || p.event === "crash-loop" ? "rotating_light" : "wrench",
    "content-type": "text/plain; charset=utf-8",
    [NOTIFICATION_ID_HEADER]: p.id,
  };
  if (p.link) headers.click = p.link;
  if (token) headers.authorization = `Bearer ${token}`;
  return { headers, body: bodyLines({ ...p, link: null }).join("\n") };
}

function asciiHeader(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 250);
}

export function emailContent(p: NotificationPayload): { subject: string; text: string } {
  // The subject names the backend and the state, so a mailbox list alone tells the story.
  return { subject: `[stepwatch] ${headline(p)} [${p.state}]`, text: `${headline(p)}\n\n${bodyLines(p).join("\n")}\n` };
}
