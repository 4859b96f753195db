/**
 * The encoded /api/fleet answer is shared for FLEET_JSON_MAX_AGE_MS, unless the watcher's revision
 * moved (an acknowledgement, a maintenance, a restart asked for): then the next request gets the
 * new snapshot and a new ETag at once, so the dashboard's refetch after its POST shows the change.
 */
import { describe, expect, it } from "vitest";
import { cachedEncoding, FLEET_JSON_MAX_AGE_MS } from "@/lib/api/fleet";

describe("the fleet's encoded answer", () => {
  it("is reused inside its age, and re-made when the revision moves or it is too old", async () => {
    let builds = 0;
    let ack: string | null = null;
    let revision = 0;
    const get = cachedEncoding(
      async () => {
        builds++;
        return { acknowledged: ack };
      },
      async () => "one config",
      async () => revision,
    );
    const t = 1_000_000;
    const first = await get(t);
    expect(await get(t + 10)).toBe(first);
    expect(builds).toBe(1);

    // An operator acknowledges: the book's revision moves, the next request sees it.
    ack = "olga";
    revision++;
    const after = await get(t + 20);
    expect(builds).toBe(2);
    expect(after.etag).not.toBe(first.etag);
    expect(JSON.parse(new TextDecoder().decode(after.body))).toEqual({ acknowledged: "olga" });

    // Without a revision change, only age re-makes it.
    expect(await get(t + 30)).toBe(after);
    await get(t + 20 + FLEET_JSON_MAX_AGE_MS);
    expect(builds).toBe(3);
  });
});

describe("one cache per process (shareAs)", () => {
  it("two instances of the same verb (the route's and the fast lane's module) hand out the same bytes", async () => {
    const slot = Symbol("test.sharedFleetJson");
    let builds = 0;
    const build = async (now: number) => {
      builds++;
      return { generatedAt: now };
    };
    const route = cachedEncoding(build, async () => "k", async () => 0, slot);
    const lane = cachedEncoding(build, async () => "k", async () => 0, slot);
    const t = 2_000_000;
    const a = await route(t);
    // Built at another moment, an unshared cache would name other bytes (another generatedAt).
    expect(await lane(t + 5)).toBe(a);
    expect(builds).toBe(1);
    const unshared = cachedEncoding(build, async () => "k");
    expect((await unshared(t + 5)).etag).not.toBe(a.etag);
  });
});
