import type { Metadata } from "next";
import Link from "next/link";
import { BackendView } from "@/components/BackendView";
import { currentOperatorName } from "@/lib/auth/server";
import { getRuntime } from "@/lib/runtime";
import { parseRange, parseWindow } from "@/lib/ui/chart";

export const dynamic = "force-dynamic";

type Props = { params: Promise<{ id: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> };

const one = (v: string | string[] | undefined): string | null => (typeof v === "string" ? v : null);

async function knownIds(): Promise<string[]> {
  return (await getRuntime()).config.backends.map((b) => b.id);
}

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const id = decodeURIComponent((await params).id);
  return { title: (await knownIds()).includes(id) ? id : "Unknown backend" };
}

/** A mistyped or removed id: say so and list the backends that exist, instead of a bare 404. */
function UnknownBackend({ id, known }: { id: string; known: string[] }) {
  return (
    <div className="panel unknown-backend" data-testid="unknown-backend">
      <h1>No backend named “{id}”</h1>
      <p className="muted">
        stepwatch watches no backend with this id. It may have been removed from the configuration, or the link is mistyped.
      </p>
      {known.length ? (
        <>
          <h2>Known backends</h2>
          <ul data-testid="known-backends">
            {known.map((k) => (
              <li key={k}>
                <Link href={`/backends/${encodeURIComponent(k)}`}>{k}</Link>
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p>No backends are configured.</p>
      )}
      <p>
        <Link href="/">← Fleet</Link>
      </p>
    </div>
  );
}

export default async function BackendPage({ params, searchParams }: Props) {
  const id = decodeURIComponent((await params).id);
  const known = await knownIds();
  if (!known.includes(id)) return <UnknownBackend id={id} known={known} />;
  const sp = await searchParams;
  return (
    <BackendView
      id={id}
      initialRange={parseRange(one(sp.range))}
      initialWindow={parseWindow(one(sp.from), one(sp.to))}
      operator={await currentOperatorName()}
    />
  );
}
