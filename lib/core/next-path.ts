/**
 * Where to go after signing in (`/signin?next=...`): only a path on this site. Browsers drop tabs
 * and newlines anywhere in a URL and read "\" as "/", so "/\t/evil.example" or "/\\evil.example"
 * would become "//evil.example", another site. Any control character or backslash is refused
 * outright; what remains must parse, relative to a placeholder origin, to that same origin.
 * Pure (used by the server page and the client form alike).
 */
const BASE = "http://stepwatch.invalid";

export function safeNextPath(v: unknown): string {
  const s = Array.isArray(v) ? v[0] : v;
  if (typeof s !== "string" || s.length === 0 || s.length > 2000) return "/";
  if (/[\u0000-\u0020\u007f\\]/.test(s)) return "/";
  if (!s.startsWith("/") || s.startsWith("//")) return "/";
  let u: URL;
  try {
    u = new URL(s, BASE);
  } catch {
    return "/";
  }
  if (u.origin !== BASE) return "/";
  return `${u.pathname}${u.search}${u.hash}`;
}
