"use client";
/**
 * The Configuration page's backends, and for an operator Add / Edit / Remove: each goes to
 * /api/config/backends, which writes the config file and reloads it. A secret is asked only as
 * `env:NAME` (the server refuses a value, and the page never has one to show).
 */
import { ENGINE_CHOICES } from "@/lib/core/engine";
import { PROBE_CHOICES } from "@/lib/core/types";
import type { ConfigView } from "@/lib/api/types";
import { labelsText, parseLabelsText } from "@/lib/ui/config-form";
import { FormButtons, FormError, RowActions, TargetsHeading, TextField, useTargetEdit } from "./ConfigForm";

type Backend = ConfigView["backends"][number];
interface Draft {
  id: string;
  url: string;
  model: string;
  engine: string;
  probe: string;
  apiKey: string;
  /** One `key:value` per line. */
  labels: string;
}

const EMPTY: Draft = { id: "", url: "", model: "", engine: "auto", probe: "auto", apiKey: "", labels: "" };

function draftOf(b: Backend): Draft {
  // A key written as a value in the file shows as "***": the form starts empty, asking for env:NAME.
  return { id: b.id, url: b.url, model: b.model ?? "", engine: b.engine, probe: b.probe, apiKey: b.apiKey?.startsWith("env:") ? b.apiKey : "", labels: labelsText(b.labels) };
}

/**
 * The backend object as the config file holds it; empty optional fields are left out. Labels
 * emptied in an edit are sent as null, which removes them (a PUT that names none keeps the file's).
 */
function bodyOf(d: Draft, labels: Record<string, string>, editing: boolean): Record<string, unknown> {
  const anyLabel = Object.keys(labels).length > 0;
  return {
    id: d.id.trim(),
    url: d.url.trim(),
    ...(d.model.trim() ? { model: d.model.trim() } : {}),
    engine: d.engine,
    probe: d.probe,
    ...(d.apiKey.trim() ? { apiKey: d.apiKey.trim() } : {}),
    ...(anyLabel ? { labels } : editing ? { labels: null } : {}),
  };
}

function restartText(r: Backend["restart"]): string {
  if (r === null) return "none";
  if (r.kind === "command") return `command: ${r.command.join(" ")} (timeout ${r.timeoutSeconds} s)`;
  const headers = Object.entries(r.headers);
  return `webhook: ${r.method} ${r.url}${headers.length ? ` headers ${headers.map(([h, v]) => `${h}: ${v}`).join(", ")}` : ""} (timeout ${r.timeoutSeconds} s)`;
}

export function ConfigBackends({ backends, canEdit }: { backends: Backend[]; canEdit: boolean }) {
  const { editing, draft, setDraft, error, setError, busy, open, close, save, remove } = useTargetEdit<Draft>("backend", EMPTY);
  /** The body to send, or null when the labels cannot be read (said beside the form). */
  function checkedBody(): Record<string, unknown> | null {
    const { labels, problems } = parseLabelsText(draft.labels);
    if (problems.length) {
      setError(problems.join("; "));
      return null;
    }
    return bodyOf(draft, labels, editing !== "");
  }
  const field = (k: Exclude<keyof Draft, "engine" | "probe">, label: string, hint?: string, lines?: number) => (
    <TextField name={`backend-${k}`} label={label} value={draft[k]} hint={hint} lines={lines} disabled={k === "id" && editing !== ""} testId={`backend-form-${k}`} onChange={(v) => setDraft({ ...draft, [k]: v })} />
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
      <TargetsHeading kind="backend" title="Backends" count={backends.length} canEdit={canEdit} busy={busy} onAdd={() => open(null, EMPTY)} error={error} formOpen={editing !== null} />
      {canEdit && editing !== null ? (
        <form className="panel" onSubmit={(ev) => save(ev, checkedBody())} data-testid="backend-form">
          <h3>{editing ? `Edit ${editing}` : "Add a backend"}</h3>
          {field("id", "id", "gpu-1")}
          {field("url", "URL", "http://10.0.0.5:8000")}
          {field("model", "model (optional)", "from /v1/models")}
          {choice("engine", ENGINE_CHOICES)}
          {choice("probe", PROBE_CHOICES)}
          {field("apiKey", "API key (optional): env:NAME of a key variable the file already uses", "env:VLLM_API_KEY")}
          {field("labels", "labels (optional): one key:value per line, to filter and group the fleet by", "site:ams\ngpu:h100", 3)}
          <p className="muted small">The restart action is kept as the file has it: a restart action, or a new secret variable, is set in the file.</p>
          <FormError error={error} testId="backend-form-error" />
          <FormButtons busy={busy} onCancel={close} testId="backend-save" />
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
              <th>labels</th>
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
                <td data-testid={`config-labels-${b.id}`}>
                  {Object.keys(b.labels).length ? (
                    <span className="chips">
                      {labelsText(b.labels)
                        .split("\n")
                        .map((l) => (
                          <span className="chip" key={l}>
                            {l}
                          </span>
                        ))}
                    </span>
                  ) : (
                    <span className="muted">none</span>
                  )}
                </td>
                <td className="mono small">{restartText(b.restart)}</td>
                {canEdit ? <RowActions busy={busy} onEdit={() => open(b.id, draftOf(b))} onRemove={() => remove(b.id)} kind="backend" id={b.id} /> : null}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
