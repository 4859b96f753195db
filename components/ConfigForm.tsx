"use client";
/**
 * What the Configuration page's backend and proxy forms share: which target is open, the draft,
 * the answer's problems shown beside the form (each names its field, as the schema writes them),
 * and a page refresh after a change (the server page reads the reloaded config).
 */
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { ApiError, sendJson } from "@/lib/ui/fetcher";

export type TargetKind = "backend" | "proxy";
/** The routes of each list (lib/api/config-edit.ts behind them). */
const ROUTE: Record<TargetKind, string> = { backend: "/api/config/backends", proxy: "/api/config/proxies" };

/** The answer's `problems` (422: "backends[3].labels.Site: ..."), else its message. */
function problemText(e: unknown): string {
  const problems = e instanceof ApiError && Array.isArray(e.details?.problems) ? (e.details.problems as string[]) : null;
  return problems?.length ? problems.join("; ") : (e as Error).message;
}

/**
 * The form's state and its three requests: `save` POSTs a new target or PUTs the one being edited
 * (`body` null: the form found a problem of its own, already shown), `remove` DELETEs after a confirm.
 */
export function useTargetEdit<D>(kind: TargetKind, empty: D) {
  const router = useRouter();
  // null: no form; "": adding; an id: editing that target.
  const [editing, setEditing] = useState<string | null>(null);
  const [draft, setDraft] = useState<D>(empty);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const open = (id: string | null, d: D) => {
    setError(null);
    setEditing(id ?? "");
    setDraft(d);
  };
  async function run(action: () => Promise<unknown>) {
    setBusy(true);
    setError(null);
    try {
      await action();
      setEditing(null);
      router.refresh();
    } catch (e) {
      setError(problemText(e));
    } finally {
      setBusy(false);
    }
  }
  function save(ev: FormEvent, body: Record<string, unknown> | null) {
    ev.preventDefault();
    if (!body) return;
    void run(() => (editing ? sendJson(`${ROUTE[kind]}/${encodeURIComponent(editing)}`, "PUT", body) : sendJson(ROUTE[kind], "POST", body)));
  }
  function remove(id: string) {
    if (!window.confirm(`Remove ${kind} ${id} from the config file? It is no longer watched.`)) return;
    void run(() => sendJson(`${ROUTE[kind]}/${encodeURIComponent(id)}`, "DELETE"));
  }
  return { editing, draft, setDraft, error, setError, busy, open, close: () => setEditing(null), save, remove };
}

/** The section's heading with its count and, for an operator, the Add button; a failed Remove's error under it. */
export function TargetsHeading({ kind, title, count, canEdit, busy, onAdd, error, formOpen }: { kind: TargetKind; title: string; count: number; canEdit: boolean; busy: boolean; onAdd: () => void; error: string | null; formOpen: boolean }) {
  return (
    <>
      <h2>
        {title} ({count}){" "}
        {canEdit ? (
          <button type="button" onClick={onAdd} disabled={busy} data-testid={`${kind}-add`}>
            Add {kind}
          </button>
        ) : null}
      </h2>
      {canEdit && !formOpen ? <FormError error={error} testId={`${kind}-form-error`} /> : null}
    </>
  );
}

export function TextField({ name, label, value, onChange, hint, disabled, testId, lines }: { name: string; label: string; value: string; onChange: (v: string) => void; hint?: string; disabled?: boolean; testId: string; lines?: number }) {
  return (
    <div className="field">
      <label htmlFor={name}>{label}</label>
      {lines ? (
        <textarea id={name} rows={lines} value={value} placeholder={hint} disabled={disabled} data-testid={testId} onChange={(e) => onChange(e.target.value)} />
      ) : (
        <input id={name} type="text" value={value} placeholder={hint} disabled={disabled} data-testid={testId} onChange={(e) => onChange(e.target.value)} />
      )}
    </div>
  );
}

export function FormError({ error, testId }: { error: string | null; testId: string }) {
  return error ? (
    <p className="form-error" role="alert" data-testid={testId}>
      {error}
    </p>
  ) : null;
}

/** Save and Cancel under a form. */
export function FormButtons({ busy, onCancel, testId }: { busy: boolean; onCancel: () => void; testId: string }) {
  return (
    <>
      <button type="submit" className="primary" disabled={busy} data-testid={testId}>
        {busy ? "Saving…" : "Save"}
      </button>{" "}
      <button type="button" onClick={onCancel} disabled={busy}>
        Cancel
      </button>
    </>
  );
}

/** Edit and Remove in a target's row. */
export function RowActions({ busy, onEdit, onRemove, kind, id }: { busy: boolean; onEdit: () => void; onRemove: () => void; kind: TargetKind; id: string }) {
  return (
    <td style={{ whiteSpace: "nowrap" }}>
      <button type="button" className="link" onClick={onEdit} disabled={busy} data-testid={`${kind}-edit-${id}`}>
        Edit
      </button>{" "}
      <button type="button" className="link" onClick={onRemove} disabled={busy} data-testid={`${kind}-remove-${id}`}>
        Remove
      </button>
    </td>
  );
}
