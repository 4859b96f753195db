/**
 * CSRF guard for state-changing routes. The session cookie is SameSite=Strict already; on top, a
 * request whose Origin header names another site is refused (403). Browsers always send Origin on
 * cross-site POSTs; scripts (curl) send none and are allowed, since they must hold the cookie anyway.
 */
export function isForeignOrigin(origin: string | null | undefined, host: string | null | undefined): boolean {
  if (origin === null || origin === undefined || origin === "") return false;
  // "null" is what sandboxed frames and some redirects send: never our own page.
  if (origin === "null" || !host) return true;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return true;
  }
  return originHost.toLowerCase() !== host.toLowerCase();
}
