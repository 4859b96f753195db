/**
 * A configured URL as it may leave the server (dashboard, API, restart log). Anyone who can reach
 * stepwatch may read those, so the parts of a URL that carry credentials (user:password@, the
 * query with its ?token=, the fragment) are replaced with a visible "***": the reader sees that
 * something is there, not what. Scheme, host, port and path stay, so the target is recognizable.
 */
export const HIDDEN = "***";

export function publicUrl(url: string): string {
  // The config accepts only http(s) URLs. Anything else shows nothing (fail closed): a string
  // that does not parse, or "user:secret ..." that parses as a URL of the scheme "user:".
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return HIDDEN;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return HIDDEN;
  const userinfo = u.username !== "" || u.password !== "";
  if (!userinfo && !u.search && !u.hash) return url;
  // URL adds "/" to a bare host; keep the configured spelling ("http://host:8000") when nothing follows.
  const path = u.pathname === "/" && !u.search && !u.hash ? "" : u.pathname;
  return `${u.protocol}//${userinfo ? `${HIDDEN}@` : ""}${u.host}${path}${u.search ? `?${HIDDEN}` : ""}${u.hash ? `#${HIDDEN}` : ""}`;
}
