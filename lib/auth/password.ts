/**
 * Operator passwords. A config holds either a scrypt hash ("scrypt:N:r:p:salt:key", made by
 * `npm run hash-password`) or a clear-text password (from an env var, or inline in the demo only;
 * lib/config.ts decides which are allowed). Every comparison is constant-time
 * (crypto.timingSafeEqual) so response timing does not leak how much of a guess was right, and
 * every comparison costs one scrypt with the default parameters, whatever the operator's password
 * is kept as (a hash, a clear-text env value) or whether the name exists: a clear-text password is
 * compared as scrypt(guess, salt) against scrypt(password, salt), the latter computed once.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual, createHash, type ScryptOptions } from "node:crypto";
import type { PasswordSpec } from "../config";

const PREFIX = "scrypt";
/** N=2^15, r=8, p=1: ~32 MB and ~50-100 ms per check on a small box; slows guessing, not sign-in. */
const DEFAULT_PARAMS = { N: 1 << 15, r: 8, p: 1 } as const;
const KEY_LEN = 32;

function scrypt(password: string, salt: Buffer, keyLen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password, salt, keyLen, opts, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** 128*N*r bytes is what scrypt needs; give it headroom so large N does not fail with "memory limit". */
function maxmem(N: number, r: number): number {
  return 128 * N * r * 2 + 1024 * 1024;
}

export async function hashPassword(password: string, params: { N: number; r: number; p: number } = DEFAULT_PARAMS): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LEN, { ...params, maxmem: maxmem(params.N, params.r) });
  return [PREFIX, params.N, params.r, params.p, salt.toString("base64"), key.toString("base64")].join(":");
}

interface ParsedHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

export function parseScryptHash(hash: string): ParsedHash | null {
  const parts = hash.split(":");
  if (parts.length !== 6 || parts[0] !== PREFIX) return null;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], "base64");
  const key = Buffer.from(parts[5], "base64");
  // N must be a power of two > 1; bounds keep a hostile config from asking for gigabytes.
  const okN = Number.isInteger(N) && N > 1 && N <= 1 << 20 && (N & (N - 1)) === 0;
  if (!okN || !Number.isInteger(r) || r < 1 || r > 32 || !Number.isInteger(p) || p < 1 || p > 16) return null;
  if (salt.length < 8 || key.length < 16) return null;
  return { N, r, p, salt, key };
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

/** Constant-time equality of two strings of any lengths (compares fixed-size digests). */
export function safeEqualStrings(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** One random salt per process for clear-text passwords: their derived keys never leave memory. */
const PLAIN_SALT = randomBytes(16);
const plainKeys = new WeakMap<object, Promise<Buffer>>();

function deriveDefault(password: string, salt: Buffer): Promise<Buffer> {
  return scrypt(password, salt, KEY_LEN, { ...DEFAULT_PARAMS, maxmem: maxmem(DEFAULT_PARAMS.N, DEFAULT_PARAMS.r) });
}

function plainKeyOf(spec: Extract<PasswordSpec, { kind: "plain" }>): Promise<Buffer> {
  let k = plainKeys.get(spec);
  if (!k) {
    k = deriveDefault(spec.value, PLAIN_SALT);
    plainKeys.set(spec, k);
  }
  return k;
}

/**
 * Derive the keys of clear-text passwords ahead of the first sign-in (at start), so that even the
 * first comparison costs exactly one scrypt.
 */
export async function warmPasswords(specs: PasswordSpec[]): Promise<void> {
  await Promise.all(specs.map((s) => (s.kind === "plain" ? plainKeyOf(s) : null)));
}

/** True when `given` matches the spec. Never throws: a malformed hash simply does not match. */
export async function verifyPassword(spec: PasswordSpec, given: string): Promise<boolean> {
  if (spec.kind === "plain") {
    const expected = await plainKeyOf(spec);
    return timingSafeEqual(await deriveDefault(given, PLAIN_SALT), expected);
  }
  const h = parseScryptHash(spec.hash);
  if (!h) return false;
  try {
    const key = await scrypt(given, h.salt, h.key.length, { N: h.N, r: h.r, p: h.p, maxmem: maxmem(h.N, h.r) });
    return timingSafeEqual(key, h.key);
  } catch {
    return false;
  }
}

/**
 * Burn about the same time as a real scrypt check, for sign-ins naming an unknown operator, so the
 * answer's timing does not tell which names exist.
 */
export async function burnPasswordCheck(given: string): Promise<void> {
  await deriveDefault(given, PLAIN_SALT);
}
