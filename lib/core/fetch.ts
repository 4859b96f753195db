/**
 * How a fetch ended. Connection-level failures are kept apart because "down" is decided from
 * them (refused/reset on two reads), while a timeout only means "slow" until stuckAfterSeconds.
 */
export type FetchOutcome =
  | "ok"
  | "refused" // ECONNREFUSED: nothing listens (vLLM loading weights, or dead)
  | "reset" // connection reset / closed mid-answer
  | "timeout" // connect, headers or body timeout
  | "http-error" // answered with a non-2xx status
  | "too-large" // the body passed the size cap
  | "error"; // anything else (DNS, TLS, redirect refused...)
