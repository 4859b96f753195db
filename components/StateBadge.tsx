import type { BackendState, ProxyState } from "@/lib/core/states";
import { PROXY_TONE, STATE_TONE, stateLabel } from "@/lib/ui/state";

/** Colour AND words: the label is always there, the colour only helps. */
export function StateBadge({ state, testId }: { state: BackendState; testId?: string }) {
  return (
    <span className={`badge tone-${STATE_TONE[state]}`} data-testid={testId} data-state={state}>
      {stateLabel(state)}
    </span>
  );
}

export function ProxyBadge({ state }: { state: ProxyState }) {
  return (
    <span className={`badge tone-${PROXY_TONE[state]}`} data-state={state}>
      {state === "up" ? "Up" : state === "down" ? "Down" : "Unknown"}
    </span>
  );
}
