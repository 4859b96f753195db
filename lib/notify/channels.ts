/**
 * Sending one message (one notification, or a group of them: lib/notify/grouping.ts) to one channel, once. HTTP channels go through the one HTTP client
 * (lib/net/http.ts: deadline, size cap, no redirects, never throws); email through nodemailer.
 * Retrying is the outbox's job (lib/notify/outbox.ts): this file only says how the attempt went.
 */
import type { Transporter } from "nodemailer";
import type { Dispatcher } from "undici";
import type { ChannelConfig } from "../config";
import { httpRequest } from "../net/http";
import { emailContent, NOTIFICATION_ID_HEADER, ntfyRequest, slackBody, type MessagePayload } from "./message";

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  /** From a Retry-After header (429/503), in ms. */
  retryAfterMs: number | null;
  /**
   * The whole request was written and the deadline passed waiting for the answer: the receiver
   * may well have it (a slow one answers after the deadline). The outbox retries such an attempt
   * at most once (lib/notify/outbox.ts).
   */
  unconfirmed?: boolean;
}

export interface SendOptions {
  timeoutMs: number;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
}

export type Sender = (channel: ChannelConfig, payload: MessagePayload, opts: SendOptions) => Promise<AttemptResult>;

/** How an attempt's error starts when the request was sent and the answer never came (counted by the outbox). */
export const UNCONFIRMED = "unconfirmed";

// An answer body is only kept for the error message.
const MAX_ANSWER_BYTES = 16 * 1024;

export const sendToChannel: Sender = async (channel, payload, opts) => {
  switch (channel.type) {
    case "webhook":
      // The id header last: a configured header cannot replace it.
      return post(channel.url, { "content-type": "application/json", ...channel.headers, [NOTIFICATION_ID_HEADER]: payload.id }, JSON.stringify(payload), opts);
    case "slack":
      return post(channel.url, { "content-type": "application/json", [NOTIFICATION_ID_HEADER]: payload.id }, JSON.stringify(slackBody(payload)), opts);
    case "ntfy": {
      const r = ntfyRequest(payload, channel.token);
      return post(channel.url, r.headers, r.body, opts);
    }
    case "email":
      return sendEmail(channel, payload, opts);
  }
};

async function post(url: string, headers: Record<string, string>, body: string, opts: SendOptions): Promise<AttemptResult> {
  const r = await httpRequest(url, { method: "POST", headers, body, timeoutMs: opts.timeoutMs, maxBytes: MAX_ANSWER_BYTES, dispatcher: opts.dispatcher, signal: opts.signal, noticeSent: true });
  if (r.status !== undefined && r.status >= 200 && r.status < 300) return { ok: true, statusCode: r.status, error: null, retryAfterMs: null };
  if (r.status !== undefined) {
    const snippet = r.body.replace(/\s+/g, " ").trim().slice(0, 200);
    return { ok: false, statusCode: r.status, error: `HTTP ${r.status}${snippet ? `: ${snippet}` : ""}`, retryAfterMs: retryAfter(r.headers?.["retry-after"]) };
  }
  if (r.outcome === "timeout" && r.requestSent) {
    return { ok: false, statusCode: null, error: `${UNCONFIRMED}: sent, no answer within ${opts.timeoutMs} ms`, retryAfterMs: null, unconfirmed: true };
  }
  return { ok: false, statusCode: null, error: `${r.outcome}: ${r.error ?? "no answer"}`, retryAfterMs: null };
}

function retryAfter(h: string | string[] | undefined): number | null {
  const v = Array.isArray(h) ? h[0] : h;
  if (!v) return null;
  const s = Number(v);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}

// One transporter per channel and process (nodemailer pools nothing unless asked; this only
// saves re-parsing the options). On globalThis: Next loads modules more than once.
const TRANSPORTS = Symbol.for("stepwatch.notify.smtp");
type Holder = { [TRANSPORTS]?: Map<string, Transporter> };

async function transportFor(channel: Extract<ChannelConfig, { type: "email" }>, timeoutMs: number): Promise<Transporter> {
  const g = globalThis as Holder;
  const map = (g[TRANSPORTS] ??= new Map());
  const key = JSON.stringify([channel.id, channel.smtp, timeoutMs]);
  let t = map.get(key);
  if (!t) {
    // Loaded on the first email only: a stepwatch without an email channel never loads it.
    const { default: nodemailer } = await import("nodemailer");
    t = nodemailer.createTransport({
      host: channel.smtp.host,
      port: channel.smtp.port,
      secure: channel.smtp.secure,
      auth: channel.smtp.user ? { user: channel.smtp.user, pass: channel.smtp.password ?? "" } : undefined,
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
    });
    map.set(key, t);
  }
  return t;
}

async function sendEmail(channel: Extract<ChannelConfig, { type: "email" }>, payload: MessagePayload, opts: SendOptions): Promise<AttemptResult> {
  const { subject, text } = emailContent(payload);
  try {
    await (await transportFor(channel, opts.timeoutMs)).sendMail({
      from: channel.from,
      to: channel.to,
      subject,
      text,
      // Lets a mail client thread the reminders, and a receiver dedupe a retried send.
      messageId: `<${payload.id}@stepwatch>`,
      headers: {
        "X-Stepwatch-Event": [...new Set(payload.notifications.map((n) => n.event))].join(", "),
        "X-Stepwatch-Backend": [...new Set(payload.notifications.map((n) => n.backendId))].join(", ").slice(0, 900),
      },
    });
    return { ok: true, statusCode: null, error: null, retryAfterMs: null };
  } catch (e) {
    const err = e as { responseCode?: number; message?: string; code?: string };
    return { ok: false, statusCode: err.responseCode ?? null, error: `smtp: ${err.code ? `${err.code} ` : ""}${err.message ?? String(e)}`, retryAfterMs: null };
  }
}
