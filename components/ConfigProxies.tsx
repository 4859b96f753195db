"use client";
/**
 * The Configuration page's proxies, and for an operator Add / Edit / Remove: each goes to
 * /api/config/proxies, which validates with the config's schema, writes the file and reloads it,
 * as the backends' form does (components/ConfigBackends.tsx). A key only as `env:NAME`.
 */
import type { ConfigView } from "@/lib/api/types";
import { parseIdList } from "@/lib/ui/config-form";
import { FormButtons, FormError, RowActions, TargetsHeading, TextField, useTargetEdit } from "./ConfigForm";

type Proxy = ConfigView["proxies"][number];
interface Draft {
  id: string;
  url: string;
  apiKey: string;
  /** The ids of the backends it fronts, as typed ("gpu-1, gpu-2"). */
  backends: string;
}

const EMPTY: Draft = { id: "", url: "", apiKey: "", backends: "" };

function draftOf(p: Proxy): Draft {
  return { id: p.id, url: p.url, apiKey: p.apiKey?.startsWith("env:") ? p.apiKey : "", backends: p.backends.join(", ") };
}

/** The proxy object as the config file holds it; empty optional fields are left out. */
function bodyOf(d: Draft): Record<string, unknown> {
  const backends = parseIdList(d.backends);
  return {
    id: d.id.trim(),
    url: d.url.trim(),
    ...(d.apiKey.trim() ? { apiKey: d.apiKey.trim() } : {}),
    ...(backends.length ? { backends } : {}),
  };
}

export function ConfigProxies({ proxies, canEdit }: { proxies: Proxy[]; canEdit: boolean }) {
  const { editing, draft, setDraft, error, busy, open, close, save, remove } = useTargetEdit<Draft>("proxy", EMPTY);
  // Nothing to show and nothing to do: a viewer of a config without proxies sees no section.
  if (!proxies.length && !canEdit) return null;

  const field = (k: keyof Draft, label: string, hint?: string) => (
    <TextField name={`proxy-${k}`} label={label} value={draft[k]} hint={hint} disabled={k === "id" && editing !== ""} testId={`proxy-form-${k}`} onChange={(v) => setDraft({ ...draft, [k]: v })} />
  );

  return (
    <section className="section">
      <TargetsHeading kind="proxy" title="Proxies" count={proxies.length} canEdit={canEdit} busy={busy} onAdd={() => open(null, EMPTY)} error={error} formOpen={editing !== null} />
      {canEdit && editing !== null ? (
        <form className="panel" onSubmit={(ev) => save(ev, bodyOf(draft))} data-testid="proxy-form">
          <h3>{editing ? `Edit ${editing}` : "Add a proxy"}</h3>
          {field("id", "id", "lb-1")}
          {field("url", "URL (asked GET /v1/models only)", "http://10.0.0.2:4000")}
          {field("apiKey", "API key (optional): env:NAME of a key variable the file already uses", "env:LITELLM_KEY")}
          {field("backends", "fronts (optional): ids of the backends behind it, comma-separated", "gpu-1, gpu-2")}
          <FormError error={error} testId="proxy-form-error" />
          <FormButtons busy={busy} onCancel={close} testId="proxy-save" />
        </form>
      ) : null}
      {proxies.length ? (
        <div className="table-wrap">
          <table data-testid="config-proxies">
            <thead>
              <tr>
                <th>id</th>
                <th>URL</th>
                <th>API key</th>
                <th>fronts</th>
                {canEdit ? <th></th> : null}
              </tr>
            </thead>
            <tbody>
              {proxies.map((p) => (
                <tr key={p.id} data-testid={`config-proxy-${p.id}`}>
                  <td style={{ whiteSpace: "nowrap" }}>{p.id}</td>
                  <td className="mono">{p.url}</td>
                  <td className="mono">{p.apiKey ?? "none"}</td>
                  <td>{p.backends.length ? p.backends.join(", ") : "not said"}</td>
                  {canEdit ? <RowActions busy={busy} onEdit={() => open(p.id, draftOf(p))} onRemove={() => remove(p.id)} kind="proxy" id={p.id} /> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p className="muted small">No proxies configured.</p>
      )}
    </section>
  );
}
