"use client";
/**
 * The Configuration page's backends, and for an operator Add / Edit / Remove: each goes to
 * /api/config/backends, which writes the config file and reloads it. A secret is asked only as
 * `env:NAME` (the server refuses a value, and the page never has one to show).
 */
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { ENGINE_CHOICES } from "@/lib/core/engine";
import { PROBE_CHOICES } from "@/lib/core/types";
import type { ConfigView } from "@/lib/api/types";
import { ApiError, sendJson } from "@/lib/ui/fetcher";

type Backend = ConfigView["backends"][number];
interface Draft {
  id: string;
  url: string;
  model: string;
  engine: string;
  probe: string;
  apiKey: string;
}

const EMPTY: Draft = { id: "", url: "", model: "", engine: "auto", probe: "auto", apiKey: "" };

function draftOf(b: Backend): Draft {
  // A key written as a value in the file shows as "***": the form starts empty, asking for env:NAME.
  return { id: b.id, url: b.url, model: b.model ?? "", engine: b.engine, probe: b.probe, apiKey: b.apiKey?.startsWith("env:") ? b.apiKey : "" };
}

/** The backend object as the config file holds it; empty optional fields are left out. */
function bodyOf(d: Draft): Record<string, unknown> {
  return {
    id: d.id.trim(),
    url: d.url.trim(),
    ...(d.model.trim() ? { model: d.model.trim() } : {}),
    engine: d.engine,
    probe: d.probe,
    ...(d.apiKey.trim() ? { apiKey: d.apiKey.trim() } : {}),
  };
}

function restartText(r: Backend["restart"]): string {
  if (r === null) return "none";
  if (r.kind === "command") return `command: ${r.command.join(" ")} (timeout ${r.timeoutSeconds} s)`;
  const headers = Object.entries(r.headers);
  return `webhook: ${r.method} ${r.url}${headers.length ? ` headers ${headers.map(([h, v]) => `${h}: ${v}`).join(", ")}` : ""} (timeout ${r.timeoutSeconds} s)`;
}

export function ConfigBackends({ backends, canEdit }: { backends: Backend[]; canEdit: boolean }) {
  const router = useRouter();
  // null: no form; "" : adding; an id: editing that backend.
  const [editing, setEditing] = useState<string | null>(null);
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const open = (b: Backend | null) => {
    setError(null);
    setEditing(b ? b.id : "");
    setDraft(b ? draftOf(b) : EMPTY);
  };
  async function run(action: () => Promise<unknown>) {
    setBusy(true);
    setError(null);
    try {
      await action();
      setEditing(null);
      router.refresh();
    } catch (e) {
      const problems = e instanceof ApiError && Array.isArray(e.details?.problems) ? (e.details.problems as string[]) : null;
      setError(problems?.length ? problems.join("; ") : (e as Error).message);
    } finally {
      setBusy(false);
    }
  }
  function save(ev: FormEvent) {
    ev.preventDefault();
    void run(() => (editing ? sendJson(`/api/config/backends/${encodeURIComponent(editing)}`, "PUT", bodyOf(draft)) : sendJson("/api/config/backends", "POST", bodyOf(draft))));
  }
  function remove(id: string) {
    if (!window.confirm(`Remove backend ${id} from the config file? It is no longer watched.`)) return;
    void run(() => sendJson(`/api/config/backends/${encodeURIComponent(id)}`, "DELETE"));
  }
  const field = (k: keyof Draft, label: string, hint?: string) => (
    <div className="field">
      <label htmlFor={`backend-${k}`}>{label}</label>
      <input id={`backend-${k}`} type="text" value={draft[k]} disabled={k === "id" && editing !== ""} placeholder={hint} data-testid={`backend-form-${k}`} onChange={(e) => setDraft({ ...draft, [k]: e.target.value })} />
    </div>
  );
  const choice = (k: "engine" | "probe", options: readonly string[]) => (
    <div className="field">
      <label htmlFor={`backend-${k}`}>{k}</label>
      <select id={`backend-${k}`} value={draft[k]} data-testid={`backend-form-${k}`} onChange={(e) => setDraft({ ...draft, [k]: e.target.value })}>
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </div>
  );

  return (
    <section className="section">
      <h2>
        Backends ({backends.length}){" "}
        {canEdit ? (
          <button type="button" onClick={() => open(null)} disabled={busy} data-testid="backend-add">
            Add backend
          </button>
        ) : null}
      </h2>
      {canEdit && editing === null && error ? (
        <p className="form-error" role="alert" data-testid="backend-form-error">
          {error}
        </p>
      ) : null}
      {canEdit && editing !== null ? (
        <form className="panel" onSubmit={save} data-testid="backend-form">
          <h3>{editing ? `Edit ${editing}` : "Add a backend"}</h3>
          {field("id", "id", "gpu-1")}
          {field("url", "URL", "http://10.0.0.5:8000")}
          {field("model", "model (optional)", "from /v1/models")}
          {choice("engine", ENGINE_CHOICES)}
          {choice("probe", PROBE_CHOICES)}
          {field("apiKey", "API key (optional): env:NAME of a key variable the file already uses", "env:VLLM_API_KEY")}
          <p className="muted small">The restart action is kept as the file has it: a restart action, or a new secret variable, is set in the file.</p>
          {error ? (
            <p className="form-error" role="alert" data-testid="backend-form-error">
              {error}
            </p>
          ) : null}
          <button type="submit" className="primary" disabled={busy} data-testid="backend-save">
            {busy ? "Saving…" : "Save"}
          </button>{" "}
          <button type="button" onClick={() => setEditing(null)} disabled={busy}>
            Cancel
          </button>
        </form>
      ) : null}
      <div className="table-wrap">
        <table data-testid="config-backends">
          <thead>
            <tr>
              <th>id</th>
              <th>URL</th>
              <th>model</th>
              <th>engine</th>
              <th>probe</th>
              <th>API key</th>
              <th>restart</th>
              {canEdit ? <th></th> : null}
            </tr>
          </thead>
          <tbody>
            {backends.map((b) => (
              <tr key={b.id} data-testid={`config-backend-${b.id}`}>
                <td style={{ whiteSpace: "nowrap" }}>{b.id}</td>
                <td className="mono">{b.url}</td>
                <td>{b.model ?? "from /v1/models"}</td>
                <td>{b.engine}</td>
                <td>{b.probe}</td>
                <td className="mono">{b.apiKey ?? "none"}</td>
                <td className="mono small">{restartText(b.restart)}</td>
                {canEdit ? (
                  <td style={{ whiteSpace: "nowrap" }}>
                    <button type="button" className="link" onClick={() => open(b)} disabled={busy} data-testid={`backend-edit-${b.id}`}>
                      Edit
                    </button>{" "}
                    <button type="button" className="link" onClick={() => remove(b.id)} disabled={busy} data-testid={`backend-remove-${b.id}`}>
                      Remove
                    </button>
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
