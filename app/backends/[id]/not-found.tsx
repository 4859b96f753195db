import Link from "next/link";
import { UnknownBackendId } from "@/components/UnknownBackendId";
import { getRuntime } from "@/lib/runtime";

/** A mistyped or removed backend id (HTTP 404): say so and list the backends that exist. */
export default async function UnknownBackend() {
  let known: string[] = [];
  try {
    known = (await getRuntime()).config.backends.map((b) => b.id);
  } catch {
    // No runtime: the list stays empty and the page still says what happened.
  }
  return (
    <div className="panel unknown-backend" data-testid="unknown-backend">
      <h1>
        <UnknownBackendId />
      </h1>
      <p className="muted">stepwatch watches no backend with this id. It may have been removed from the configuration, or the link is mistyped.</p>
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
