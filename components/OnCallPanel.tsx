"use client";
/**
 * The backend page's on-call section: acknowledge the current problem, start or end maintenance
 * (signed-in operators; the server checks the same rules), and the recent notifications with how
 * each channel's delivery went.
 */
import Link from "next/link";
import { useState } from "react";
import useSWR from "swr";
import type { FleetBackend, NotificationsResponse, Viewer } from "@/lib/api/types";
import { canAct, whoCanAct } from "@/lib/ui/access";
import { EVENT_TITLES } from "@/lib/core/events";
import { ApiError, getJson, sendJson } from "@/lib/ui/fetcher";
import { canAcknowledge } from "@/lib/ui/oncall";
import { OnCallStatus } from "./OnCallStatus";
import { useTimeZone } from "./TimeZone";

const MAINTENANCE_CHOICES = [30, 60, 120, 240, 480];

export function OnCallPanel({ b, viewer, onChanged }: { b: FleetBackend; viewer: Viewer | null; onChanged: () => void }) {
  const [note, setNote] = useState("");
  const [minutes, setMinutes] = useState(60);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const base = `/api/backends/${encodeURIComponent(b.id)}`;
  const { fmt } = useTimeZone();

  async function act(f: () => Promise<unknown>) {
    setBusy(true);
    setError(null);
    try {
      await f();
      setNote("");
      onChanged();
    } catch (e) {
      setError(e instanceof ApiError && e.status === 401 ? "Your session has ended: sign in again." : (e as Error).message);
    } finally {
      setBusy(false);
    }
  }
  const trimmed = note.trim();
  const withNote = trimmed ? { note: trimmed } : {};

  return (
    // id: the target of a notification's acknowledge link ({publicUrl}/backends/{id}#acknowledge, lib/notify/message.ts).
    <section className="section" id="acknowledge" data-testid="oncall-panel">
      <h2>On call</h2>
      <div className="panel">
        {b.problem ? (
          <p className="small" data-testid="problem">
            Problem open: {b.problem.event} since {fmt(b.problem.since)}
            {b.unattendedConfigured ? " · unattended restart configured" : ""}
          </p>
        ) : (
          <p className="small muted">No open problem.{b.unattendedConfigured ? " Unattended restart configured." : ""}</p>
        )}
        <OnCallStatus b={b} />
        {canAct(viewer) ? (
          <div className="oncall-actions">
            <label>
              Note (optional)
              <input value={note} maxLength={500} onChange={(e) => setNote(e.target.value)} data-testid="oncall-note" />
            </label>
            {canAcknowledge(b) ? (
              <button type="button" disabled={busy} onClick={() => act(() => sendJson(`${base}/acknowledge`, "POST", withNote))} data-testid="acknowledge">
                Acknowledge
              </button>
            ) : null}
            <label>
              Maintenance for
              <select value={minutes} onChange={(e) => setMinutes(Number(e.target.value))} data-testid="maintenance-minutes">
                {MAINTENANCE_CHOICES.map((m) => (
                  <option key={m} value={m}>
                    {m < 60 ? `${m} min` : `${m / 60} h`}
                  </option>
                ))}
              </select>
            </label>
            <button type="button" disabled={busy} onClick={() => act(() => sendJson(`${base}/maintenance`, "POST", { minutes, ...withNote }))} data-testid="maintenance-start">
              {b.maintenance ? "Replace maintenance" : "Start maintenance"}
            </button>
            {b.maintenance?.source === "api" ? (
              <button type="button" disabled={busy} onClick={() => act(() => sendJson(`${base}/maintenance`, "DELETE"))} data-testid="maintenance-end">
                End maintenance
              </button>
            ) : null}
          </div>
        ) : (
          <p className="small" data-testid="who-can-act">
            {viewer ? (
              whoCanAct(viewer, "acknowledge or start maintenance")
            ) : (
              <>
                <Link href="/signin">Sign in</Link> as an operator to acknowledge or start maintenance.
              </>
            )}
          </p>
        )}
        {error ? (
          <p className="small" role="alert" style={{ color: "var(--bad)" }} data-testid="oncall-error">
            {error}
          </p>
        ) : null}
      </div>
      <NotificationsList id={b.id} />
    </section>
  );
}

function NotificationsList({ id }: { id: string }) {
  const { fmt } = useTimeZone();
  const { data, error } = useSWR<NotificationsResponse>(`/api/notifications?backend=${encodeURIComponent(id)}&limit=20`, getJson, { refreshInterval: 5000 });
  return (
    <div className="panel" style={{ marginTop: ".8rem" }}>
      <h3 style={{ marginBottom: ".4rem" }}>Recent notifications</h3>
      {error ? <p className="small">{(error as Error).message}</p> : null}
      {data && data.notifications.length === 0 ? <p className="empty">No notifications for this backend yet.</p> : null}
      {data && data.notifications.length > 0 ? (
        <table className="notifications" data-testid="notifications">
          <thead>
            <tr>
              <th>When</th>
              <th>Event</th>
              <th>Deliveries</th>
            </tr>
          </thead>
          <tbody>
            {data.notifications.map((n) => (
              <tr key={n.id} data-testid={`notification-${n.event}`}>
                <td>{fmt(n.at)}</td>
                <td>
                  {EVENT_TITLES[n.event]}
                  {n.details.reminder ? " (reminder)" : ""}
                  {typeof n.details.requestedBy === "string" ? ` by ${n.details.requestedBy}` : ""}
                </td>
                <td>
                  {n.deliveries.length === 0 ? <span className="muted">no channel takes it</span> : null}
                  {n.deliveries.map((d) => (
                    <div key={d.channelId} className={`delivery-${d.status}`}>
                      {d.channelId}: {d.status}
                      {d.attempts > 1 ? ` after ${d.attempts} attempts` : ""}
                      {d.status !== "delivered" && d.lastError ? ` (${d.lastError})` : ""}
                      {d.nextAttemptAt ? `; next try ${fmt(d.nextAttemptAt).slice(11)}` : ""}
                    </div>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}
