import Link from "next/link";
import type { RestartEventDTO } from "@/lib/api/types";
import { formatCount, formatDuration, truncate } from "@/lib/ui/format";
import { Time } from "./TimeZone";
import { StateBadge } from "./StateBadge";

const OUTCOME_TONE = { recovered: "ok", failed: "bad", "timed-out": "bad" } as const;

function Outcome({ r }: { r: RestartEventDTO }) {
  if (r.outcome === null) return <span className="badge tone-info">Pending</span>;
  return <span className={`badge tone-${OUTCOME_TONE[r.outcome]}`}>{r.outcome === "recovered" ? "Recovered" : r.outcome === "failed" ? "Failed" : "Timed out"}</span>;
}

function CommandResult({ r }: { r: RestartEventDTO }) {
  const status =
    r.commandFinishedAt === null
      ? "running…"
      : r.commandError
        ? r.commandError
        : r.commandExitCode !== null
          ? `exit ${r.commandExitCode}`
          : "ok";
  return (
    <>
      <div className="mono small">{r.action}</div>
      <div className="small">{status}</div>
      {r.commandOutput ? <pre className="output">{truncate(r.commandOutput, 1500)}</pre> : null}
    </>
  );
}

/**
 * The restart log for review: who, when, why, what ran, and how it ended. Eight columns fit
 * 1280 px with the outcome whole (the checks share one column, command output is capped); on a
 * phone each row becomes a stacked card, each cell led by its column's name (data-label).
 */
export function RestartsTable({ restarts, showBackend = true }: { restarts: RestartEventDTO[]; showBackend?: boolean }) {
  if (restarts.length === 0) return <p className="empty" data-testid="restarts-empty">No restarts recorded.</p>;
  return (
    <div className="table-wrap restarts-wrap">
      <table data-testid="restarts-table" className="restarts">
        <thead>
          <tr>
            <th>When</th>
            {showBackend ? <th>Backend</th> : null}
            <th>Who</th>
            <th>Why (state and evidence)</th>
            <th>Checks</th>
            <th>Command result</th>
            <th>Downtime</th>
            <th>Outcome</th>
          </tr>
        </thead>
        <tbody>
          {restarts.map((r) => (
            <tr key={r.id} data-testid={`restart-row-${r.id}`} data-backend={r.backendId}>
              <td className="mono when" data-label="When">
                <Time at={r.requestedAt} />
              </td>
              {showBackend ? (
                <td data-label="Backend">
                  <Link href={`/backends/${encodeURIComponent(r.backendId)}`}>{r.backendId}</Link>
                </td>
              ) : null}
              <td data-testid="restart-who" data-label="Who">
                {r.requestedBy}
              </td>
              <td data-testid="restart-why" data-label="Why" className="why">
                <StateBadge state={r.stateAtRequest} />{" "}
                <span className="muted small">
                  {formatCount(r.runningAtRequest)} running, {formatCount(r.waitingAtRequest)} waiting
                </span>
                <ul className="reasons">
                  {r.evidence.reasons.map((x, i) => (
                    <li key={i}>{x}</li>
                  ))}
                </ul>
                {r.note ? <div className="small">Note: {r.note}</div> : null}
              </td>
              <td data-label="Checks" className="small">
                <div>healthy: {r.healthyAtRequest ? (r.confirmedHealthy ? "yes (id typed)" : "yes") : "no"}</div>
                <div>{r.overrideCooldown ? "cooldown overridden" : "cooldown respected"}</div>
              </td>
              <td data-label="Command" className="command">
                <CommandResult r={r} />
              </td>
              <td data-label="Downtime" className="when">
                {formatDuration(r.downtimeSeconds)}
              </td>
              <td data-testid="restart-outcome" data-label="Outcome" className="outcome">
                <Outcome r={r} />
                {r.resolution ? <div className="muted small">{r.resolution}</div> : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
