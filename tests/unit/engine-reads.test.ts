/**
 * How each engine is asked is its adapter's (`reads` in lib/engines/<engine>.ts): lib/check/read.ts
 * runs one sequence for all of them and names none, so a new engine is one adapter file plus the
 * registry. This holds that rule, and checks what every adapter declares is something a read can
 * run: a path, a cap, a parse that answers null (never throws) on a body that is not its engine's.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { READ_DEFAULTS } from "@/lib/check/read";
import type { Ask } from "@/lib/engines/adapter";
import { ADAPTERS } from "@/lib/engines/registry";
import { ENGINE_KINDS } from "@/lib/core/engine";

const READ_SOURCE = readFileSync(new URL("../../lib/check/read.ts", import.meta.url), "utf8");

/** Routes that run a generation (take a request slot): the probe's, never a read's. */
const SLOT_ROUTES = ["/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/generate", "/generate_stream", "/health_generate"];

const HOSTILE_BODIES = ["", "<html>", "null", "[]", "{}", "1", '"x"', '{"version":1}', '{"models":{}}', '{"model_id":null}', '{"__proto__":{"is_sleeping":true}}'];

function asks(kind: (typeof ENGINE_KINDS)[number]): Array<[string, Ask<unknown>]> {
  const r = ADAPTERS[kind].reads;
  const out: Array<[string, Ask<unknown>]> = [];
  if (r.before) out.push(["before", r.before]);
  if (r.whenEmpty) out.push(["whenEmpty", r.whenEmpty]);
  if (r.withoutMetrics) out.push(["liveness", r.withoutMetrics.liveness], ["models", r.withoutMetrics.models]);
  return out;
}

describe("each engine's reads are its adapter's", () => {
  it("lib/check/read.ts names no engine: what an engine adds to a read is declared in its adapter", () => {
    const named = ENGINE_KINDS.filter((kind) => new RegExp(`["'\`]${kind}["'\`]`).test(READ_SOURCE));
    expect(named, "engine-name literals in lib/check/read.ts: declare that engine's part in its adapter's `reads`").toEqual([]);
  });

  it.each(ENGINE_KINDS)("%s declares its exposition, or what is read instead", (kind) => {
    const a = ADAPTERS[kind];
    expect(a.kind).toBe(kind);
    if (a.reads.metricsPath === null) {
      // No exposition: nothing to parse, and the liveness and models reads replace it.
      expect(a.reads.withoutMetrics).toBeDefined();
      expect(a.prefix).toBeNull();
      expect(a.families.size).toBe(0);
    } else {
      expect(a.reads.metricsPath.startsWith("/")).toBe(true);
      expect(a.reads.withoutMetrics).toBeUndefined();
      expect(a.prefix).not.toBeNull();
      expect(a.families.size).toBeGreaterThan(0);
    }
  });

  it.each(ENGINE_KINDS)("%s: every extra GET is a path that takes no slot, capped, parsed without throwing", (kind) => {
    for (const [what, ask] of asks(kind)) {
      expect(ask.path, `${kind} ${what}`).toMatch(/^\/[^?#]*/);
      expect(SLOT_ROUTES, `${kind} ${what} ${ask.path}`).not.toContain(ask.path.split("?")[0]);
      expect(ask.maxBytes, `${kind} ${what}`).toBeGreaterThan(0);
      expect(ask.maxBytes, `${kind} ${what}`).toBeLessThanOrEqual(READ_DEFAULTS.maxBytes);
      for (const body of HOSTILE_BODIES.slice(0, 3)) expect(ask.parse(body), `${kind} ${what} on ${JSON.stringify(body)}`).toBeNull();
      for (const body of HOSTILE_BODIES) expect(() => ask.parse(body), `${kind} ${what} on ${JSON.stringify(body)}`).not.toThrow();
    }
    expect(SLOT_ROUTES).not.toContain(ADAPTERS[kind].rules.livenessPath);
  });

  it("no two engines declare the same known answer, so which engine answered is never a matter of order", () => {
    const answers = ENGINE_KINDS.flatMap((k) => [ADAPTERS[k].reads.loading, ADAPTERS[k].reads.metricsOff])
      .filter((a) => a !== undefined)
      .map((a) => `${a.status} ${a.body?.source ?? "*"}`);
    expect(new Set(answers).size).toBe(answers.length);
  });
});
