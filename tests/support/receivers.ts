/**
 * Real notification receivers on 127.0.0.1 for the tests: an HTTP server that records every
 * request and answers the first `failFirst` with 503, and a real SMTP server (smtp-server).
 */
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { SMTPServer } from "smtp-server";
import { openTestDb } from "./test-db";
import type { DbHandle } from "@/db/types";

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** What the receiver answered. */
  status: number;
}

export interface HttpReceiver {
  url: string;
  port: number;
  received: Received[];
  /** How many of the next requests get a 503 (changeable while running). */
  failFirst: number;
  close(): Promise<void>;
}

/**
 * `holdPaths`: requests to these paths are read but never answered (a receiver that hangs).
 * `answerAfterMs`: every request is read and recorded at once, and answered 200 only this long
 * after (a slow receiver that does accept what it was sent).
 */
export async function startHttpReceiver(opts: { failFirst?: number; port?: number; holdPaths?: string[]; answerAfterMs?: number } = {}): Promise<HttpReceiver> {
  const r: HttpReceiver = { url: "", port: 0, received: [], failFirst: opts.failFirst ?? 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    if (opts.holdPaths?.includes(req.url ?? "")) {
      req.resume();
      r.received.push({ path: req.url ?? "", headers: req.headers, body: "", status: 0 });
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const fail = r.failFirst > 0;
      if (fail) r.failFirst--;
      const status = fail ? 503 : 200;
      r.received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), status });
      if (opts.answerAfterMs !== undefined) {
        const t = setTimeout(() => res.writeHead(status, { "content-type": "text/plain" }).end("ok, late"), opts.answerAfterMs);
        res.on("close", () => clearTimeout(t));
        return;
      }
      res.writeHead(status, { "content-type": "text/plain" }).end(fail ? "receiver not ready" : "ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  r.port = (server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${r.port}`;
  r.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return r;
}

export interface Mail {
  from: string;
  to: string[];
  raw: string;
  subject: string;
  user: string | null;
}

export interface SmtpReceiver {
  port: number;
  mails: Mail[];
  close(): Promise<void>;
}

/** A real SMTP server without TLS, accepting one user/password when given. */
export async function startSmtpReceiver(opts: { user?: string; password?: string } = {}): Promise<SmtpReceiver> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ["STARTTLS"],
    authOptional: opts.user === undefined,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === opts.user && auth.password === opts.password) cb(null, { user: auth.username });
      else cb(new Error("bad credentials"));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const subject = /^Subject: (.*(?:\r?\n[ \t].*)*)/m.exec(raw)?.[1].replace(/\r?\n[ \t]/g, " ") ?? "";
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((t) => t.address),
          raw,
          subject,
          user: (session.user as string | undefined) ?? null,
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * Real databases for a test file about notifications (SQLite files in one temp directory, or
 * PostgreSQL databases in the storage-pg project: tests/support/test-db.ts): `open` one per case
 * (the previous one is closed by `closeLast`, in afterEach), `remove` the directory in afterAll.
 */
export function tempDbs(prefix: string): { open(name: string): Promise<DbHandle>; closeLast(): void; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let last: DbHandle | null = null;
  return {
    async open(name) {
      last = await openTestDb(path.join(dir, `${name}.db`));
      return last;
    },
    closeLast() {
      last?.close();
      last = null;
    },
    remove() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
