/**
 * The one error type the domain throws on purpose. Route handlers catch it and map the code to an
 * HTTP status in `httpStatus` (one place), so a new code is one line here.
 */
export type DomainErrorCode =
  | "bad-request" // malformed JSON, wrong types
  | "unauthenticated" // no or expired session
  | "forbidden" // foreign Origin
  | "not-found" // unknown backend id
  | "conflict" // a restart is pending, or the cooldown is running
  | "confirmation-required" // a healthy backend's id was not typed
  | "invalid-config" // a config reload found problems (the running config stays)
  | "too-large" // request body over the cap
  | "unsupported-media-type" // a JSON route sent something that does not say application/json
  | "rate-limited" // too many sign-in attempts
  | "not-configured" // no restart action for this backend
  | "unavailable"; // storage down

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "DomainError";
  }
}

export function httpStatus(code: DomainErrorCode): number {
  switch (code) {
    case "bad-request":
      return 400;
    case "unauthenticated":
      return 401;
    case "forbidden":
      return 403;
    case "not-found":
      return 404;
    case "conflict":
      return 409;
    case "too-large":
      return 413;
    case "unsupported-media-type":
      return 415;
    case "confirmation-required":
    case "invalid-config":
      return 422;
    case "rate-limited":
      return 429;
    case "not-configured":
      return 501;
    case "unavailable":
      return 503;
  }
}
