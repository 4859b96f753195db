import { describe, expect, it } from "vitest";
import { AnonymousLedger, type AnonymousEvent } from "@/lib/auth/audit";

/** The ledger with a hand-run timer: rows written, and the flush it asked for. */
function ledger(budget = 3) {
  const rows: AnonymousEvent[] = [];
  const timers: Array<() => void> = [];
  const l = new AnonymousLedger((e) => rows.push(e), { intervalMs: 60_000, budget }, (fn) => timers.push(fn));
  return { l, rows, runTimers: () => timers.splice(0).forEach((f) => f()) };
}
const ev = (address: string, at: number, action: AnonymousEvent["action"] = "signin.refused"): AnonymousEvent => ({ action, actor: "ana", address, detail: "busy", at });

describe("AnonymousLedger (bounded audit of anonymous failures)", () => {
  it("N events from N new addresses in a minute write budget + 1 rows, the last one counting the rest", () => {
    const { l, rows, runTimers } = ledger(3);
    for (let i = 0; i < 1000; i++) l.note(ev(`10.0.${i >> 8}.${i & 255}`, i));
    expect(rows).toHaveLength(3);
    runTimers(); // the minute ends
    expect(rows).toHaveLength(4);
    expect(rows[3]).toMatchObject({ action: "signin.refused", actor: "ana", address: null });
    expect(rows[3].detail).toMatch(/^997 more from 997 address\(es\)/);
  });

  it("one address's repeats in a minute are counted into its next row", () => {
    const { l, rows } = ledger(5);
    for (let i = 0; i < 10; i++) l.note(ev("10.0.0.1", i * 1000));
    expect(rows).toHaveLength(1);
    l.note(ev("10.0.0.1", 61_000));
    expect(rows).toHaveLength(2);
    expect(rows[1].detail).toBe("busy; 9 more since the last line");
  });
});
