/**
 * What the person looking can do, decided once from the role the server page passed down. The API
 * checks the same (requireOperator: 403 for a viewer); this only keeps a viewer from being offered
 * buttons that would answer 403, and tells them who can act instead.
 */
import type { Viewer } from "../api/types";

/** Restart, acknowledge and maintenance are operators' verbs. */
export function canAct(viewer: Viewer | null): boolean {
  return viewer?.role === "operator";
}

/**
 * The line shown where an operator would see the buttons: "operators can restart". A viewer is
 * told the role that can (not a list of names: the config's operators are not a viewer's business);
 * someone not signed in is told to sign in.
 */
export function whoCanAct(viewer: Viewer | null, verbs: string): string {
  if (canAct(viewer)) return "";
  return viewer ? `operators can ${verbs}` : `sign in as an operator to ${verbs}`;
}
