"use client";
/** One backend over a chosen range: charts with restarts and state changes marked, the timeline, its restarts. */
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { useEffect, useMemo, useState } from "react";
import useSWR from "swr";
import type uPlot from "uplot";
import type { FleetResponse, HistoryResponse, TransitionDTO, Viewer } from "@/lib/api/types";
import { canAct } from "@/lib/ui/access";
import { BACKEND_STATES, type BackendState } from "@/lib/core/states";
import { chartText, hasData, RANGES, rangeMs, toHistorySeries, toMarkers, type HistorySeries, type RangeKey } from "@/lib/ui/chart";
import { collapseBlips, filterTransitions, BLIP_SECONDS } from "@/lib/ui/timeline";
import { getJson } from "@/lib/ui/fetcher";
import { formatAgo, formatCount, formatDuration, formatPercent, formatRate } from "@/lib/core/format";
import { stateLabel } from "@/lib/ui/state";
import { Time, useTimeZone } from "./TimeZone";
import type { OutagesResponse } from "@/lib/api/types";
import { OutagesTable, UptimeTable } from "./OutagesTable";
import { OnCallPanel } from "./OnCallPanel";
import { RestartDialog } from "./RestartDialog";
import { ReplayPanel } from "./ReplayPanel";
import { RestartsTable } from "./RestartsTable";
import { ErrorBanner } from "./Review";
import { StateBadge } from "./StateBadge";
import { ReasonList } from "./Reasons";
import { TimeChart, type ChartSeries } from "./TimeChart";
import { WhoCanAct } from "./WhoCanAct";
import { FLEET_POLLING } from "./FleetView";

/** Short ranges refresh often; a week of minute rollups changes slowly. */
const REFRESH_MS: Record<RangeKey, number> = { "15m": 3000, "1h": 5000, "24h": 30_000, "7d": 60_000 };

type ChartDef = {
  title: string;
  series: ChartSeries[];
  pick: (s: HistorySeries) => uPlot.AlignedData;
  yRanges?: Record<string, [number, number]>;
};

const pct = (v: number | null) => (v === null ? "—" : `${v.toFixed(0)}%`);

/**
 * Prompt and generation tokens get panels of their own: prompt runs in thousands per second and
 * generation in tens, so on one axis the generation line lies flat on the floor.
 */
const CHARTS: ChartDef[] = [
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
    title: "Generation tokens per second",
    series: [{ label: "generation tok/s", color: "--series-1", scale: "gen", fill: true, format: formatRate }],
    pick: (s) => [s.x, s.generationTokensPerSecond],
  },
  {
    title: "Prompt tokens per second",
    series: [{ label: "prompt tok/s", color: "--series-4", scale: "prompt", fill: true, format: formatRate }],
    pick: (s) => [s.x, s.promptTokensPerSecond],
  },
  {
    title: "KV-cache use (%)",
    series: [{ label: "KV cache", color: "--series-4", scale: "pct", fill: true, format: pct }],
    pick: (s) => [s.x, s.kvCachePercent],
    yRanges: { pct: [0, 100] },
  },
];

const ms = (v: number | null) => (v === null ? null : v * 1000);
const fmtMs = (v: number | null) => (v === null ? "—" : `${formatRate(v)} ms`);
const fmtS = (v: number | null) => (v === null ? "—" : `${formatRate(v)} s`);
const msSeries = (s: Array<number | null>) => s.map(ms);

/**
 * What operators read on the vLLM Grafana dashboard, from the same /metrics reads: percentiles of
 * the requests finished between two reads (bucket deltas), finish reasons and preemptions. Drawn
 * only when the backend exposes them (another engine's backend shows none of these).
 */
const LATENCY_CHARTS: ChartDef[] = [
  {
    title: "Time to first token (ms)",
    series: [
      { label: "p50", color: "--series-1", scale: "ms", format: fmtMs },
      { label: "p95", color: "--series-2", scale: "ms", format: fmtMs },
    ],
    pick: (s) => [s.x, msSeries(s.latency.ttftP50), msSeries(s.latency.ttftP95)],
  },
  {
    title: "Inter-token latency (ms)",
    series: [
      { label: "p50", color: "--series-1", scale: "ms", format: fmtMs },
      { label: "p95", color: "--series-2", scale: "ms", format: fmtMs },
    ],
    pick: (s) => [s.x, msSeries(s.latency.itlP50), msSeries(s.latency.itlP95)],
  },
  {
    title: "End-to-end request latency (s)",
    series: [
      { label: "p50", color: "--series-3", scale: "s", format: fmtS },
      { label: "p95", color: "--series-2", scale: "s", format: fmtS },
    ],
    pick: (s) => [s.x, s.latency.e2eP50, s.latency.e2eP95],
  },
  {
    title: "Queue time (s)",
    series: [
      { label: "p50", color: "--series-4", scale: "s", format: fmtS },
      { label: "p95", color: "--series-2", scale: "s", format: fmtS },
    ],
    pick: (s) => [s.x, s.latency.queueP50, s.latency.queueP95],
  },
  {
    title: "Finished requests per second, by finish reason",
    series: [
      { label: "stop", color: "--series-3", scale: "rps", format: formatRate },
      { label: "length", color: "--series-1", scale: "rps", format: formatRate },
      { label: "abort", color: "--series-2", scale: "rps", format: formatRate },
      { label: "error", color: "--bad", scale: "rps", format: formatRate },
      { label: "other", color: "--series-4", scale: "rps", format: formatRate },
    ],
    pick: (s) => [s.x, s.latency.successStopPerSecond, s.latency.successLengthPerSecond, s.latency.successAbortPerSecond, s.latency.successErrorPerSecond, s.latency.successOtherPerSecond],
  },
  {
    title: "Preemptions per second",
    series: [{ label: "preemptions/s", color: "--series-2", scale: "pre", fill: true, format: formatRate }],
    pick: (s) => [s.x, s.latency.preemptionsPerSecond],
  },
];

const isState = (s: string | null): s is BackendState => s !== null && (BACKEND_STATES as readonly string[]).includes(s);

/** A fixed window from the URL (?from=&to=, ms since epoch), so a shared link shows the same incident. */
export type FixedWindow = { from: number; to: number } | null;

function TimelineItem({ t }: { t: TransitionDTO }) {
  return (
    <li>
      <span className="when">
        <Time at={t.at} />
      </span>
      <div>
        {isState(t.from) ? <StateBadge state={t.from} /> : <span className="muted small">start</span>} → {isState(t.to) ? <StateBadge state={t.to} /> : t.to}
        <ReasonList reasons={t.reasons} />
      </div>
    </li>
  );
}

function Timeline({ transitions, loading }: { transitions: HistoryResponse["transitions"]; loading: boolean }) {
  const [state, setState] = useState("");
  const [expand, setExpand] = useState(false);
  const shown = filterTransitions(transitions, state);
  const entries = useMemo(() => collapseBlips(shown).reverse(), [shown]);
  const folded = entries.filter((e) => e.kind === "blips").length;
  return (
    <section className="section">
      <div className="page-head" style={{ marginBottom: ".5rem" }}>
        <h2 style={{ margin: 0 }}>State changes</h2>
        <div className="filters" style={{ margin: 0 }}>
          <div style={{ minWidth: "10rem" }}>
            <label htmlFor="timeline-state" className="sr-only">
              Show changes of
            </label>
            <select id="timeline-state" value={state} onChange={(e) => setState(e.target.value)} data-testid="timeline-filter">
              <option value="">All states</option>
              {BACKEND_STATES.map((st) => (
                <option key={st} value={st}>
                  into or out of {stateLabel(st)}
                </option>
              ))}
            </select>
          </div>
          {folded > 0 || expand ? (
            <label className="check small">
              <input type="checkbox" checked={expand} onChange={(e) => setExpand(e.target.checked)} data-testid="timeline-expand" />
              List short blips one by one
            </label>
          ) : null}
        </div>
      </div>
      <div className="panel">
        {loading ? (
          <p className="empty">Loading…</p>
        ) : entries.length ? (
          <ol className="timeline" data-testid="timeline">
            {expand
              ? [...shown].reverse().map((t, i) => <TimelineItem key={`${t.at}-${i}`} t={t} />)
              : entries.map((e, i) =>
                  e.kind === "change" ? (
                    <TimelineItem key={`${e.transition.at}-${i}`} t={e.transition} />
                  ) : (
                    <li key={`blips-${e.first}`} data-testid="timeline-blips">
                      <span className="when">
                        <Time at={e.last} />
                      </span>
                      <div>
                        {isState(e.visited) ? <StateBadge state={e.visited} /> : e.visited}{" "}
                        <span className="small">
                          {e.count} short {e.count === 1 ? "visit" : "visits"} from {e.base} and back since <Time at={e.first} />, the longest {formatDuration(e.longestSeconds)}
                        </span>
                        <ul className="reasons">
                          <li>each resolved within {formatDuration(BLIP_SECONDS)}, before anything would have been called stuck</li>
                        </ul>
                      </div>
                    </li>
                  ),
                )}
          </ol>
        ) : (
          <p className="empty">{state ? `No changes into or out of ${state} in this range.` : "No state changes in this range."}</p>
        )}
      </div>
    </section>
  );
}

export function BackendView({
  id,
  initialRange,
  initialWindow,
  viewer,
}: {
  id: string;
  initialRange: RangeKey;
  initialWindow: FixedWindow;
  /** Who is looking: a viewer gets no action buttons (the API would answer 403), only who can act. */
  viewer: Viewer | null;
}) {
  const operator = viewer?.name ?? null;
  const router = useRouter();
  const path = usePathname();
  const { fmt } = useTimeZone();
  const [range, setRange] = useState<RangeKey>(initialRange);
  const [fixed, setFixed] = useState<FixedWindow>(initialWindow);
  const [dialog, setDialog] = useState(false);
  const fleet = useSWR<FleetResponse>("/api/fleet", getJson, FLEET_POLLING);
  const history = useSWR<HistoryResponse & { series: HistorySeries }>(
    ["history", id, range, fixed?.from, fixed?.to],
    async () => {
      const to = fixed?.to ?? Date.now();
      const from = fixed?.from ?? to - rangeMs(range);
      const answer = await getJson<HistoryResponse>(`/api/backends/${encodeURIComponent(id)}/history?from=${from}&to=${to}`);
      // Decoded here, once per answer: spans that do not fit their points are the fetch's error (shown in the banner), not a broken render.
      return { ...answer, series: toHistorySeries(answer.columns) };
    },
    // A fixed window in the past does not change; a live one (or one that ends in the future)
    // follows its range's pace.
    { refreshInterval: fixed && fixed.to < Date.now() ? 0 : REFRESH_MS[range], keepPreviousData: true },
  );
  const h = history.data;
  // Outages overlapping the window shown (and this backend's uptime), fetched once the window is known.
  const outages = useSWR<OutagesResponse>(
    // Keyed to the half-minute: the live window moves on every history poll, outages change slowly.
    h ? ["outages", id, fixed?.from ?? Math.floor(h.to / 30_000), fixed?.to] : null,
    () => getJson<OutagesResponse>(`/api/outages?backend=${encodeURIComponent(id)}&from=${h!.from}&to=${h!.to}`),
    { keepPreviousData: true },
  );
  const b = fleet.data?.backends.find((x) => x.id === id);
  const series = h?.series ?? null;
  const markers = useMemo(() => (h ? toMarkers(h.transitions, h.restarts, h.from, h.to) : []), [h]);
  const xRange: [number, number] | undefined = h ? [h.from / 1000, h.to / 1000] : undefined;
  const now = fleet.data?.generatedAt ?? Date.now();

  useEffect(() => {
    if (b) document.title = `${b.state === "stuck" || b.state === "down" ? `${stateLabel(b.state)} · ` : ""}${id} · stepwatch`;
  }, [b?.state, id]); // eslint-disable-line react-hooks/exhaustive-deps -- the title follows the state only

  function choose(k: RangeKey) {
    setRange(k);
    setFixed(null);
    router.replace(`${path}?range=${k}`, { scroll: false });
  }

  /** Freeze the window now shown into the URL: the link to share for an incident. */
  function holdWindow() {
    if (!h) return;
    const w = { from: h.from, to: h.to };
    setFixed(w);
    router.replace(`${path}?from=${w.from}&to=${w.to}`, { scroll: false });
  }

  const csvHref = h ? `/api/backends/${encodeURIComponent(id)}/history?from=${h.from}&to=${h.to}&format=csv` : undefined;

  return (
    <>
      <div className="page-head">
        <Link href="/" className="small">
          ← Fleet
        </Link>
        <h1 data-testid="backend-title">{id}</h1>
        {b ? <StateBadge state={b.state} testId={`state-${id}`} /> : null}
        {b ? (
          <span className="meta" title={b.since ? `since ${fmt(b.since)}` : undefined}>
            since {formatAgo(b.since, now)} · {b.url}
          </span>
        ) : null}
        {b?.restartConfigured && !canAct(viewer) ? (
          <WhoCanAct viewer={viewer} verbs="restart" testId={`who-can-restart-${id}`} style={{ marginLeft: "auto" }} />
        ) : b?.restartConfigured ? (
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
          <ReasonList reasons={b.reasons} style={{ marginTop: ".5rem" }} />
        </div>
      ) : null}

      {b ? <OnCallPanel b={b} viewer={viewer} onChanged={() => void fleet.mutate()} /> : null}

      <div className="page-head" style={{ marginBottom: ".6rem" }}>
        <div className="ranges" role="group" aria-label="Time range">
          {RANGES.map((r) => (
            <button key={r.key} type="button" aria-pressed={!fixed && range === r.key} onClick={() => choose(r.key)} data-testid={`range-${r.key}`}>
              {r.label}
            </button>
          ))}
        </div>
        {fixed ? (
          <span className="meta" data-testid="fixed-window">
            fixed window <Time at={fixed.from} /> to <Time at={fixed.to} /> ·{" "}
            <button type="button" className="link" onClick={() => choose(range)}>
              back to live
            </button>
          </span>
        ) : (
          <button type="button" className="link small" onClick={holdWindow} disabled={!h} data-testid="hold-window" title="Put this window's from/to into the address, to share or review later">
            Link to this window
          </button>
        )}
        {h ? (
          <span className="meta">
            {h.count} {h.resolution === "raw" || !h.bucketSeconds ? "readings" : `${formatDuration(h.bucketSeconds)} means`}
            {fixed && fixed.to < Date.now() ? " · a past window: not refreshed" : ` · charts refresh every ${REFRESH_MS[range] / 1000} s`}
            {fleet.data?.pollIntervalSeconds ? `, the backend is read every ${fleet.data.pollIntervalSeconds} s` : ""}
            {history.isValidating ? " · updating" : ""}
            {csvHref ? (
              <>
                {" · "}
                <a href={csvHref} download data-testid="history-csv">
                  CSV
                </a>
              </>
            ) : null}
          </span>
        ) : null}
      </div>
      <ErrorBanner error={history.error} />
      <div className="charts">
        {[...CHARTS, ...LATENCY_CHARTS.filter((c) => series && hasData(c.pick(series).slice(1) as Array<Array<number | null>>))].map((c) => {
          const data = series ? c.pick(series) : null;
          const text = data
            ? chartText(
                `${id}: ${c.title}`,
                data[0] as number[],
                c.series.map((cs, i) => ({ label: cs.label, values: data[i + 1] as Array<number | null>, format: (v: number) => (cs.format ? cs.format(v) : String(v)) })),
                markers.length,
              )
            : "";
          return (
            <section className="panel" key={c.title}>
              <h3 style={{ marginBottom: ".4rem" }}>{c.title}</h3>
              {data ? (
                <TimeChart data={data} series={c.series} height={190} markers={markers} xRange={xRange} yRanges={c.yRanges} ariaLabel={text} testId="history-chart" />
              ) : (
                <p className="empty">Loading…</p>
              )}
            </section>
          );
        })}
      </div>
      {series && series.x.length > 0 && !LATENCY_CHARTS.some((c) => hasData(c.pick(series).slice(1) as Array<Array<number | null>>)) ? (
        <p className="muted small" data-testid="no-latency">
          No latency charts: this backend exposes no vLLM latency histograms in this range (they need two reads of one process with requests finished between them).
        </p>
      ) : null}
      <div className="legend-marks" data-testid="marker-legend">
        <span className="restart">restart (solid)</span>
        <span className="state tone-line-bad">state change into stuck or down</span>
        <span className="state tone-line-warn">into stalled</span>
        <span className="state tone-line-info">into starting or restarting</span>
        <span className="state tone-line-ok">into idle or busy</span>
        <span className="hint">hover a line to see what it was</span>
      </div>

      <Timeline transitions={h?.transitions ?? []} loading={!h} />

      <ReplayPanel id={id} />

      <section className="section" data-testid="backend-outages">
        <h2>Outages in this range</h2>
        {outages.data ? (
          <>
            <UptimeTable uptime={outages.data.uptime} showBackend={false} />
            <div style={{ marginTop: ".6rem" }}>
              <OutagesTable outages={outages.data.outages} showBackend={false} now={now} />
            </div>
          </>
        ) : outages.error ? (
          <p className="form-error">{(outages.error as Error).message}</p>
        ) : (
          <p className="empty">Loading…</p>
        )}
        <p className="small">
          <Link href={`/history?backend=${encodeURIComponent(id)}`}>All outages of {id} →</Link>
        </p>
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
