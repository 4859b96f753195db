/**
 * Operator sessions: a stateless token "<payload>.<mac>" in an httpOnly, SameSite=Strict cookie.
 * payload = base64url(JSON {n: name, e: expiry ms}); mac = HMAC-SHA256(payload) with a key that is
 * STEPWATCH_SESSION_SECRET or, failing that, generated once per data directory and kept next to the
 * DB file, so sessions survive a restart of stepwatch but never leave the box.
 * Pure apart from `loadSessionKey` (file system) — the clock and the key are passed in.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

export const SESSION_COOKIE = "stepwatch_session";
/** A working day: long enough for a shift, short enough that a forgotten laptop expires. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface Session {
  name: string;
  expiresAt: number;
}

function mac(payload: string, key: Buffer): Buffer {
  return createHmac("sha256", key).update(payload).digest();
}

export function signSession(session: Session, key: Buffer): string {
  const payload = Buffer.from(JSON.stringify({ n: session.name, e: session.expiresAt })).toString("base64url");
  return `${payload}.${mac(payload, key).toString("base64url")}`;
}

/** The session a token carries, or null when it is malformed, forged or expired. */
export function verifySession(token: string | undefined | null, key: Buffer, now: number): Session | null {
  if (!token || token.length > 1024) return null;
  const dot = token.indexOf(".");
  if (dot <= 0) return null;
  const payload = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), "base64url");
  const expected = mac(payload, key);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let data: unknown;
  try {
    data = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  const d = data as { n?: unknown; e?: unknown };
  if (typeof d.n !== "string" || typeof d.e !== "number") return null;
  if (d.e <= now) return null;
  return { name: d.n, expiresAt: d.e };
}

const KEY_FILE = "session.key";

/**
 * The HMAC key: STEPWATCH_SESSION_SECRET when set (several replicas, or a read-only data dir),
 * else `<dir of the DB file>/session.key`, created on first use with mode 0600. Creation uses the
 * "wx" flag, so two processes starting at once agree on one key (the loser reads the winner's).
 */
export function loadSessionKey(dbFile: string, env: Record<string, string | undefined> = process.env): Buffer {
  const secret = env.STEPWATCH_SESSION_SECRET;
  if (secret) {
    if (secret.length < 16) throw new Error("STEPWATCH_SESSION_SECRET must be at least 16 characters");
    return Buffer.from(secret, "utf8");
  }
  const file = path.join(path.dirname(path.resolve(dbFile)), KEY_FILE);
  try {
    return readKey(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString("base64") + "\n", { flag: "wx", mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  return readKey(file);
}

function readKey(file: string): Buffer {
  const key = Buffer.from(fs.readFileSync(file, "utf8").trim(), "base64");
  if (key.length < 16) throw new Error(`${file} holds no usable session key; delete it to make a new one`);
  return key;
}
