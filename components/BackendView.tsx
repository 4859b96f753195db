"use client";
/** One backend over a chosen range: charts with restarts and state changes marked, the timeline, its restarts. */
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { useMemo, useState } from "react";
import useSWR from "swr";
import type uPlot from "uplot";
import type { FleetResponse, HistoryResponse } from "@/lib/api/types";
import { BACKEND_STATES, type BackendState } from "@/lib/check/states";
import { RANGES, rangeMs, toHistorySeries, toMarkers, type RangeKey } from "@/lib/ui/chart";
import { getJson } from "@/lib/ui/fetcher";
import { formatAgo, formatCount, formatDateTime, formatPercent, formatRate } from "@/lib/ui/format";
import { OnCallPanel } from "./OnCallPanel";
import { RestartDialog } from "./RestartDialog";
import { RestartsTable } from "./RestartsTable";
import { StateBadge } from "./StateBadge";
import { TimeChart, type ChartSeries } from "./TimeChart";
import { FLEET_REFRESH_MS } from "./FleetView";

/** Short ranges refresh often; a week of minute rollups changes slowly. */
const REFRESH_MS: Record<RangeKey, number> = { "15m": 3000, "1h": 5000, "24h": 30_000, "7d": 60_000 };

const CHARTS: Array<{ title: string; series: ChartSeries[]; pick: (s: ReturnType<typeof toHistorySeries>) => uPlot.AlignedData; yRanges?: Record<string, [number, number]> }> = [
  {
    title: "Requests running and waiting",
    series: [
      { label: "running", color: "--series-1", scale: "req", fill: true, format: formatCount },
      { label: "waiting", color: "--series-2", scale: "req", format: formatCount },
    ],
    pick: (s) => [s.x, s.running, s.waiting],
  },
  {
    title: "Engine steps per second",
    series: [{ label: "steps/s", color: "--series-3", scale: "steps", fill: true, format: formatRate }],
    pick: (s) => [s.x, s.stepsPerSecond],
  },
  {
    title: "Tokens per second",
    series: [
      { label: "generation", color: "--series-1", scale: "tok", format: formatRate },
      { label: "prompt", color: "--series-4", scale: "tok", format: formatRate },
    ],
    pick: (s) => [s.x, s.generationTokensPerSecond, s.promptTokensPerSecond],
  },
  {
    title: "KV-cache use (%)",
    series: [{ label: "KV cache", color: "--series-4", scale: "pct", fill: true, format: (v) => (v === null ? "—" : `${v.toFixed(0)}%`) }],
    pick: (s) => [s.x, s.kvCachePercent],
    yRanges: { pct: [0, 100] },
  },
];

const isState = (s: string | null): s is BackendState => s !== null && (BACKEND_STATES as readonly string[]).includes(s);

export function BackendView({ id, initialRange, operator }: { id: string; initialRange: RangeKey; operator: string | null }) {
  const router = useRouter();
  const path = usePathname();
  const [range, setRange] = useState<RangeKey>(initialRange);
  const [dialog, setDialog] = useState(false);
  const fleet = useSWR<FleetResponse>("/api/fleet", getJson, { refreshInterval: FLEET_REFRESH_MS });
  const history = useSWR<HistoryResponse>(
    ["history", id, range],
    () => {
      const to = Date.now();
      return getJson<HistoryResponse>(`/api/backends/${encodeURIComponent(id)}/history?from=${to - rangeMs(range)}&to=${to}`);
    },
    { refreshInterval: REFRESH_MS[range], keepPreviousData: true },
  );
  const b = fleet.data?.backends.find((x) => x.id === id);
  const h = history.data;
  const series = useMemo(() => (h ? toHistorySeries(h.points) : null), [h]);
  const markers = useMemo(() => (h ? toMarkers(h.transitions, h.restarts, h.from, h.to) : []), [h]);
  const xRange: [number, number] | undefined = h ? [h.from / 1000, h.to / 1000] : undefined;
  const now = fleet.data?.generatedAt ?? Date.now();

  function choose(k: RangeKey) {
    setRange(k);
    router.replace(`${path}?range=${k}`, { scroll: false });
  }

  return (
    <>
      <div className="page-head">
        <Link href="/" className="small">
          ← Fleet
        </Link>
        <h1 data-testid="backend-title">{id}</h1>
        {b ? <StateBadge state={b.state} testId={`state-${id}`} /> : null}
        {b ? <span className="meta">since {formatAgo(b.since, now)} · {b.url}</span> : null}
        {b?.restartConfigured ? (
          <button
            type="button"
            style={{ marginLeft: "auto" }}
            className={b.restartRecommended ? "danger" : undefined}
            disabled={b.pendingRestartId !== null}
            onClick={() => setDialog(true)}
            data-testid={`restart-${id}`}
          >
            {b.pendingRestartId !== null ? "Restarting…" : "Restart…"}
          </button>
        ) : null}
      </div>
      {b ? (
        <div className="panel" style={{ marginBottom: "1rem" }}>
          <dl className="metrics" style={{ gridTemplateColumns: "repeat(auto-fill, minmax(110px, 1fr))" }}>
            <div><dt>Running</dt><dd>{formatCount(b.running)}</dd></div>
            <div><dt>Waiting</dt><dd>{formatCount(b.waiting)}</dd></div>
            <div><dt>Steps/s</dt><dd>{formatRate(b.stepsPerSecond)}</dd></div>
            <div><dt>Gen tok/s</dt><dd>{formatRate(b.generationTokensPerSecond)}</dd></div>
            <div><dt>Prompt tok/s</dt><dd>{formatRate(b.promptTokensPerSecond)}</dd></div>
            <div><dt>KV cache</dt><dd>{formatPercent(b.kvCacheUsage)}</dd></div>
          </dl>
          {b.restartRecommended ? (
            <div className="recommend" style={{ marginTop: ".6rem" }}>
              <strong>Restart recommended</strong>
            </div>
          ) : null}
          <ul className="reasons" style={{ marginTop: ".5rem" }}>
            {b.reasons.map((r, i) => (
              <li key={i}>{r}</li>
            ))}
          </ul>
        </div>
      ) : null}

      {b ? <OnCallPanel b={b} operator={operator} onChanged={() => void fleet.mutate()} /> : null}

      <div className="page-head" style={{ marginBottom: ".6rem" }}>
        <div className="ranges" role="group" aria-label="Time range">
          {RANGES.map((r) => (
            <button key={r.key} type="button" aria-pressed={range === r.key} onClick={() => choose(r.key)} data-testid={`range-${r.key}`}>
              {r.label}
            </button>
          ))}
        </div>
        {h ? (
          <span className="meta">
            {h.points.length} {h.resolution === "raw" ? "readings" : "per-minute points"}
            {history.isValidating ? " · updating" : ""}
          </span>
        ) : null}
      </div>
      {history.error ? (
        <div className="banner error" role="alert">
          {(history.error as Error).message}
        </div>
      ) : null}
      <div className="charts">
        {CHARTS.map((c) => (
          <section className="panel" key={c.title}>
            <h3 style={{ marginBottom: ".4rem" }}>{c.title}</h3>
            {series ? (
              <TimeChart data={c.pick(series)} series={c.series} height={190} markers={markers} xRange={xRange} yRanges={c.yRanges} ariaLabel={`${id}: ${c.title}`} testId="history-chart" />
            ) : (
              <p className="empty">Loading…</p>
            )}
          </section>
        ))}
      </div>
      <div className="legend-marks">
        <span>restart</span>
        <span className="state">state change</span>
      </div>

      <section className="section">
        <h2>State changes</h2>
        <div className="panel">
          {h && h.transitions.length ? (
            <ol className="timeline" data-testid="timeline">
              {[...h.transitions].reverse().map((t, i) => (
                <li key={`${t.at}-${i}`}>
                  <span className="when">{formatDateTime(t.at)}</span>
                  <div>
                    {isState(t.from) ? <StateBadge state={t.from} /> : <span className="muted small">start</span>} →{" "}
                    {isState(t.to) ? <StateBadge state={t.to} /> : t.to}
                    <ul className="reasons">
                      {t.reasons.map((r, j) => (
                        <li key={j}>{r}</li>
                      ))}
                    </ul>
                  </div>
                </li>
              ))}
            </ol>
          ) : (
            <p className="empty">No state changes in this range.</p>
          )}
        </div>
      </section>

      <section className="section">
        <h2>Restarts in this range</h2>
        {h ? <RestartsTable restarts={h.restarts} showBackend={false} /> : null}
        <p className="small">
          <Link href={`/restarts?backend=${encodeURIComponent(id)}`}>All restarts of {id} →</Link>
        </p>
      </section>
      {dialog && b ? (
        <RestartDialog
          backend={b}
          operator={operator}
          now={now}
          onClose={() => setDialog(false)}
          onAccepted={() => {
            setDialog(false);
            void fleet.mutate();
            void history.mutate();
          }}
        />
      ) : null}
    </>
  );
}
