"use client";
/** In place of an operator's button: who can act, or a link to sign in for someone who has not. */
import Link from "next/link";
import { usePathname } from "next/navigation";
import type { Viewer } from "@/lib/api/types";
import { whoCanAct } from "@/lib/ui/access";

export function WhoCanAct({ viewer, verbs, testId, style }: { viewer: Viewer | null; verbs: string; testId: string; style?: React.CSSProperties }) {
  const path = usePathname();
  return (
    <span className="muted small" style={style} data-testid={testId}>
      {viewer ? (
        whoCanAct(viewer, verbs)
      ) : (
        <>
          <Link href={`/signin?next=${encodeURIComponent(path || "/")}`}>Sign in</Link> as an operator to {verbs}
        </>
      )}
    </span>
  );
}
