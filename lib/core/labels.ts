/**
 * A backend's labels (`backends[].labels` in the config: site, GPU type, team): the words the
 * config's schema checks, the fleet answer carries and the fleet page filters and groups by
 * (lib/ui/fleet.ts reads `?label=site:ams`, so the limits live here, below both).
 */
export type Labels = Record<string, string>;

/** Prometheus-label-safe, lower case: one spelling per key, and `key:value` in a URL splits at the first colon. */
export const LABEL_KEY_RE = /^[a-z][a-z0-9_]{0,31}$/;
/** A value is shown on a card and in a group heading: short. */
export const LABEL_VALUE_MAX = 64;
/** Every label of every backend rides in each fleet answer (500 backends): a few per backend. */
export const LABELS_MAX = 16;
