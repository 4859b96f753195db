import { describe, expect, it } from "vitest";
import { hashPassword } from "@/lib/auth/password";
import os from "node:os";
import { ConcurrencyGate, DEFAULT_GATE, SignInThrottle, comparisonSlots, defaultGate, failureDelayMs, nameDelayMs } from "@/lib/auth/throttle";
import { signIn, type SignInDeps } from "@/lib/auth/signin";
import type { DomainError } from "@/lib/core/errors";

const FAST = { N: 1 << 10, r: 8, p: 1 };
const W = 60_000;
const codeOf = (p: Promise<unknown>) => p.then(() => "ok", (e: DomainError) => e.code);

describe("SignInThrottle", () => {
  it("keys an IPv6 client by its /64, and counts a recognised device apart from the anonymous limits", () => {
    const t = new SignInThrottle({ perPair: 5, perAddress: 3, perDevice: 2, windowMs: W, maxKeys: 100 });
    for (let i = 1; i <= 3; i++) expect(t.admit(`n${i}`, `2001:db8:7:7::${i}`, i).ok).toBe(true);
    expect(t.admit("n4", "2001:db8:7:7:abcd::1", 4)).toMatchObject({ ok: false, why: "address" });
    expect(t.admit("n4", "2001:db8:7:8::1", 4).ok).toBe(true); // another /64
    // The device's own attempts: not refused by the address's lockout, refused past perDevice.
    expect(t.admitDevice("dev-1", 5).ok).toBe(true);
    expect(t.admitDevice("dev-1", 6).ok).toBe(true);
    expect(t.admitDevice("dev-1", 7)).toMatchObject({ ok: false, why: "device" });
    expect(t.admitDevice("dev-2", 7).ok).toBe(true);
  });

  it("counts an attempt when it is admitted, so the 6th of a pair is refused whatever came back", () => {
    const t = new SignInThrottle({ perPair: 5, perAddress: 20, windowMs: W, maxKeys: 100 });
    for (let i = 0; i < 5; i++) expect(t.admit("ana", "10.0.0.1", i).ok).toBe(true);
    const r = t.admit("ana", "10.0.0.1", 5);
    expect(r).toEqual({ ok: false, why: "pair", retryAfterMs: W - 5 });
    expect(t.admit("ana", "10.0.0.2", 5).ok).toBe(true); // the operator from elsewhere
    expect(t.admit("ana", "10.0.0.1", W).ok).toBe(true); // the first left the window
  });
  it("limits one address across names (a random-name flood)", () => {
    const t = new SignInThrottle({ perPair: 5, perAddress: 3, windowMs: W, maxKeys: 100 });
    for (let i = 0; i < 3; i++) expect(t.admit(`n${i}`, "10.0.0.9", 0).ok).toBe(true);
    expect(t.admit("n9", "10.0.0.9", 1)).toMatchObject({ ok: false, why: "address" });
    expect(t.admit("n9", "10.0.0.8", 1).ok).toBe(true);
  });
  it("never blocks a name: many addresses failing on it only raise its name count", () => {
    const t = new SignInThrottle({ perPair: 5, perAddress: 20, windowMs: W, maxKeys: 10_000 });
    let last = null;
    for (let i = 0; i < 200; i++) last = t.admit("ana", `10.1.${i >> 8}.${i & 255}`, i);
    expect(last).toMatchObject({ ok: true, ticket: { nameAttempts: 199 } });
    expect(nameDelayMs(199)).toBe(1_000);
  });
  it("a right password takes its attempt back and forgets the pair's failures", () => {
    const t = new SignInThrottle({ perPair: 2, perAddress: 20, windowMs: W, maxKeys: 100 });
    expect(t.admit("ana", "a", 0).ok).toBe(true);
    const ok = t.admit("ana", "a", 1);
    if (!ok.ok) throw new Error("admitted expected");
    t.succeed(ok.ticket);
    expect(t.admit("ana", "a", 2).ok).toBe(true);
    expect(t.admit("ana", "a", 3).ok).toBe(true);
    expect(t.admit("ana", "a", 4).ok).toBe(false);
  });
  it("a full table evicts entries without a lockout, never a lockout, and refuses strangers when only lockouts are left", () => {
    const t = new SignInThrottle({ perPair: 2, perAddress: 100, windowMs: W, maxKeys: 6 });
    // ana from 10.0.0.1 is locked out (2 attempts): pair + address + name = 3 keys.
    t.admit("ana", "10.0.0.1", 0);
    t.admit("ana", "10.0.0.1", 1);
    // A flood of random names from other addresses: each needs 3 new keys.
    for (let i = 0; i < 50; i++) t.admit(`rnd${i}`, `10.2.0.${i}`, 2 + i);
    expect(t.size).toBeLessThanOrEqual(6);
    expect(t.admit("ana", "10.0.0.1", 100)).toMatchObject({ ok: false, why: "pair" });
    // Fill the table with lockouts only: strangers are refused, the lockouts stay.
    const full = new SignInThrottle({ perPair: 1, perAddress: 1, windowMs: W, maxKeys: 3 });
    expect(full.admit("x", "1.1.1.1", 0).ok).toBe(true); // pair + address locked, name key
    expect(full.admit("y", "2.2.2.2", 1)).toMatchObject({ ok: false, why: "full" });
    expect(full.admit("x", "1.1.1.1", 2)).toMatchObject({ ok: false, why: "pair" });
    expect(full.admit("y", "2.2.2.2", W + 1).ok).toBe(true); // the window freed them
  });
  it("answers failures later the more there are, capped", () => {
    expect(failureDelayMs(1)).toBeLessThan(failureDelayMs(3));
    expect(failureDelayMs(100)).toBe(3_000);
    expect(nameDelayMs(3)).toBe(0);
  });
});

describe("ConcurrencyGate", () => {
  it("bounds comparisons per name, per address and overall; queues FIFO; gives up past the queue", async () => {
    const g = new ConcurrencyGate({ perName: 1, perAddress: 1, overall: 2, maxQueued: 2, maxWaitMs: 10_000 });
    const a = await g.acquire("ana", "1");
    const b = await g.acquire("bob", "2");
    expect(a && b).toBeTruthy();
    const c = g.acquire("cid", "3"); // overall full: waits
    const d = g.acquire("dan", "4");
    expect(await g.acquire("eve", "5")).toBeNull(); // queue full
    expect(g.load).toEqual({ running: 2, queued: 2 });
    a!();
    const cr = await c;
    expect(cr).toBeTruthy();
    b!();
    expect(await d).toBeTruthy();
    cr!();
    const same = await g.acquire("ANA", "9");
    const sameName = g.acquire("ana", "8"); // per name (case-insensitive)
    expect(g.load.queued).toBe(1);
    same!();
    (await sameName)!();
  });
  it("is sized from the machine: a core for the event loop, a pool thread for DNS and files, never under 2", async () => {
    expect(comparisonSlots(1, 4)).toBe(2);
    expect(comparisonSlots(2, 4)).toBe(2);
    expect(comparisonSlots(4, 4)).toBe(3);
    expect(comparisonSlots(16, 4)).toBe(3);
    expect(comparisonSlots(16, 16)).toBe(15);
    expect(comparisonSlots(8, 64)).toBe(7);
    expect(comparisonSlots(Number.NaN, Number.NaN)).toBe(2);
    expect(defaultGate(16, 16).overall).toBe(15);
    // The process's own gate follows this machine, not a constant.
    expect(DEFAULT_GATE.overall).toBe(comparisonSlots(os.availableParallelism(), Number(process.env.UV_THREADPOOL_SIZE) || 4));
    // And a gate that size really runs that many at once (one name and address each).
    const g = new ConcurrencyGate(defaultGate(16, 16));
    const held = await Promise.all(Array.from({ length: 15 }, (_, i) => g.acquire(`n${i}`, `a${i}`)));
    expect(held.every(Boolean)).toBe(true);
    const next = g.acquire("n15", "a15");
    expect(g.load).toEqual({ running: 15, queued: 1 });
    held[0]!();
    (await next)!();
    for (const r of held.slice(1)) r!();
    expect(g.load).toEqual({ running: 0, queued: 0 });
  });
  it("caps waiters per name and per address, so one name's guessers leave places for others; a recognised device goes first", async () => {
    const g = new ConcurrencyGate({ perName: 1, perAddress: 1, overall: 1, maxQueued: 64, perNameQueued: 3, perAddressQueued: 1, maxWaitMs: 10_000 });
    const held = await g.acquire("ana", "10.0.0.1");
    const guessers = Array.from({ length: 3 }, (_, i) => g.acquire("ana", `10.0.1.${i}`));
    expect(await g.acquire("ana", "10.0.2.1")).toBeNull(); // ana's three places are taken
    expect(await g.acquire("bob", "10.0.1.0")).toBeNull(); // that address already waits once
    const bob = g.acquire("bob", "10.0.3.1"); // another name still gets a place
    // IPv6 counts by its /64: a second address of the same /64 is the same client.
    const v6 = g.acquire("cid", "2001:db8:1:2::1");
    expect(await g.acquire("dan", "2001:db8:1:2::ffff")).toBeNull();
    const device = g.acquire("ana", "10.0.9.9", true); // her device: ahead of every anonymous waiter
    held!();
    const first = await Promise.race([device.then(() => "device"), ...guessers.map((p) => p.then(() => "guesser")), bob.then(() => "bob")]);
    expect(first).toBe("device");
    (await device)!();
    for (const p of [...guessers, bob, v6]) (await p)!();
    expect(g.load).toEqual({ running: 0, queued: 0 });
  });
  it("gives up after maxWaitMs", async () => {
    const g = new ConcurrencyGate({ perName: 1, perAddress: 1, overall: 1, maxQueued: 5, maxWaitMs: 20 });
    const a = await g.acquire("a", "1");
    expect(await g.acquire("b", "2")).toBeNull();
    a!();
  });
});

describe("signIn", () => {
  async function deps(over: Partial<SignInDeps> = {}): Promise<SignInDeps & { slept: number[]; failures: string[] }> {
    const hash = await hashPassword("s3cret", FAST);
    const slept: number[] = [];
    const failures: string[] = [];
    return {
      operators: [{ name: "ana", password: { kind: "scrypt", hash }, role: "operator" }],
      throttle: new SignInThrottle({ perPair: 2, perAddress: 20, windowMs: W, maxKeys: 100 }),
      gate: new ConcurrencyGate(),
      sleep: async (ms: number) => void slept.push(ms),
      onFailure: (n, a, why) => failures.push(`${n}@${a}:${why}`),
      slept,
      failures,
      ...over,
    };
  }

  it("signs in, slows and then rate-limits failures of a pair; the operator from another address still gets in", async () => {
    const d = await deps();
    expect((await signIn({ name: "ana", password: "s3cret", clientAddress: "ip", now: 0 }, d)).name).toBe("ana");
    expect(await codeOf(signIn({ name: "ana", password: "nope", clientAddress: "ip", now: 1 }, d))).toBe("unauthenticated");
    expect(await codeOf(signIn({ name: "bob", password: "nope", clientAddress: "ip", now: 1 }, d))).toBe("unauthenticated");
    expect(await codeOf(signIn({ name: "ana", password: "nope", clientAddress: "ip", now: 2 }, d))).toBe("unauthenticated");
    expect(d.slept).toEqual([failureDelayMs(1), failureDelayMs(1), failureDelayMs(2)]);
    expect(await codeOf(signIn({ name: "ana", password: "s3cret", clientAddress: "ip", now: 3 }, d))).toBe("rate-limited");
    expect(await codeOf(signIn({ name: "ana", password: "s3cret", clientAddress: "other", now: 3 }, d))).toBe("ok");
    expect(d.failures).toEqual(["ana@ip:wrong", "bob@ip:wrong", "ana@ip:wrong", "ana@ip:rate-limited"]);
  });

  it("a burst sent at once is throttled like the same guesses one by one", async () => {
    const d = await deps({ throttle: new SignInThrottle({ perPair: 5, perAddress: 20, windowMs: W, maxKeys: 100 }) });
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => codeOf(signIn({ name: "ana", password: `guess-${i}`, clientAddress: "ip", now: 10 }, d))),
    );
    expect(results.filter((r) => r === "unauthenticated")).toHaveLength(5);
    expect(results.filter((r) => r === "rate-limited")).toHaveLength(95);
  });

  it("never runs more comparisons at once than the gate allows, and uses it", async () => {
    const gate = new ConcurrencyGate({ perName: 1, perAddress: 1, overall: 2, maxQueued: 100, maxWaitMs: 20_000 });
    const d = await deps({ gate, throttle: new SignInThrottle({ perPair: 5, perAddress: 50, windowMs: W, maxKeys: 1000 }) });
    const seen: number[] = [];
    const sampler = setInterval(() => seen.push(gate.load.running), 1);
    try {
      await Promise.all(Array.from({ length: 8 }, (_, i) => codeOf(signIn({ name: `rnd${i}`, password: "x", clientAddress: `10.0.0.${i % 4}`, now: 1 }, d))));
    } finally {
      clearInterval(sampler);
    }
    expect(Math.max(...seen)).toBe(2);
    expect(gate.load).toEqual({ running: 0, queued: 0 });
  });
});
