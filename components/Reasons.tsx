import type { CSSProperties } from "react";
import type { Reason } from "@/lib/core/types";

/** A verdict's reasons as a person reads them: the words, with the rule id that fired on each line (`data-rule`). */
export function ReasonList({ reasons, testId, style }: { reasons: readonly Reason[]; testId?: string; style?: CSSProperties }) {
  return (
    <ul className="reasons" data-testid={testId} style={style}>
      {reasons.map((r, i) => (
        <li key={i} data-rule={r.rule}>
          {r.text}
        </li>
      ))}
    </ul>
  );
}
