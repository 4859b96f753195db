/**
 * The backend page's evidence: the newest bundle in full (each command's output, exit status and
 * duration, the status routes, the raw /metrics bodies), and the older ones as download links.
 * Rendered on the server from the API's shapes; every text is React-escaped, and what it shows
 * was made safe at capture (escape codes as \xNN, bytes that were not UTF-8 as U+FFFD, secrets
 * blanked). Long texts are cut here too: the download has them whole.
 */
import type { EvidenceDTO, EvidenceSummaryDTO } from "@/lib/api/types";
import { formatDateTime, truncate } from "@/lib/core/format";

/** Characters of one text shown on the page. */
const SHOWN = 20_000;

function Downloads({ id }: { id: number }) {
  return (
    <span className="small">
      <a href={`/api/evidence/${id}`}>JSON</a> · <a href={`/api/evidence/${id}?format=tar.gz`} download>.tar.gz</a>
    </span>
  );
}

function commandStatus(c: EvidenceDTO["commands"][number]): string {
  if (c.finishedAt === null) return "running…";
  const took = c.durationMs === null ? "" : ` in ${(c.durationMs / 1000).toFixed(1)} s`;
  return `${c.error ?? (c.exitCode === 0 ? "exit 0" : `exit ${c.exitCode}`)}${took}; ${c.outputBytes} bytes printed`;
}

export function EvidencePanel({ latest, others }: { latest: EvidenceDTO | null; others: EvidenceSummaryDTO[] }) {
  return (
    <section className="section" id="evidence" data-testid="evidence-panel">
      <h2>Evidence</h2>
      {latest === null ? (
        <p className="small">No evidence captured yet: a bundle is captured when this backend gets stuck or goes down, and before any restart.</p>
      ) : (
        <>
          <p className="small" data-testid="evidence-latest">
            #{latest.id}, captured {formatDateTime(latest.startedAt)} ({latest.trigger}, state {latest.state ?? "unknown"}){" "}
            {latest.finishedAt === null ? "— still capturing" : ""} <Downloads id={latest.id} />
          </p>
          {latest.notes.length ? <p className="small">{latest.notes.join("; ")}</p> : null}
          {latest.commands.map((c) => (
            <details key={c.name} open data-testid="evidence-command">
              <summary>
                <span className="mono">{c.name}</span>: {commandStatus(c)}
              </summary>
              <div className="mono small">{c.argv.join(" ")}</div>
              <pre className="output">{truncate(c.output, SHOWN)}</pre>
            </details>
          ))}
          {latest.status.map((s) => (
            <details key={s.path}>
              <summary>
                GET <span className="mono">{s.path}</span>: {s.outcome}
                {s.status !== null ? ` ${s.status}` : ""} in {s.latencyMs} ms
              </summary>
              <pre className="output">{truncate(s.body, SHOWN)}</pre>
            </details>
          ))}
          {latest.metrics.map((m) => (
            <details key={m.at}>
              <summary>
                /metrics at {formatDateTime(m.at)} ({m.state ?? "?"}){m.cut ? ", cut" : ""}
              </summary>
              <pre className="output">{truncate(m.body, SHOWN)}</pre>
            </details>
          ))}
        </>
      )}
      {others.length > 1 ? (
        <ul className="small">
          {others.slice(1).map((o) => (
            <li key={o.id}>
              #{o.id} {formatDateTime(o.startedAt)} ({o.trigger}) <Downloads id={o.id} />
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
