/**
 * Device cookies (OWASP "Slow Down Online Guessing Attacks with Device Cookies"; Grafana and Gitea
 * remember a device the same way): a successful sign-in leaves a long-lived, signed cookie that
 * names the operator. A later sign-in for that name that brings it is from a device she used
 * before, so it is not held to the anonymous counts and queue that a many-address guessing attack
 * fills (lib/auth/throttle.ts `admitDevice`, the gate's first queue); it has its own small limit,
 * so a stolen cookie buys a few guesses, never a lockout of anyone else.
 *
 * The cookie proves nothing by itself: the password is still compared. It holds a random id, its
 * expiry and the name, MACed with the session key (STEPWATCH_SESSION_SECRET or session.key), so it
 * cannot be made up or moved to another name; changing that key forgets every device.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const DEVICE_COOKIE = "stepwatch_device";
export const SECURE_DEVICE_COOKIE = "__Host-stepwatch_device";
/** Half a year: a device the operator used in the last incident is still known in the next. */
export const DEVICE_TTL_MS = 180 * 86_400_000;

function mac(payload: string, key: Buffer): Buffer {
  return createHmac("sha256", key).update(`stepwatch-device\u0000${payload}`).digest();
}

/** A new device cookie value for `name`, valid until now + DEVICE_TTL_MS. */
export function mintDevice(name: string, key: Buffer, now: number): { value: string; expiresAt: number } {
  const expiresAt = now + DEVICE_TTL_MS;
  const payload = `${randomBytes(12).toString("base64url")}.${expiresAt}.${Buffer.from(name.toLowerCase(), "utf8").toString("base64url")}`;
  return { value: `${payload}.${mac(payload, key).toString("base64url")}`, expiresAt };
}

/** The device's id when `value` is a cookie this server signed for `name` and it has not expired; else null. */
export function recognisedDevice(value: string | null | undefined, name: string, key: Buffer, now: number): string | null {
  if (!value || value.length > 512) return null;
  const parts = value.split(".");
  if (parts.length !== 4) return null;
  const [id, expires, who, sig] = parts;
  const given = Buffer.from(sig, "base64url");
  const want = mac(`${id}.${expires}.${who}`, key);
  if (given.length !== want.length || !timingSafeEqual(given, want)) return null;
  if (!(Number(expires) > now)) return null;
  if (Buffer.from(who, "base64url").toString("utf8") !== name.toLowerCase()) return null;
  return id;
}

/** The device cookie of a request's Cookie header: over https only the `__Host-` one. */
export function deviceCookieFrom(jar: { get(name: string): { value: string } | undefined }, https: boolean): string | undefined {
  return https ? jar.get(SECURE_DEVICE_COOKIE)?.value : (jar.get(DEVICE_COOKIE)?.value ?? jar.get(SECURE_DEVICE_COOKIE)?.value);
}
