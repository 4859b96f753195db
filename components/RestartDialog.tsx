"use client";
/**
 * The one way to ask for a restart. A native <dialog> opened with showModal(): the page behind it
 * is inert (focus stays inside), Esc closes it, focus returns to the button that opened it. It
 * shows what the operator is about to break: the state, the evidence, and the requests in flight.
 * A healthy backend (idle/busy) needs its id typed; the server checks the same rule (422).
 * Focus starts on Cancel, so a stray Enter never restarts anything.
 */
import { usePathname } from "next/navigation";
import { useEffect, useRef, useState } from "react";
import useSWR from "swr";
import type { FleetBackend, RestartEventDTO, RestartPlanDTO } from "@/lib/api/types";
import { ApiError, getJson, sendJson } from "@/lib/ui/fetcher";
import { formatDuration } from "@/lib/core/format";
import { Time } from "./TimeZone";
import { inFlightWarning, needsTypedConfirmation } from "@/lib/ui/state";
import { StateBadge } from "./StateBadge";
import { ReasonList } from "./Reasons";

export interface RestartDialogProps {
  backend: FleetBackend;
  operator: string | null;
  now: number;
  onClose: () => void;
  onAccepted: (event: RestartEventDTO) => void;
}

export function RestartDialog({ backend, operator, now, onClose, onAccepted }: RestartDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);
  const path = usePathname();
  const [typed, setTyped] = useState("");
  const [note, setNote] = useState("");
  const [override, setOverride] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [cooldownUntil, setCooldownUntil] = useState<number | null>(backend.cooldownUntil);
  const plan = useSWR<RestartPlanDTO>(`/api/backends/${encodeURIComponent(backend.id)}/restart-plan`, getJson, { revalidateOnFocus: false });

  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    // showModal() focuses the dialog's first focusable element itself; start on Cancel instead.
    cancelRef.current?.focus();
    return () => d?.close();
  }, []);

  const healthy = needsTypedConfirmation(backend.state);
  const inCooldown = cooldownUntil !== null && cooldownUntil > now;
  const canConfirm = !!operator && !busy && (!healthy || typed === backend.id) && (!inCooldown || override);

  async function confirm(e: React.FormEvent) {
    e.preventDefault();
    if (!canConfirm) return;
    setBusy(true);
    setError(null);
    try {
      const res = await sendJson<{ event: RestartEventDTO }>(`/api/backends/${encodeURIComponent(backend.id)}/restart`, "POST", {
        ...(healthy ? { confirm: typed } : {}),
        ...(override ? { overrideCooldown: true } : {}),
        ...(note.trim() ? { note: note.trim() } : {}),
      });
      onAccepted(res.event);
    } catch (err) {
      if (err instanceof ApiError && err.details?.reason === "cooldown" && typeof err.details.cooldownUntil === "number") {
        setCooldownUntil(err.details.cooldownUntil);
      }
      setError(err instanceof ApiError && err.status === 401 ? "Your session has ended: sign in again." : (err as Error).message);
      setBusy(false);
    }
  }

  return (
    <dialog ref={ref} onClose={onClose} aria-labelledby="restart-title" data-testid="restart-dialog">
      <form onSubmit={confirm}>
        <div className="dialog-body">
          <h2 id="restart-title">Restart {backend.id}?</h2>
          <div>
            <StateBadge state={backend.state} /> <span className="muted small">{backend.url}</span>
          </div>
          <div>
            <strong className="small">Evidence</strong>
            <ReasonList reasons={backend.reasons} testId="restart-evidence" />
          </div>
          <div className="warn-box" data-testid="restart-inflight">
            {inFlightWarning(backend.running, backend.waiting)} The model is unavailable until it has loaded again.
          </div>
          <dl className="plan" data-testid="restart-plan">
            <dt>Will run</dt>
            <dd className="mono" data-testid="restart-plan-action">
              {plan.data ? (plan.data.action ?? "no restart action configured") : plan.error ? "not known (the plan could not be read)" : "…"}
            </dd>
            <dt>Expected outage</dt>
            <dd data-testid="restart-plan-outage">
              {plan.data
                ? plan.data.expectedOutageSeconds !== null
                  ? `about ${formatDuration(plan.data.expectedOutageSeconds)} (the last restart's downtime)`
                  : "not known yet: no earlier restart of this backend has recovered"
                : "…"}
            </dd>
            <dt>Then</dt>
            <dd data-testid="restart-plan-cooldown">
              {plan.data
                ? `a cooldown of ${formatDuration(plan.data.cooldownSeconds)} starts: another restart of ${backend.id} is refused until then unless the cooldown is overridden`
                : "…"}
            </dd>
          </dl>
          {!operator ? (
            <p className="form-error">
              Restarts need a signed-in operator. <a href={`/signin?next=${encodeURIComponent(path || "/")}`}>Sign in</a>
            </p>
          ) : null}
          {healthy ? (
            <div className="field">
              <label htmlFor="restart-confirm">
                {backend.id} is healthy ({backend.state}). Type <code>{backend.id}</code> to restart it anyway.
              </label>
              <input
                id="restart-confirm"
                type="text"
                autoComplete="off"
                spellCheck={false}
                value={typed}
                onChange={(e) => setTyped(e.target.value)}
                data-testid="restart-confirm-input"
              />
            </div>
          ) : null}
          {inCooldown ? (
            <div className="field">
              <p className="small muted" style={{ margin: "0 0 .3rem" }}>
                A restart was asked for recently: cooldown until <Time at={cooldownUntil} />.
              </p>
              <label className="check">
                <input type="checkbox" checked={override} onChange={(e) => setOverride(e.target.checked)} data-testid="restart-override" />
                Override the cooldown (recorded)
              </label>
            </div>
          ) : null}
          <div className="field">
            <label htmlFor="restart-note">Note (optional, kept with the event)</label>
            <textarea id="restart-note" maxLength={500} value={note} onChange={(e) => setNote(e.target.value)} data-testid="restart-note" />
          </div>
          {error ? (
            <p className="form-error" role="alert" data-testid="restart-error">
              {error}
            </p>
          ) : null}
        </div>
        <div className="dialog-actions">
          <button type="button" ref={cancelRef} onClick={() => ref.current?.close()} data-testid="restart-cancel">
            Cancel
          </button>
          <button type="submit" className="danger" disabled={!canConfirm} data-testid="restart-submit">
            {busy ? "Restarting…" : `Restart ${backend.id}`}
          </button>
        </div>
      </form>
    </dialog>
  );
}
