"use client";
/** The fleet page: one card per backend and the proxies, polled live from GET /api/fleet. */
import Link from "next/link";
import { useMemo, useState } from "react";
import useSWR from "swr";
import type { FleetBackend, FleetResponse } from "@/lib/api/types";
import { toSparkline } from "@/lib/ui/chart";
import { getJson } from "@/lib/ui/fetcher";
import { formatAgo, formatCount, formatDateTime, formatPercent, formatRate } from "@/lib/ui/format";
import { FailingChannels, OnCallStatus } from "./OnCallStatus";
import { ProxyBadge, StateBadge } from "./StateBadge";
import { RestartDialog } from "./RestartDialog";
import { TimeChart } from "./TimeChart";

/** The watcher polls every few seconds; polling the API faster than ~1.5 s only costs requests. */
export const FLEET_REFRESH_MS = 1500;

const SPARK_SERIES = [
  { label: "running", color: "--series-1", scale: "req", fill: true },
  { label: "gen tok/s", color: "--series-2", scale: "tok" },
];

/** A few requests / a few tokens per second fill a fifth of the height, not all of it. */
const SPARK_FLOORS = { req: 4, tok: 20 };

function Sparkline({ b }: { b: FleetBackend }) {
  const data = useMemo(() => toSparkline(b.recent), [b.recent]);
  return (
    <TimeChart
      data={data}
      series={SPARK_SERIES}
      height={44}
      yFloors={SPARK_FLOORS}
      sparkline
      ariaLabel={`${b.id}: running requests and generation tokens per second over the last minutes`}
    />
  );
}

function BackendCard({ b, now, onRestart }: { b: FleetBackend; now: number; onRestart: () => void }) {
  const pending = b.pendingRestartId !== null;
  return (
    <article className={`card${b.restartRecommended ? " attention" : ""}`} data-testid={`backend-card-${b.id}`} data-state={b.state}>
      <div className="card-head">
        <div style={{ minWidth: 0 }}>
          <Link className="id" href={`/backends/${encodeURIComponent(b.id)}`} data-testid={`backend-link-${b.id}`}>
            {b.id}
          </Link>
          <div className="card-sub" title={b.url}>
            {b.model ? `${b.model} · ` : ""}
            {b.url}
          </div>
        </div>
        <div style={{ textAlign: "right" }}>
          <StateBadge state={b.state} testId={`state-${b.id}`} />
          <div className="muted small" style={{ whiteSpace: "nowrap" }} title={b.since ? formatDateTime(b.since) : undefined}>
            since {formatAgo(b.since, now)}
          </div>
        </div>
      </div>
      <dl className="metrics">
        <div>
          <dt>Running</dt>
          <dd data-testid={`running-${b.id}`}>{formatCount(b.running)}</dd>
        </div>
        <div>
          <dt>Waiting</dt>
          <dd data-testid={`waiting-${b.id}`}>{formatCount(b.waiting)}</dd>
        </div>
        <div>
          <dt>Steps/s</dt>
          <dd>{formatRate(b.stepsPerSecond)}</dd>
        </div>
        <div>
          <dt>Gen tok/s</dt>
          <dd>{formatRate(b.generationTokensPerSecond)}</dd>
        </div>
        <div>
          <dt>Prompt tok/s</dt>
          <dd>{formatRate(b.promptTokensPerSecond)}</dd>
        </div>
        <div>
          <dt>KV cache</dt>
          <dd>{formatPercent(b.kvCacheUsage)}</dd>
        </div>
      </dl>
      <Sparkline b={b} />
      <OnCallStatus b={b} />
      {b.restartRecommended ? (
        <div className="recommend" data-testid={`recommend-${b.id}`}>
          <strong>Restart recommended</strong>
          {b.reasons[0] ?? "No progress shown."}
        </div>
      ) : null}
      {b.reasons.length > (b.restartRecommended ? 1 : 0) ? (
        <ul className="reasons" data-testid={`reasons-${b.id}`}>
          {b.reasons.slice(b.restartRecommended ? 1 : 0).map((r, i) => (
            <li key={i}>{r}</li>
          ))}
        </ul>
      ) : null}
      <div className="card-foot">
        <span className="muted small">read {formatAgo(b.lastReadAt, now)}</span>
        {b.restartConfigured ? (
          <button
            type="button"
            className={b.restartRecommended ? "danger" : undefined}
            onClick={onRestart}
            disabled={pending}
            data-testid={`restart-${b.id}`}
          >
            {pending ? "Restarting…" : "Restart…"}
          </button>
        ) : (
          <span className="muted small">no restart configured</span>
        )}
      </div>
    </article>
  );
}

export function FleetView({ initial, operator }: { initial: FleetResponse | null; operator: string | null }) {
  const { data, error, mutate } = useSWR<FleetResponse>("/api/fleet", getJson, {
    refreshInterval: FLEET_REFRESH_MS,
    fallbackData: initial ?? undefined,
    revalidateOnFocus: true,
  });
  const [restarting, setRestarting] = useState<string | null>(null);
  const [flash, setFlash] = useState<string | null>(null);
  const now = data?.generatedAt ?? Date.now();
  const dialogBackend = restarting ? data?.backends.find((b) => b.id === restarting) : undefined;
  const lastRead = data?.backends.reduce<number | null>((m, b) => (b.lastReadAt !== null && (m === null || b.lastReadAt > m) ? b.lastReadAt : m), null);

  return (
    <>
      {data?.demo ? (
        <div className="banner demo" data-testid="demo-banner">
          <strong>DEMO</strong>
          Simulated backends and load replaying the incident. Nothing real is watched or restarted.
        </div>
      ) : null}
      {data?.storageError ? (
        <div className="banner error" role="alert" data-testid="storage-error">
          <strong>Storage problem</strong>
          {data.storageError} — live states still update, but history is not being saved.
        </div>
      ) : null}
      <FailingChannels channels={data?.notificationChannels} />
      {error ? (
        <div className="banner error" role="alert">
          <strong>Cannot reach stepwatch</strong>
          {(error as Error).message}. Showing the last answer.
        </div>
      ) : null}
      {flash ? (
        <div className="banner" role="status" data-testid="flash">
          {flash}
        </div>
      ) : null}
      <div className="page-head">
        <h1>Fleet</h1>
        <span className="meta" data-testid="last-read">
          {lastRead ? `last read ${formatDateTime(lastRead).slice(11)}` : "not read yet"} · updates every {FLEET_REFRESH_MS / 1000} s
        </span>
      </div>
      {!data ? (
        <p className="empty">Loading…</p>
      ) : data.backends.length === 0 ? (
        <p className="empty">No backends configured. Add them to stepwatch.config.json.</p>
      ) : (
        <div className="grid">
          {data.backends.map((b) => (
            <BackendCard key={b.id} b={b} now={now} onRestart={() => setRestarting(b.id)} />
          ))}
        </div>
      )}
      {data && data.proxies.length > 0 ? (
        <section className="section">
          <h2>Proxies</h2>
          <div className="proxies">
            {data.proxies.map((p) => (
              <div className="proxy" key={p.id} data-testid={`proxy-${p.id}`}>
                <span className="id">{p.id}</span>
                <ProxyBadge state={p.state} />
                <span className="muted small">{p.url}</span>
                <div className="chips">
                  {p.models.length ? p.models.map((m) => <span className="chip" key={m}>{m}</span>) : <span className="muted small">no models listed</span>}
                </div>
                <span className="muted small" style={{ marginLeft: "auto" }}>
                  {p.error ? `${p.error} · ` : ""}read {formatAgo(p.lastReadAt, now)}
                </span>
              </div>
            ))}
          </div>
        </section>
      ) : null}
      {dialogBackend ? (
        <RestartDialog
          backend={dialogBackend}
          operator={operator}
          now={now}
          onClose={() => setRestarting(null)}
          onAccepted={(ev) => {
            setRestarting(null);
            setFlash(`Restart of ${ev.backendId} asked for by ${ev.requestedBy} (${ev.action}).`);
            void mutate();
          }}
        />
      ) : null}
    </>
  );
}
