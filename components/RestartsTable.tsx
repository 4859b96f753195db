import type { RestartEventDTO } from "@/lib/api/types";
import { formatCount, formatDuration, truncate } from "@/lib/core/format";
import { BackendCell, LogTable } from "./Review";
import { Time } from "./TimeZone";
import { StateBadge } from "./StateBadge";
import { ReasonList } from "./Reasons";

const OUTCOME_BADGE = {
  recovered: { tone: "ok", text: "Recovered" },
  failed: { tone: "bad", text: "Failed" },
  "timed-out": { tone: "bad", text: "Timed out" },
  unknown: { tone: "bad", text: "Outcome unknown" },
} as const;

function Outcome({ r }: { r: RestartEventDTO }) {
  if (r.outcome === null) return <span className="badge tone-info">Pending</span>;
  const b = OUTCOME_BADGE[r.outcome];
  return <span className={`badge tone-${b.tone}`}>{b.text}</span>;
}

function CommandResult({ r }: { r: RestartEventDTO }) {
  const status =
    r.commandFinishedAt === null
      ? r.outcome === "unknown"
        ? "result never recorded"
        : r.startedAt === null
          ? "waiting for the leader…"
          : "running…"
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
      {r.evidenceId !== null ? (
        <div className="small" data-testid="restart-evidence">
          Evidence #{r.evidenceId}: <a href={`/api/evidence/${r.evidenceId}`}>JSON</a> · <a href={`/api/evidence/${r.evidenceId}?format=tar.gz`} download>.tar.gz</a>
        </div>
      ) : null}
    </>
  );
}

/**
 * The restart log for review: who, when, why, what ran, and how it ended. Eight columns fit
 * 1280 px with the outcome whole (the checks share one column, command output is capped); on a
 * phone each row becomes a stacked card, each cell led by its column's name (data-label).
 */
export function RestartsTable({ restarts, showBackend = true }: { restarts: RestartEventDTO[]; showBackend?: boolean }) {
  return (
    <LogTable
      testId="restarts-table"
      className="restarts"
      columns={["When", showBackend ? "Backend" : null, "Who", "Why (state and evidence)", "Checks", "Command result", "Downtime", "Outcome"]}
      rows={restarts.length}
      empty={{ text: "No restarts recorded.", testId: "restarts-empty" }}
    >
      {restarts.map((r) => (
        <tr key={r.id} data-testid={`restart-row-${r.id}`} data-backend={r.backendId}>
          <td className="mono when" data-label="When">
            <Time at={r.requestedAt} />
          </td>
          {showBackend ? <BackendCell id={r.backendId} /> : null}
          <td data-testid="restart-who" data-label="Who">
            {r.requestedBy}
          </td>
          <td data-testid="restart-why" data-label="Why" className="why">
            <StateBadge state={r.stateAtRequest} />{" "}
            <span className="muted small">
              {formatCount(r.runningAtRequest)} running, {formatCount(r.waitingAtRequest)} waiting
            </span>
            <ReasonList reasons={r.evidence.reasons} />
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
    </LogTable>
  );
}
