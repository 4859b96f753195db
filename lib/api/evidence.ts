/**
 * The read verbs of evidence bundles (issue 32): one bundle as JSON or as a .tar.gz, and a
 * backend's list. Behind the read gate like every read route (lib/api/admission.ts: a viewer or
 * an operator when access.read is "signed-in"). What a bundle holds was made safe when it was
 * captured (lib/restart/evidence.ts: escape codes written as \xNN, secrets blanked): nothing here
 * adds a value from the config.
 */
import { evidenceById, evidenceOfBackend } from "../../db/queries/evidence";
import type { EvidenceBundleRow } from "../../db/schema";
import { backendOrThrow } from "../config";
import { DomainError } from "../core/errors";
import { getRuntime } from "../runtime";
import { fromStorage } from "./fleet";
import { tarGz, type TarEntry } from "./tar";
import type { EvidenceDTO, EvidenceSummaryDTO } from "./types";

export function evidenceDTO(row: EvidenceBundleRow): EvidenceDTO {
  const b = row.bundle;
  return {
    id: row.id,
    sizeBytes: row.sizeBytes,
    expiresAt: row.expiresAt,
    backendId: b.backendId,
    trigger: b.trigger,
    startedAt: b.startedAt,
    finishedAt: b.finishedAt,
    state: b.state,
    reasons: b.reasons,
    timeline: b.timeline,
    metrics: b.metrics,
    status: b.status,
    commands: b.commands,
    notes: b.notes,
  };
}

export async function getEvidence(id: number): Promise<EvidenceDTO> {
  const rt = await getRuntime();
  const row = fromStorage("the evidence", () => evidenceById(rt.db.db, id));
  if (!row) throw new DomainError("not-found", `no evidence bundle #${id} (retention may have deleted it)`);
  return evidenceDTO(row);
}

/** GET /api/evidence?backend=: the backend's newest bundles, newest first. */
export async function listEvidence(backendId: string, limit = 20): Promise<EvidenceSummaryDTO[]> {
  const rt = await getRuntime();
  backendOrThrow(rt.config.backends, backendId);
  return fromStorage("the evidence", () =>
    evidenceOfBackend(rt.db.db, backendId, limit).map((r) => ({ id: r.id, backendId: r.backendId, trigger: r.trigger, startedAt: r.startedAt, finishedAt: r.finishedAt, sizeBytes: r.sizeBytes })),
  );
}

/**
 * The backend page's evidence: its newest bundles, the newest in full. A storage failure shows
 * as "none" rather than failing the page (the page's other parts have their own errors).
 */
export async function backendEvidence(backendId: string): Promise<{ latest: EvidenceDTO | null; list: EvidenceSummaryDTO[] }> {
  try {
    const list = await listEvidence(backendId);
    return { list, latest: list.length ? await getEvidence(list[0].id) : null };
  } catch (e) {
    console.error(`stepwatch: cannot read the evidence of ${backendId}: ${(e as Error).message}`);
    return { list: [], latest: null };
  }
}

/** A path segment of the .tar.gz from a route's path ("/v1/models" -> "v1_models"). */
const fileName = (s: string) => s.replace(/^\/+/, "").replace(/[^A-Za-z0-9_.-]+/g, "_").slice(0, 60) || "root";

/**
 * The bundle as one .tar.gz under `evidence-<id>/`: bundle.json (all of it), each command's
 * output and its run (exit status, duration) beside it, each raw /metrics body, each status route.
 */
export function evidenceTarGz(e: EvidenceDTO): { name: string; bytes: Buffer } {
  const dir = `evidence-${e.id}`;
  const entries: TarEntry[] = [{ name: `${dir}/bundle.json`, data: JSON.stringify(e, null, 2) }];
  entries.push({ name: `${dir}/timeline.json`, data: JSON.stringify(e.timeline, null, 2) });
  e.metrics.forEach((m, i) => entries.push({ name: `${dir}/metrics/${i + 1}-${m.at}.prom`, data: m.body }));
  e.status.forEach((s, i) => entries.push({ name: `${dir}/status/${i + 1}-${fileName(s.path)}.txt`, data: `GET ${s.path}: ${s.outcome}${s.status !== null ? ` ${s.status}` : ""} in ${s.latencyMs} ms\n\n${s.body}` }));
  for (const c of e.commands) {
    const { output, ...run } = c;
    entries.push({ name: `${dir}/commands/${c.name}.out`, data: output });
    entries.push({ name: `${dir}/commands/${c.name}.json`, data: JSON.stringify(run, null, 2) });
  }
  return { name: `stepwatch-${e.backendId}-evidence-${e.id}.tar.gz`, bytes: tarGz(entries, e.finishedAt ?? e.startedAt) };
}
