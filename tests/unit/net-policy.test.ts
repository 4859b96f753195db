import { describe, expect, it } from "vitest";
import { PEER_HEADER, PEER_TLS_HEADER, buildNetPolicy, clientAddressOf, isAllowedHost, isForeignOriginFor, normalizeAddress, requestOrigin } from "@/lib/net/net-policy";
import { safeNextPath } from "@/lib/core/next-path";
import { capList, capText, countOf, namesOf } from "@/lib/core/caps";

const h = (o: Record<string, string>) => new Headers(o);
const none = buildNetPolicy({ trustProxy: [], allowedHosts: [] });
const proxied = buildNetPolicy({ trustProxy: ["127.0.0.3", "10.0.0.0/8"], allowedHosts: ["stepwatch.example.internal"], publicUrl: "https://ops.example.com" });

describe("client address", () => {
  it("is the socket's unless the socket is a trusted proxy", () => {
    expect(clientAddressOf(h({ [PEER_HEADER]: "127.0.0.1", "x-forwarded-for": "6.6.6.6" }), none)).toBe("127.0.0.1");
    expect(clientAddressOf(h({ [PEER_HEADER]: "::ffff:127.0.0.1" }), none)).toBe("127.0.0.1");
    expect(clientAddressOf(h({ "x-forwarded-for": "6.6.6.6" }), none)).toBe("unknown"); // never a made-up one
    expect(clientAddressOf(h({ [PEER_HEADER]: "127.0.0.3", "x-forwarded-for": "6.6.6.6, 192.0.2.7" }), proxied)).toBe("192.0.2.7");
    // Trusted hops on the right are skipped; what the client wrote on the left is not believed.
    expect(clientAddressOf(h({ [PEER_HEADER]: "127.0.0.3", "x-forwarded-for": "6.6.6.6, 192.0.2.7, 10.1.2.3" }), proxied)).toBe("192.0.2.7");
    expect(clientAddressOf(h({ [PEER_HEADER]: "127.0.0.3", "x-forwarded-for": "garbage" }), proxied)).toBe("127.0.0.3");
    expect(clientAddressOf(h({ [PEER_HEADER]: "127.0.0.4", "x-forwarded-for": "6.6.6.6" }), proxied)).toBe("127.0.0.4");
  });
  it("normalizes and refuses non-addresses", () => {
    expect(normalizeAddress("[::1]")).toBe("::1");
    expect(normalizeAddress("fe80::1%eth0")).toBe("fe80::1");
    expect(normalizeAddress("evil")).toBeNull();
    expect(() => buildNetPolicy({ trustProxy: ["not-an-ip"], allowedHosts: [] })).toThrow(/trustProxy/);
    expect(() => buildNetPolicy({ trustProxy: ["10.0.0.0/33"], allowedHosts: [] })).toThrow(/prefix/);
  });
});

describe("Host check (DNS rebinding)", () => {
  it.each([
    ["127.0.0.1:3000", true],
    ["[::1]:3000", true],
    ["localhost:3000", true],
    ["ops.example.com", true],
    ["STEPWATCH.example.internal:443", true],
    ["evil.example", false],
    ["localhost.evil.example", false],
    ["127.0.0.1.nip.io", false],
    ["", false],
  ])("%s -> %s", (host, ok) => expect(isAllowedHost(host, proxied)).toBe(ok));
  it("no Host at all is refused", () => expect(isAllowedHost(null, none)).toBe(false));
});

describe("Origin check", () => {
  const base = { [PEER_HEADER]: "127.0.0.1", host: "127.0.0.1:3000" };
  it("compares scheme and host", () => {
    expect(isForeignOriginFor(null, h(base), none)).toBe(false);
    expect(isForeignOriginFor("http://127.0.0.1:3000", h(base), none)).toBe(false);
    expect(isForeignOriginFor("https://127.0.0.1:3000", h(base), none)).toBe(true);
    expect(isForeignOriginFor("http://evil.example", h(base), none)).toBe(true);
    expect(isForeignOriginFor("null", h(base), none)).toBe(true);
    expect(isForeignOriginFor("http://127.0.0.1:3000", h({ [PEER_HEADER]: "127.0.0.1" }), none)).toBe(true);
  });
  it("believes X-Forwarded-Host/-Proto only from a trusted proxy", () => {
    const fwd = { "x-forwarded-host": "evil.example", "x-forwarded-proto": "https", host: "127.0.0.1:3000" };
    expect(isForeignOriginFor("https://evil.example", h({ ...fwd, [PEER_HEADER]: "127.0.0.1" }), proxied)).toBe(true);
    expect(isForeignOriginFor("https://evil.example", h({ ...fwd, [PEER_HEADER]: "127.0.0.3" }), proxied)).toBe(false);
    expect(requestOrigin(h({ ...fwd, [PEER_HEADER]: "127.0.0.1" }), proxied)).toEqual({ scheme: "http", host: "127.0.0.1:3000" });
    expect(requestOrigin(h({ host: "x", [PEER_HEADER]: "127.0.0.1", [PEER_TLS_HEADER]: "1" }), none).scheme).toBe("https");
    // publicUrl's origin is always ours.
    expect(isForeignOriginFor("https://ops.example.com", h(base), proxied)).toBe(false);
  });
});

describe("safeNextPath (open redirect after sign-in)", () => {
  it.each([
    ["/backends/a?x=1#h", "/backends/a?x=1#h"],
    ["/", "/"],
    ["//evil.example/x", "/"],
    ["/\t/evil.example/x", "/"],
    ["/\n/evil.example", "/"],
    ["/\\evil.example", "/"],
    ["\\/evil.example", "/"],
    ["https://evil.example", "/"],
    [" /x", "/"],
    ["javascript:alert(1)", "/"],
    ["/%2F%2Fevil.example", "/%2F%2Fevil.example"],
    [["/restarts", "//evil"], "/restarts"],
    [undefined, "/"],
  ] as Array<[unknown, string]>)("%j -> %s", (v, want) => expect(safeNextPath(v)).toBe(want));
});

describe("caps on what a backend sends", () => {
  it("keeps the first items and says how many more", () => {
    const names = Array.from({ length: 30_000 }, (_, i) => `m-${i}`);
    const c = capList(names);
    expect(c).toHaveLength(17);
    expect(c[16]).toBe("… and 29984 more");
    expect(countOf(c)).toBe(30_000);
    expect(namesOf(c)).toHaveLength(16);
    expect(capList(["a", "b"])).toEqual(["a", "b"]);
    expect(countOf(["a", "b"])).toBe(2);
    expect(capList(["x".repeat(10_000)])[0].length).toBeLessThan(300);
    expect(capText("y".repeat(600))).toMatch(/… \(100 more characters\)$/);
  });
});
