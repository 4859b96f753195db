/**
 * Operator sessions, kept server-side in SQLite (db/schema.ts `sessions`). The cookie holds 32
 * random bytes; the table holds their SHA-256, the operator, the fixed expiry and a fingerprint of
 * the operator's password as configured at sign-in. A session ends when the operator signs out
 * (its row is deleted), ends it from the sessions list, is removed from the config, or has another
 * password (the fingerprint differs), and at the latest SESSION_TTL_MS after sign-in: nothing the
 * client sends can extend it. The key (STEPWATCH_SESSION_SECRET or session.key next to the DB)
 * only keys the password fingerprints now.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { OperatorConfig, PasswordSpec } from "../config";
import { deleteSession, insertSession, recordAudit, sessionById, sessionCredentials, touchSession } from "../../db/queries/auth";
import { DomainError } from "../core/errors";
import type { Db } from "../../db/types";

/** The cookie over http; over https the `__Host-` prefixed name (Secure, Path=/, no Domain). */
export const SESSION_COOKIE = "stepwatch_session";
export const SECURE_SESSION_COOKIE = "__Host-stepwatch_session";
/** A working day: long enough for a shift, short enough that a forgotten laptop expires. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Most live sessions of one operator; a new sign-in past it ends the oldest. */
export const MAX_SESSIONS_PER_OPERATOR = 20;
/** lastSeenAt is written at most this often (a poll every 2 s must not write every 2 s). */
const TOUCH_EVERY_MS = 60_000;

export interface Session {
  /** The row id (SHA-256 of the token): safe to show, useless as a cookie. */
  id: string;
  name: string;
  createdAt: number;
  expiresAt: number;
}

/** The session cookie's token: over https only the `__Host-` one (a plain-http page cannot set that one). */
export function sessionTokenFrom(jar: { get(name: string): { value: string } | undefined }, https: boolean): string | undefined {
  return https ? jar.get(SECURE_SESSION_COOKIE)?.value : (jar.get(SESSION_COOKIE)?.value ?? jar.get(SECURE_SESSION_COOKIE)?.value);
}

export function tokenId(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** HMAC of the password spec: equal while the operator's password stays what it was at sign-in. */
export function credentialOf(spec: PasswordSpec, key: Buffer): string {
  const what = spec.kind === "scrypt" ? `scrypt\u0000${spec.hash}` : `plain\u0000${spec.value}`;
  return createHmac("sha256", key).update(what).digest("base64url");
}

export function createSession(
  db: Db,
  input: { operator: OperatorConfig; key: Buffer; now: number; address?: string | null; userAgent?: string | null },
): { token: string; session: Session } {
  const token = randomBytes(32).toString("base64url");
  const id = tokenId(token);
  const expiresAt = input.now + SESSION_TTL_MS;
  insertSession(
    db,
    {
      id,
      operator: input.operator.name,
      createdAt: input.now,
      expiresAt,
      lastSeenAt: input.now,
      address: input.address ?? null,
      userAgent: input.userAgent ? input.userAgent.slice(0, 200) : null,
      credential: credentialOf(input.operator.password, input.key),
    },
    MAX_SESSIONS_PER_OPERATOR,
  );
  return { token, session: { id, name: input.operator.name, createdAt: input.now, expiresAt } };
}

/**
 * A sign-in that worked, recorded: the session row and its audit line in one transaction. A
 * database that takes no writes (locked, full, read-only) is "unavailable" (503) with the reason,
 * and no cookie is set: a session that is not stored could not be checked or ended.
 */
export function beginSession(
  db: Db,
  input: { operator: OperatorConfig; key: Buffer; now: number; address: string; userAgent?: string | null },
): { token: string; session: Session } {
  try {
    return db.$client.transaction(() => {
      const made = createSession(db, input);
      recordAudit(db, { at: input.now, actor: input.operator.name, actorKind: "operator", action: "signin.ok", address: input.address });
      return made;
    })();
  } catch (e) {
    throw new DomainError("unavailable", `cannot record the sign-in in the database (${(e as Error)?.message ?? String(e)}); try again when it takes writes`);
  }
}

/**
 * Ends every stored session whose operator is not in `operators` or whose password fingerprint is
 * not the current one. Run at start and inside every reload: the check on each request alone let
 * a session come back when a password went A -> B -> A (or an operator was removed and added
 * again) without that session being used in between. Returns how many ended.
 */
export function sweepSessions(db: Db, operators: OperatorConfig[], key: Buffer): number {
  const current = new Map(operators.map((o) => [o.name, credentialOf(o.password, key)]));
  let ended = 0;
  for (const row of sessionCredentials(db)) {
    if (current.get(row.operator) !== row.credential && deleteSession(db, row.id)) ended++;
  }
  return ended;
}

/** The live session a cookie token names, or null; a stale row (expired, removed, re-passworded) is deleted. */
export function resolveSession(db: Db, token: string | null | undefined, ctx: { operators: OperatorConfig[]; key: Buffer; now: number }): Session | null {
  if (!token || token.length > 256) return null;
  const id = tokenId(token);
  const row = sessionById(db, id);
  if (!row) return null;
  const operator = ctx.operators.find((o) => o.name === row.operator);
  const live =
    row.expiresAt > ctx.now &&
    row.expiresAt - row.createdAt <= SESSION_TTL_MS &&
    operator !== undefined &&
    row.credential === credentialOf(operator.password, ctx.key);
  if (!live) {
    deleteSession(db, id);
    return null;
  }
  if (ctx.now - row.lastSeenAt >= TOUCH_EVERY_MS) touchSession(db, id, ctx.now);
  return { id, name: row.operator, createdAt: row.createdAt, expiresAt: row.expiresAt };
}

/** Sign-out: the token's session ends (whether or not it was still live). */
export function endSessionByToken(db: Db, token: string | null | undefined): boolean {
  return token ? deleteSession(db, tokenId(token)) : false;
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
