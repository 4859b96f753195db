/** The words of on-call: an operator's acknowledgement of a problem, and a maintenance period. */
import type { BackendState } from "./states";

/** "I am on it": stops reminders (and an unattended restart) until the backend is healthy again. */
export interface Acknowledgement {
  id: number;
  backendId: string;
  at: number;
  by: string;
  note: string | null;
  stateAtAck: BackendState;
}


/** The longest maintenance period an operator can start (a week). */
export const MAX_MAINTENANCE_MINUTES = 7 * 24 * 60;

/** A period in which a backend sends nothing and is recommended no restart. */
export interface Maintenance {
  id: number;
  backendId: string;
  startsAt: number;
  endsAt: number;
  by: string;
  note: string | null;
  endedAt: number | null;
  endedBy: string | null;
}

