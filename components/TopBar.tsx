"use client";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { sendJson } from "@/lib/ui/fetcher";
import type { ReplicaLine } from "@/lib/core/cluster";
import { TimeZoneToggle } from "./TimeZone";

const LINKS = [
  { href: "/", label: "Fleet" },
  { href: "/restarts", label: "Restarts" },
  { href: "/history", label: "History" },
  { href: "/availability", label: "Availability" },
  { href: "/config", label: "Configuration" },
];

export function TopBar({ operator, replica = null }: { operator: string | null; replica?: ReplicaLine | null }) {
  const path = usePathname();
  const router = useRouter();
  async function signOut() {
    await sendJson("/api/session", "DELETE").catch(() => undefined);
    router.refresh();
  }
  return (
    <header className="topbar">
      <Link href="/" className="brand">
        step<span>watch</span>
      </Link>
      <nav className="nav" aria-label="Main">
        {LINKS.map((l) => {
          const active = l.href === "/" ? path === "/" || path.startsWith("/backends") : path.startsWith(l.href);
          return (
            <Link key={l.href} href={l.href} aria-current={active ? "page" : undefined}>
              {l.label}
            </Link>
          );
        })}
      </nav>
      <div className="who">
        {replica && <ReplicaBadge line={replica} />}
        <TimeZoneToggle />
        {operator ? (
          <>
            <Link href="/account" className="muted name" data-testid="operator-name" title="Your sessions">
              {operator}
            </Link>
            <button type="button" className="link" onClick={signOut} data-testid="sign-out">
              Sign out
            </button>
          </>
        ) : (
          <Link href={`/signin?next=${encodeURIComponent(path || "/")}`} data-testid="sign-in-link">
            Sign in
          </Link>
        )}
      </div>
    </header>
  );
}

/** Replicas on PostgreSQL only: which one answered this page, and who leads (the one that acts). */
function ReplicaBadge({ line }: { line: ReplicaLine }) {
  const leads = line.leader === line.answeredBy;
  const text = leads ? `${line.answeredBy} (leader)` : line.leader === undefined ? `${line.answeredBy} · leader unknown` : line.leader === null ? `${line.answeredBy} · no leader` : `${line.answeredBy} · leader ${line.leader}`;
  return (
    <span className="muted replica" data-testid="replica" title="The replica that answered this page, and the one that acts (GET /api/cluster)">
      {text}
    </span>
  );
}
