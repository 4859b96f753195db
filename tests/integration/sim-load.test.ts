import { afterEach, describe, expect, it } from "vitest";
import { startIncidentLoad, type IncidentLoad } from "@/sim/load";
import { startSimulator, type Simulator } from "@/sim/server";
import { waitFor } from "./sim-support";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function sim(): Promise<Simulator> {
  const s = await startSimulator({ weightsLoadSeconds: 0.2 });
  closers.push(() => s.close());
  return s;
}
function load(opts: Parameters<typeof startIncidentLoad>[0]): IncidentLoad {
  const l = startIncidentLoad(opts);
  closers.push(() => l.stop());
  return l;
}

describe("incident load over HTTP", () => {
  it("follows its phases (3 long requests, then the limit of 12) and stops cleanly", async () => {
    const s = await sim();
    const l = load({
      targets: [s.url],
      schedule: [
        { seconds: 1.5, concurrency: 3 },
        { seconds: 60, concurrency: 12 },
      ],
      offsetsSeconds: [0],
      maxTokens: [5000, 5000],
      promptTokens: [100, 100],
      longPromptEvery: 0,
    });
    await waitFor("3 running", () => s.state().running === 3);
    expect(l.stats().desired).toEqual([3]);
    await waitFor("12 running", () => s.state().running === 12);
    expect(s.state().waiting).toBe(0);
    expect(s.received().filter((r) => r.completion)).toHaveLength(12);
    await l.stop();
    expect(l.stats().inFlight).toBe(0);
    // The clients hung up: the server frees their slots.
    await waitFor("the slots to be freed", () => s.state().running === 0);
  });

  it("finishes requests and sends new ones, and retries through a restart", async () => {
    const s = await sim();
    const l = load({
      targets: [s.url],
      schedule: [{ seconds: 60, concurrency: 2 }],
      maxTokens: [2, 3],
      promptTokens: [10, 20],
      retrySeconds: 0.05,
    });
    await waitFor("a finished request", () => l.stats().succeeded >= 2);
    await s.restart();
    await waitFor("failures while it restarts", () => l.stats().failed >= 1);
    await s.whenListening();
    const ok = l.stats().succeeded;
    await waitFor("success after the restart", () => l.stats().succeeded > ok);
  });
});
