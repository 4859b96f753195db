/**
 * Where to go after signing in (`/signin?next=...`): only a path on this site. Browsers drop tabs
 * and newlines anywhere in a URL and read "\" as "/", so "/\t/evil.example" or "/\\evil.example"
 * would become "//evil.example", another site. Any control character or backslash is refused
 * outright; what remains must parse, relative to a placeholder origin, to that same origin.
 * The parsed path is checked again: dot segments are resolved by the parse, so "/.//evil.example"
 * comes out as "//evil.example", which a browser reads as another host. The answer is therefore
 * checked as it will be used (one "/", then anything but "/" or "\", and same-origin when parsed
 * again), so one call is enough for any input. Pure (used by the server page and the client form alike).
 */
const BASE = "http://stepwatch.invalid";

/** One "/" and then not a second "/" or "\": a path, never a scheme-relative URL. */
function isPlainPath(p: string): boolean {
  return p === "/" || (p.startsWith("/") && p[1] !== "/" && p[1] !== "\\");
}

export function safeNextPath(v: unknown): string {
  const s = Array.isArray(v) ? v[0] : v;
  if (typeof s !== "string" || s.length === 0 || s.length > 2000) return "/";
  if (/[\u0000-\u0020\u007f\\]/.test(s)) return "/";
  if (!isPlainPath(s)) return "/";
  let u: URL;
  try {
    u = new URL(s, BASE);
  } catch {
    return "/";
  }
  if (u.origin !== BASE) return "/";
  const out = `${u.pathname}${u.search}${u.hash}`;
  if (!isPlainPath(out) || /[\u0000-\u0020\u007f\\]/.test(out)) return "/";
  try {
    if (new URL(out, BASE).origin !== BASE) return "/";
  } catch {
    return "/";
  }
  return out;
}
