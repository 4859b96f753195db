"use client";
/**
 * The backend page's "what if" section: the stored readings of the last history.replayDays judged
 * again with another stuckAfterSeconds (GET /api/backends/{id}/replay), and the settings advised
 * from them (GET /api/backends/{id}/advice). Run only when asked, never polled: a week of readings
 * is judged anew on each ask. Nothing here changes the config.
 */
import { useState } from "react";
import type { AdviceResponse, ReplayResponse } from "@/lib/api/types";
import { getJson } from "@/lib/ui/fetcher";

const CHOICES = [30, 60, 90, 120, 180, 300];

export function ReplayPanel({ id }: { id: string }) {
  const [seconds, setSeconds] = useState(60);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [report, setReport] = useState<ReplayResponse | null>(null);
  const [advice, setAdvice] = useState<AdviceResponse | null>(null);
  const base = `/api/backends/${encodeURIComponent(id)}`;

  async function run<T>(url: string, set: (v: T) => void) {
    setBusy(true);
    setError(null);
    try {
      set(await getJson<T>(url));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="section" data-testid="replay-panel">
      <h2>What if: other thresholds on the recorded readings</h2>
      <div className="panel">
        <div className="oncall-actions">
          <label>
            stuckAfterSeconds{" "}
            <select value={seconds} onChange={(e) => setSeconds(Number(e.target.value))} data-testid="replay-seconds">
              {CHOICES.map((s) => (
                <option key={s} value={s}>
                  {s} s
                </option>
              ))}
            </select>
          </label>
          <button type="button" disabled={busy} onClick={() => void run<ReplayResponse>(`${base}/replay?stuckAfterSeconds=${seconds}`, setReport)} data-testid="replay-run">
            Replay
          </button>
          <button type="button" disabled={busy} onClick={() => void run<AdviceResponse>(`${base}/advice`, setAdvice)} data-testid="advice-run">
            Advise settings
          </button>
        </div>
        {error ? (
          <p className="small" role="alert" data-testid="replay-error">
            {error}
          </p>
        ) : null}
        {report ? (
          <div data-testid="replay-result">
            <p data-testid="replay-summary">{report.summary}</p>
            <p className="small muted">
              {report.judged} of {report.readings} readings judged, {report.processes.length} process{report.processes.length === 1 ? "" : "es"}; recorded{" "}
              {report.recorded.recommendations}, replayed {report.replayed.recommendations} restart recommendation{report.replayed.recommendations === 1 ? "" : "s"}.
            </p>
            {report.comparisons.length > 0 ? (
              <ul className="small">
                {report.comparisons.map((c, i) => (
                  <li key={i} data-testid={`replay-${c.change}`}>
                    <strong>{c.change}</strong> {c.text}
                  </li>
                ))}
              </ul>
            ) : null}
          </div>
        ) : null}
        {advice ? (
          <div data-testid="advice-result">
            <ul className="small">
              {(["stuckAfterSeconds", "startupGraceSeconds", "probeTimeoutSeconds"] as const).map((k) => (
                <li key={k}>
                  <strong>
                    {k}: {advice.recommended[k].seconds} s
                  </strong>{" "}
                  (now {advice.current[k]} s): {advice.recommended[k].why}; margin: {advice.recommended[k].margin}
                </li>
              ))}
            </ul>
            <p className="small muted">Never applied: copy what fits.</p>
            <pre className="small" data-testid="advice-kubernetes">
              {advice.kubernetes}
            </pre>
            <pre className="small">{advice.systemd}</pre>
          </div>
        ) : null}
      </div>
    </section>
  );
}
