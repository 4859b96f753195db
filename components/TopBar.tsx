"use client";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { sendJson } from "@/lib/ui/fetcher";
import { TimeZoneToggle } from "./TimeZone";

const LINKS = [
  { href: "/", label: "Fleet" },
  { href: "/restarts", label: "Restarts" },
  { href: "/history", label: "History" },
  { href: "/availability", label: "Availability" },
  { href: "/config", label: "Configuration" },
];

export function TopBar({ operator }: { operator: string | null }) {
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
