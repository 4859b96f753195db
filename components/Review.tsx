"use client";
/**
 * The pieces the review pages (History, Restarts) and their tables (outages, restarts) share: the
 * backend filter, the error banner, and a log table that says when it is empty and becomes stacked
 * cards on a phone (each cell carries its column's name in data-label).
 */
import Link from "next/link";
import type { ReactNode } from "react";

/** The "Backend" filter: every configured id, or all of them (the empty value). */
export function BackendSelect({
  id,
  value,
  backendIds,
  onChange,
}: {
  /** The select's id, which is also its data-testid. */
  id: string;
  value: string | null;
  backendIds: string[];
  onChange: (backend: string | null) => void;
}) {
  return (
    <div>
      <label htmlFor={id}>Backend</label>
      <select id={id} value={value ?? ""} onChange={(e) => onChange(e.target.value || null)} data-testid={id}>
        <option value="">All backends</option>
        {backendIds.map((b) => (
          <option key={b} value={b}>
            {b}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A failed fetch of the page's data, said in a banner; nothing when there is none. */
export function ErrorBanner({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <div className="banner error" role="alert">
      {(error as Error).message}
    </div>
  );
}

/**
 * A table of events for review. `columns` are the header cells in order; a null one is left out
 * (the Backend column on a backend's own page), as its rows leave out their cell.
 */
export function LogTable({
  testId,
  className,
  columns,
  rows,
  empty,
  children,
}: {
  testId: string;
  className: string;
  columns: Array<string | null>;
  /** How many rows `children` holds; with none, `empty` is shown instead of the table. */
  rows: number;
  empty: { text: string; testId: string };
  children: ReactNode;
}) {
  if (rows === 0) return <p className="empty" data-testid={empty.testId}>{empty.text}</p>;
  return (
    <div className="table-wrap restarts-wrap">
      <table data-testid={testId} className={className}>
        <thead>
          <tr>
            {columns.map((c) => (c === null ? null : <th key={c}>{c}</th>))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The Backend cell: a link to the backend's page (`href` when the link carries a window). */
export function BackendCell({ id, href }: { id: string; href?: string }) {
  return (
    <td data-label="Backend">
      <Link href={href ?? `/backends/${encodeURIComponent(id)}`}>{id}</Link>
    </td>
  );
}
