/**
 * Backends and proxies edited from the dashboard or a script (POST/PUT/DELETE /api/config/backends,
 * /api/config/proxies): the file
 * stays the one source of the config. A change is made to the file's JSON as written (its
 * `env:NAME` references untouched), validated by the same schema as a start (parseConfig), written
 * atomically with the previous file kept as `<file>.bak`, audited, and applied by the one reload
 * (reloadConfigAs): nothing runs that the file and the audit log do not show.
 */
import fs from "node:fs";
import path from "node:path";
import { recordAudit } from "../../db/queries/auth";
import { ConfigError, parseConfig, readConfigText } from "../config";
import { DomainError } from "../core/errors";
import { getRuntime } from "../runtime";
import { actorKindOf } from "./operator";
import { reloadConfigAs } from "./config-view";
import type { Principal } from "../auth/principal";
import type { ReloadResponse } from "./types";

const ENV_REF = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;

type Json = Record<string, unknown>;
/** What the file's `backends` or `proxies` list gets: one target added, replaced or removed. */
export type TargetKind = "backend" | "proxy";
export type TargetEdit = { kind: TargetKind } & ({ op: "add"; body: Json } | { op: "update"; id: string; body: Json } | { op: "remove"; id: string });
const LIST = { backend: "backends", proxy: "proxies" } as const;

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The variables the file already names as a backend's or a proxy's `apiKey`. */
function apiKeyNamesOf(raw: Json): Set<string> {
  const names = new Set<string>();
  for (const list of [raw.backends, raw.proxies]) {
    for (const t of Array.isArray(list) ? list : []) {
      const m = isObject(t) && typeof t.apiKey === "string" ? ENV_REF.exec(t.apiKey) : null;
      if (m) names.add(m[1]);
    }
  }
  return names;
}

/**
 * What an operator may not send over HTTP, as `field: why` lines (422). A secret only as
 * `env:NAME` (a value typed into a form would be stored, and the page never shows one, invariant
 * 7), and only a variable the file already uses as an API key: any other variable of stepwatch's
 * environment (an SMTP password, a cloud key) would be sent as a Bearer to a URL the operator
 * chose. No `restart`: a command or webhook from a request would run on this server (invariant 6:
 * request fields never reach argv); whoever edits the file sets it.
 */
export function refusedFieldsOf(b: Json, raw: Json): string[] {
  const bad: string[] = [];
  if (b.apiKey !== undefined) {
    const m = typeof b.apiKey === "string" ? ENV_REF.exec(b.apiKey) : null;
    if (!m) bad.push('apiKey: give it as "env:NAME" (the variable holds the key); a value is never sent or stored from here');
    else if (!apiKeyNamesOf(raw).has(m[1])) bad.push(`apiKey: ${m[1]} is not an API key variable of this config; name a new one in the file first`);
  }
  if (b.restart !== undefined && b.restart !== null) bad.push("restart: a restart action is set in the config file, not over HTTP (it runs on this server)");
  return bad;
}

/**
 * The file's JSON with one backend added, replaced or removed; pure (throws DomainError). A PUT
 * keeps the file's restart action (`refusedFieldsOf`: none is taken from a request) and its
 * labels when the body names none; `"restart": null` / `"labels": null` removes them. Labels
 * are taken from a request as any other field, checked by the schema.
 */
export function editedConfig(raw: unknown, edit: TargetEdit): { json: Json; id: string } {
  if (!isObject(raw)) throw new DomainError("conflict", "the config file is not a JSON object: fix it by hand first");
  const key = LIST[edit.kind];
  const list: unknown[] = Array.isArray(raw[key]) ? [...(raw[key] as unknown[])] : [];
  const indexOf = (id: string) => list.findIndex((t) => isObject(t) && t.id === id);
  const unknown = (id: string) => new DomainError("not-found", `no ${edit.kind} "${id}" in the config file`);
  if (edit.op === "remove") {
    const i = indexOf(edit.id);
    if (i < 0) throw unknown(edit.id);
    list.splice(i, 1);
    return { json: { ...raw, [key]: list }, id: edit.id };
  }
  const b = { ...edit.body };
  const refused = refusedFieldsOf(b, raw);
  if (refused.length) throw new DomainError("invalid-config", refused.join("; "), { problems: refused });
  if (edit.op === "add") {
    if (typeof b.id !== "string") throw new DomainError("invalid-config", "id: required", { problems: ["id: required"] });
    if (indexOf(b.id) >= 0) throw new DomainError("conflict", `${edit.kind} id "${b.id}" is in use`);
    list.push(b);
    return { json: { ...raw, [key]: list }, id: b.id };
  }
  const i = indexOf(edit.id);
  if (i < 0) throw unknown(edit.id);
  if (b.id !== undefined && b.id !== edit.id) throw new DomainError("invalid-config", `id: is "${edit.id}" in the URL; an id is not renamed (remove and add instead)`, { problems: ["id: differs from the URL"] });
  const old = list[i] as Json;
  const next: Json = { ...b, id: edit.id };
  if (b.restart === undefined && old.restart !== undefined) next.restart = old.restart;
  if (b.restart === null) delete next.restart;
  // The dashboard's form has no labels field: a PUT that names none keeps the file's, so saving
  // the form does not drop a backend from every filter and group; `"labels": null` removes them.
  if (b.labels === undefined && old.labels !== undefined) next.labels = old.labels;
  if (b.labels === null) delete next.labels;
  list[i] = next;
  return { json: { ...raw, [key]: list }, id: edit.id };
}

function refusedWrite(file: string, e: unknown): DomainError {
  const code = (e as NodeJS.ErrnoException)?.code ?? "error";
  return new DomainError("unavailable", `the config file ${file} cannot be written (${code}): change it by hand, or make it writable for stepwatch`, { path: file });
}

/**
 * The previous file to `<file>.bak`, then the new text through a temp file in the same directory,
 * fsynced and renamed over: a reader (the reload, an editor) sees the old file or the new one,
 * never half of one. The file's mode is kept.
 */
export function writeConfigAtomically(file: string, text: string): void {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    const mode = fs.statSync(file).mode & 0o777;
    fs.copyFileSync(file, `${file}.bak`);
    const fd = fs.openSync(tmp, "w", mode);
    try {
      fs.writeFileSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw refusedWrite(file, e);
  }
  // The rename is durable once the directory is synced (not every filesystem allows opening one).
  try {
    const d = fs.openSync(dir, "r");
    fs.fsyncSync(d);
    fs.closeSync(d);
  } catch {
    /* best effort */
  }
}

function putBack(file: string): void {
  // Through a temp file and a rename, like the write: a reader never sees half a file.
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    fs.copyFileSync(`${file}.bak`, tmp);
    fs.renameSync(tmp, file);
  } catch (e) {
    console.error(`stepwatch: cannot put back ${file} from ${file}.bak: ${(e as Error).message}`);
  }
}

const ACTION = { add: "added", update: "changed", remove: "removed" } as const;

/**
 * The verb of the three routes: 409 for the demo fleet (no file); 422 naming the field when the
 * result would not load; 503 naming the path when the file cannot be written, 503 when the audit
 * line cannot be; else the reload's answer. A refused audit line or reload puts the previous file back.
 */
export async function editTargetAs(operator: Principal, address: string, edit: TargetEdit): Promise<ReloadResponse & { id: string }> {
  const rt = await getRuntime();
  const file = rt.configStatus.path;
  if (rt.demo || file === null) throw new DomainError("conflict", "the embedded demo fleet runs: there is no config file to edit");
  let raw: unknown;
  try {
    raw = JSON.parse(readConfigText(file));
  } catch (e) {
    throw new DomainError("conflict", `the config file ${file} cannot be read as JSON (${e instanceof ConfigError ? e.problems.join("; ") : "not valid JSON"}): fix it by hand first`, { path: file });
  }
  const { json, id } = editedConfig(raw, edit);
  try {
    parseConfig(json, file);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new DomainError("invalid-config", `not saved: ${e.problems.join("; ")}`, { problems: e.problems });
  }
  writeConfigAtomically(file, `${JSON.stringify(json, null, 2)}\n`);
  // Before it is applied, and with nothing awaited since the write (no reload can run between):
  // a change the audit log cannot show is put back and not made (fails closed, as the reload does).
  try {
    recordAudit(rt.db.db, { at: Date.now(), actor: operator.name, actorKind: actorKindOf(operator), action: `config.${edit.kind}.${ACTION[edit.op]}`, target: id, address, detail: file });
  } catch (e) {
    putBack(file);
    throw new DomainError("unavailable", `not saved: the audit log takes no write (${(e as Error).message})`);
  }
  try {
    return { id, ...(await reloadConfigAs(operator.name)) };
  } catch (e) {
    // The running config stays; so does the file, so the next reload does not apply it unasked.
    putBack(file);
    throw e;
  }
}
