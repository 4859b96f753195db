/**
 * Who is asking, and under which name: the client address (for the sign-in throttle and the audit
 * log), the scheme and host the browser used (for the Origin and Host checks). Headers a client
 * can make up (X-Forwarded-For, -Host, -Proto) are believed only when the request came from an
 * address listed in `server.trustProxy`; otherwise the socket address counts.
 *
 * Next's route handlers do not expose the socket address (Next fills X-Forwarded-For from it only
 * when the client sent none, so a client-sent one survives). `installPeerHeader` (called from
 * instrumentation.ts, same process as the HTTP server under `next start`) stamps every incoming
 * request with PEER_HEADER = the socket's address, after removing any client-sent copy. Without it
 * (another server in front of Next's handler) `peerAddress` is "unknown": one shared bucket, never
 * an address a client chose.
 *
 * Pure apart from installPeerHeader and the process-wide policy holder; no Next imports, so
 * proxy.ts and route handlers share it.
 */
import { BlockList, isIP } from "node:net";

export const PEER_HEADER = "x-stepwatch-peer";
/** "1" when the socket itself is TLS (`next start --experimental-https`, a custom https server). */
export const PEER_TLS_HEADER = "x-stepwatch-peer-tls";

export interface NetPolicyInput {
  /** IP addresses or CIDR ranges ("10.0.0.0/8", "::1") of reverse proxies whose X-Forwarded-* are believed. */
  trustProxy: string[];
  /** Host names (no port) accepted besides IP literals, localhost and publicUrl's host. */
  allowedHosts: string[];
  /** The URL operators open, when configured (its host is accepted; its origin passes the Origin check). */
  publicUrl?: string;
}

export interface NetPolicy {
  trust: BlockList;
  trustList: string[];
  allowedHosts: Set<string>;
  publicHost: string | null;
  publicOrigin: string | null;
}

/** "::ffff:10.0.0.1" is 10.0.0.1; brackets and zone ids are dropped. */
export function normalizeAddress(a: string | null | undefined): string | null {
  if (!a) return null;
  let s = a.trim().replace(/^\[|\]$/g, "");
  const pct = s.indexOf("%");
  if (pct > 0) s = s.slice(0, pct);
  if (/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(s)) s = s.slice(7);
  return isIP(s) ? s.toLowerCase() : null;
}

/** Throws naming the entry when an address or CIDR range does not parse. */
export function buildNetPolicy(input: NetPolicyInput): NetPolicy {
  const trust = new BlockList();
  for (const entry of input.trustProxy) {
    const [addr, bits] = entry.split("/");
    const a = normalizeAddress(addr);
    if (!a) throw new Error(`server.trustProxy: "${entry}" is not an IP address or CIDR range`);
    const type = isIP(a) === 6 ? "ipv6" : "ipv4";
    if (bits === undefined) trust.addAddress(a, type);
    else {
      const n = Number(bits);
      if (!Number.isInteger(n) || n < 0 || n > (type === "ipv6" ? 128 : 32)) throw new Error(`server.trustProxy: "${entry}" has a bad prefix length`);
      trust.addSubnet(a, n, type);
    }
  }
  let publicHost: string | null = null;
  let publicOrigin: string | null = null;
  if (input.publicUrl) {
    const u = new URL(input.publicUrl);
    publicHost = u.hostname.toLowerCase();
    publicOrigin = u.origin.toLowerCase();
  }
  return {
    trust,
    trustList: [...input.trustProxy],
    allowedHosts: new Set(input.allowedHosts.map((h) => h.toLowerCase().replace(/\.$/, ""))),
    publicHost,
    publicOrigin,
  };
}

/** The prefix length of a trustProxy entry ("10.0.0.0/8" 8), the full length for one address, null if it does not parse. */
export function trustRangeBits(entry: string): number | null {
  const [addr, bits] = entry.split("/");
  const a = normalizeAddress(addr);
  if (!a) return null;
  const full = isIP(a) === 6 ? 128 : 32;
  if (bits === undefined) return full;
  const n = Number(bits);
  return Number.isInteger(n) && n >= 0 && n <= full ? n : null;
}

/**
 * A trustProxy entry that lets more than one proxy speak: the loopback (every process on the host),
 * or a range wider than a /24 (IPv4) or a /64 (IPv6). Believing a user header from it needs a proof
 * (auth.proxy.secretHeader); the config says so at start and reload.
 */
export function isLooseTrust(entry: string): boolean {
  const bits = trustRangeBits(entry);
  if (bits === null) return false;
  const a = normalizeAddress(entry.split("/")[0])!;
  const v6 = isIP(a) === 6;
  if (bits < (v6 ? 64 : 24)) return true;
  const range = new BlockList();
  if (bits === (v6 ? 128 : 32)) range.addAddress(a, v6 ? "ipv6" : "ipv4");
  else range.addSubnet(a, bits, v6 ? "ipv6" : "ipv4");
  return v6 ? range.check("::1", "ipv6") : range.check("127.0.0.1", "ipv4") || a.startsWith("127.");
}

/**
 * The key an address is throttled under: an IPv4 address as it is, an IPv6 address by its /64
 * (one subscriber, one LAN: a client that gets a /64 has 2^64 addresses to rotate through, so per
 * address it would never be held back). "unknown" and other non-addresses stay as they are.
 */
export function addressBucket(address: string): string {
  const a = normalizeAddress(address);
  if (!a || isIP(a) !== 6) return a ?? address;
  return `${expandV6(a).slice(0, 4).join(":")}::/64`;
}

/** The eight hextets of an IPv6 address (an embedded IPv4 tail becomes two). */
function expandV6(a: string): string[] {
  let s = a;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (v4) {
    const [b0, b1, b2, b3] = v4.slice(1).map(Number);
    s = `${s.slice(0, v4.index)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const [head, tail] = s.split("::");
  const h = head ? head.split(":") : [];
  const t = tail !== undefined && tail !== "" ? tail.split(":") : [];
  const fill = tail !== undefined ? Array(8 - h.length - t.length).fill("0") : [];
  return [...h, ...fill, ...t].map((x) => (parseInt(x, 16) || 0).toString(16));
}

export function isTrustedProxy(policy: NetPolicy, address: string | null): boolean {
  if (!address || policy.trustList.length === 0) return false;
  return policy.trust.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");
}

/** Minimal view of a request: works with Request, NextRequest and plain header maps. */
export interface HeaderSource {
  get(name: string): string | null;
}

export function peerAddress(headers: HeaderSource): string {
  return normalizeAddress(headers.get(PEER_HEADER)) ?? "unknown";
}

/**
 * The client's address: the socket's, or, when the socket is a trusted proxy, the rightmost
 * X-Forwarded-For entry that is not itself a trusted proxy (entries left of it are the client's
 * own words). A malformed entry ends the walk: the last trusted hop is used.
 */
export function clientAddressOf(headers: HeaderSource, policy: NetPolicy): string {
  const peer = peerAddress(headers);
  if (!isTrustedProxy(policy, peer)) return peer;
  const xff = headers.get("x-forwarded-for");
  if (!xff) return peer;
  let client = peer;
  const hops = xff.split(",").map((s) => s.trim()).reverse();
  for (const hop of hops) {
    const a = normalizeAddress(hop);
    if (!a) break;
    client = a;
    if (!isTrustedProxy(policy, a)) break;
  }
  return client;
}

/** The scheme and host (with port) the browser used: X-Forwarded-* only from a trusted proxy. */
export function requestOrigin(headers: HeaderSource, policy: NetPolicy): { scheme: "http" | "https"; host: string | null } {
  const trusted = isTrustedProxy(policy, peerAddress(headers));
  const first = (v: string | null) => v?.split(",")[0]?.trim().toLowerCase() || null;
  const fwdProto = trusted ? first(headers.get("x-forwarded-proto")) : null;
  // Not the request URL's protocol: Next builds it from X-Forwarded-Proto, which anyone can send.
  const tls = headers.get(PEER_TLS_HEADER) === "1";
  const scheme = fwdProto === "https" || (fwdProto === null && tls) ? "https" : "http";
  const host = (trusted ? first(headers.get("x-forwarded-host")) : null) ?? first(headers.get("host"));
  return { scheme, host };
}

/** The hostname part of a Host header value ("[::1]:3000" -> "::1", "a.b:80" -> "a.b"). */
export function hostnameOf(hostHeader: string): string | null {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end > 0 ? h.slice(1, end) : null;
  }
  const colon = h.lastIndexOf(":");
  const name = colon >= 0 ? h.slice(0, colon) : h;
  return name.replace(/\.$/, "") || null;
}

/**
 * DNS rebinding guard: a page on another site that points its own name at stepwatch's address
 * reaches stepwatch with that name as Host. Only IP literals, localhost, publicUrl's host and
 * server.allowedHosts are served.
 */
export function isAllowedHost(hostHeader: string | null, policy: NetPolicy): boolean {
  if (!hostHeader) return false;
  const name = hostnameOf(hostHeader);
  if (!name) return false;
  if (isIP(name)) return true;
  if (name === "localhost") return true;
  if (policy.publicHost === name) return true;
  return policy.allowedHosts.has(name);
}

/**
 * CSRF guard for state-changing routes: a request whose Origin names another scheme+host than the
 * one this request was made to (or publicUrl's) is refused. No Origin (curl, scripts) passes:
 * they must hold the cookie anyway. "null" (sandboxed frames, some redirects) never passes.
 */
export function isForeignOriginFor(origin: string | null | undefined, headers: HeaderSource, policy: NetPolicy): boolean {
  if (origin === null || origin === undefined || origin === "") return false;
  if (origin === "null") return true;
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return true;
  }
  const given = o.origin.toLowerCase();
  if (policy.publicOrigin && given === policy.publicOrigin) return false;
  const { scheme, host } = requestOrigin(headers, policy);
  if (!host) return true;
  return given !== new URL(`${scheme}://${host}`).origin.toLowerCase();
}

// ---- the process-wide policy (set by lib/runtime from the config; read by proxy.ts and routes) ----

const KEY = Symbol.for("stepwatch.netPolicy");
type Holder = { [KEY]?: NetPolicy };

export function setNetPolicy(p: NetPolicy): void {
  (globalThis as Holder)[KEY] = p;
}

export function currentNetPolicy(): NetPolicy | null {
  return (globalThis as Holder)[KEY] ?? null;
}

const PEER_INSTALLED = Symbol.for("stepwatch.peerHeader");
const LANE = Symbol.for("stepwatch.requestLane");

/**
 * A handler that may answer a request before Next sees it (lib/api/fast-lane.ts). Called with
 * the request already stamped (PEER_HEADER); returns true when it took the request, and then
 * answers it or calls `toNext()` (once, before writing anything) to hand it to Next as if it had
 * never looked. It returns false, or throws, to leave the request to Next at once.
 */
export type RequestLane = (server: object, req: unknown, res: unknown, toNext: () => void) => boolean;

/** Sets (or, with null, removes) the one request lane. */
export function setRequestLane(lane: RequestLane | null): void {
  (globalThis as { [LANE]?: RequestLane | null })[LANE] = lane;
}

/**
 * Stamp every request the process's HTTP(S) servers receive with the socket's address, then offer
 * it to the request lane, if one is set. Patches `emit` of http.Server and https.Server so servers
 * created before this call are covered too (Next creates its server before instrumentation runs).
 * Idempotent.
 */
export async function installPeerHeader(): Promise<void> {
  const g = globalThis as { [PEER_INSTALLED]?: boolean };
  if (g[PEER_INSTALLED]) return;
  g[PEER_INSTALLED] = true;
  const http = await import("node:http");
  const https = await import("node:https");
  for (const proto of [http.Server.prototype, https.Server.prototype] as Array<{ emit: (...a: unknown[]) => boolean }>) {
    const original = proto.emit;
    proto.emit = function (this: unknown, event: unknown, ...args: unknown[]) {
      if (event === "request") {
        const req = args[0] as { headers: Record<string, unknown>; socket?: { remoteAddress?: string; encrypted?: boolean } };
        req.headers[PEER_HEADER] = req.socket?.remoteAddress ?? "";
        req.headers[PEER_TLS_HEADER] = req.socket?.encrypted ? "1" : "0";
        const lane = (globalThis as { [LANE]?: RequestLane | null })[LANE];
        if (lane) {
          try {
            if (lane(this as object, req, args[1], () => void original.call(this, event, ...args))) return true;
          } catch (e) {
            // A lane's failure never loses the request: Next answers it as if there were no lane.
            console.error("stepwatch: the request lane failed; Next answers:", e);
          }
        }
      }
      return original.call(this, event, ...args);
    };
  }
}
