/**
 * The query of GET /api/backends/{id}/history (`from`, `to`: ms since epoch; the last hour by
 * default), read the same way by the route and by the fast lane (lib/api/fast-lane.ts).
 */
import { z } from "zod";
import { DomainError } from "../core/errors";

const HOUR = 3600_000;
const ms = z.coerce.number().int().nonnegative();
const Query = z
  .object({ from: ms.optional(), to: ms.optional() })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, { message: "from must be before to", path: ["from"] });

/** The range asked for; a DomainError "bad-request" naming the field otherwise. */
export function historyRange(sp: URLSearchParams, now: number = Date.now()): { from: number; to: number } {
  const q = Query.safeParse({ from: sp.get("from") ?? undefined, to: sp.get("to") ?? undefined });
  if (!q.success) {
    const i = q.error.issues[0];
    throw new DomainError("bad-request", `${i.path.join(".") || "query"}: ${i.message}`);
  }
  const to = q.data.to ?? now;
  const from = q.data.from ?? to - HOUR;
  if (from >= to) throw new DomainError("bad-request", "from: from must be before to");
  return { from, to };
}
