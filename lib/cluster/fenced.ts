/**
 * An action write by this replica (a flush, a delivery's mark, a restart's start or result, a
 * retention chunk): fenced by the lease (db/fence.ts fencedTransaction: on PostgreSQL it proves the
 * lease first) unless the gate says no lease exists (`sole`: one process alone, as the features'
 * default and their tests on either engine), then one plain transaction.
 */
import type { Db } from "../../db/types";
import { fencedTransaction, LeaseLostError } from "../../db/fence";
import type { LeaderGate } from "../core/cluster";

export { LeaseLostError };

export function leaderWrite<T>(db: Db, gate: LeaderGate, write: () => T): T {
  if (!gate.sole) return fencedTransaction(db, gate, write);
  if (gate.epoch() === null) throw new LeaseLostError(gate.replicaId, null);
  return db.$client.transaction(write)();
}
