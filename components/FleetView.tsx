"use client";
/** The fleet page: one card per backend and the proxies, polled live from GET /api/fleet. */
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import useSWR from "swr";
import type { FleetBackend, FleetProxy, FleetRecentResponse, FleetResponse, FleetSeed, SparkPoint, Viewer } from "@/lib/api/types";
import { canAct } from "@/lib/ui/access";
import { BACKEND_STATES } from "@/lib/core/states";
import { sparklineText, toSparkline } from "@/lib/ui/chart";
import { getJson, polling, refreshText } from "@/lib/ui/fetcher";
import {
  attentionTitle,
  distinct,
  engineLabel,
  engineOf,
  filterFleet,
  FIRST_SCREEN,
  firstScreenOf,
  fleetFromSeed,
  fleetQueryString,
  fleetSections,
  labelFilterText,
  labelKeys,
  labelTexts,
  nextSort,
  parseLabelFilter,
  parseFleetQuery,
  sortFleet,
  sortTable,
  stateCounts,
  type FleetQuery,
  type TableColumn,
} from "@/lib/ui/fleet";
import { formatAgo, formatCount, formatPercent, formatRate } from "@/lib/core/format";
import { frontedLabel } from "@/lib/ui/proxy";
import { STATE_TONE, stateLabel } from "@/lib/ui/state";
import { ConfigErrorBanner } from "./ConfigErrorBanner";
import { useTimeZone } from "./TimeZone";
import { FailingChannels, OnCallStatus } from "./OnCallStatus";
import { ProxyBadge, StateBadge } from "./StateBadge";
import { ReasonList } from "./Reasons";
import { RestartDialog } from "./RestartDialog";
import { TimeChart } from "./TimeChart";
import { WhoCanAct } from "./WhoCanAct";

/**
 * How often this page asks stepwatch for the fleet. The backends themselves are read by the
 * watcher every pollIntervalSeconds; asking faster than ~1.5 s only costs requests.
 */
export const FLEET_REFRESH_MS = 1500;
/** The SWR options the fleet list is polled with, and what the page says about them (the same numbers). */
export const FLEET_POLLING = polling(FLEET_REFRESH_MS);
/** The sparklines' points (GET /api/fleet/recent) move one point per poll interval: no need to ask as often. */
export const SPARK_REFRESH_MS = 5000;
const NO_POINTS: SparkPoint[] = [];

const subscribeNothing = () => () => {};
/**
 * False in the server's render and while the browser hydrates it, true from the render after
 * (and at once when the page is reached by a client navigation): what the server rendered is
 * hydrated as it is, then the rest of the fleet is rendered (FIRST_SCREEN).
 */
function useHydrated(): boolean {
  return useSyncExternalStore(
    subscribeNothing,
    () => true,
    () => false,
  );
}

const SPARK_SERIES = [
  { label: "running", color: "--series-1", scale: "req", fill: true },
  { label: "gen tok/s", color: "--series-2", scale: "tok" },
];

/** A few requests / a few tokens per second fill a fifth of the height, not all of it. */
const SPARK_FLOORS = { req: 4, tok: 20 };

/**
 * True once the element has come within a screen of the viewport (and stays true). A chart is
 * drawn only then: 500 cards would otherwise build 500 uPlot charts, canvases and resize observers
 * on the first load, most of them never scrolled to.
 */
function useNearViewport<T extends Element>(): [React.RefObject<T | null>, boolean] {
  const ref = useRef<T | null>(null);
  const [near, setNear] = useState(false);
  useEffect(() => {
    const el = ref.current;
    if (!el || near) return;
    if (typeof IntersectionObserver === "undefined") return setNear(true);
    const io = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && setNear(true), { rootMargin: "100% 0px" });
    io.observe(el);
    return () => io.disconnect();
  }, [near]);
  return [ref, near];
}

function Sparkline({ b, points }: { b: FleetBackend; points: SparkPoint[] }) {
  const data = useMemo(() => toSparkline(points), [points]);
  const [ref, near] = useNearViewport<HTMLDivElement>();
  return (
    <div ref={ref}>
      {near ? (
        <TimeChart data={data} series={SPARK_SERIES} height={44} yFloors={SPARK_FLOORS} sparkline ariaLabel={sparklineText(b.id, data)} />
      ) : (
        // The chart's own box (.spark, 44 px): drawing it later moves nothing.
        <div className="chart-host">
          <div className="spark" role="img" aria-label={sparklineText(b.id, data)} />
        </div>
      )}
      <div className="spark-legend" aria-hidden="true">
        {SPARK_SERIES.map((s) => (
          <span key={s.label} style={{ ["--swatch" as string]: `var(${s.color})` }}>
            {s.label === "running" ? "running requests" : "generation tokens/s"}
          </span>
        ))}
      </div>
    </div>
  );
}

function BackendCard({ b, points, now, viewer, onRestart }: { b: FleetBackend; points: SparkPoint[]; now: number; viewer: Viewer | null; onRestart: () => void }) {
  const pending = b.pendingRestartId !== null;
  const { fmt } = useTimeZone();
  const engine = engineLabel(b);
  return (
    <article className={`card${b.restartRecommended ? " attention" : ""}`} data-testid={`backend-card-${b.id}`} data-state={b.state}>
      <div className="card-head">
        <div style={{ minWidth: 0 }}>
          <Link className="id" href={`/backends/${encodeURIComponent(b.id)}`} data-testid={`backend-link-${b.id}`}>
            {b.id}
          </Link>
          <div className="card-sub" title={b.url}>
            {engine ? <span data-testid={`engine-${b.id}`}>{engine} · </span> : null}
            {b.model ? `${b.model} · ` : ""}
            {b.url}
          </div>
          {labelTexts(b).length > 0 ? (
            <div className="card-sub" data-testid={`labels-${b.id}`}>
              {labelTexts(b).map((l) => (
                <span className="chip" key={l}>
                  {l}
                </span>
              ))}
            </div>
          ) : null}
          {b.engine === "ollama" && b.models.length > 0 ? (
            <div className="card-sub" data-testid={`models-${b.id}`}>
              loaded: {b.models.join(", ")}
            </div>
          ) : null}
        </div>
        <div className="card-state">
          <StateBadge state={b.state} testId={`state-${b.id}`} />
          <div className="muted small" title={b.since ? `since ${fmt(b.since)}` : undefined}>
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
      <Sparkline b={b} points={points} />
      <OnCallStatus b={b} />
      {b.configProblem ? (
        <div className="recommend config" data-testid={`config-problem-${b.id}`}>
          <strong>Configuration problem</strong>
          {b.configProblem}
        </div>
      ) : null}
      {b.restartRecommended ? (
        <div className="recommend" data-testid={`recommend-${b.id}`}>
          <strong>Restart recommended</strong>
          <span data-rule={b.reasons[0]?.rule}>{b.reasons[0]?.text ?? "No progress shown."}</span>
        </div>
      ) : null}
      {b.reasons.length > (b.restartRecommended ? 1 : 0) ? (
        <ReasonList reasons={b.reasons.slice(b.restartRecommended ? 1 : 0)} testId={`reasons-${b.id}`} />
      ) : null}
      <div className="card-foot">
        <span className="muted small">read {formatAgo(b.lastReadAt, now)}</span>
        {b.restartConfigured && !canAct(viewer) ? (
          <WhoCanAct viewer={viewer} verbs="restart" testId={`who-can-restart-${b.id}`} />
        ) : b.restartConfigured ? (
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

/** "1 of 2 healthy" beside a proxy's own state (null when the config names no backends for it). */
function FrontedBackends({ p }: { p: FleetProxy }) {
  const f = frontedLabel(p);
  if (!f) return null;
  return (
    <span className={`badge tone-${f.tone}`} data-testid={`proxy-${p.id}-backends`} title="backends this proxy fronts (proxies[].backends)">
      {f.text}
    </span>
  );
}

/**
 * How many backends are in each state, each a filter (the same `?state=` as the select): at 500
 * backends the first question is "how many are down", before any card. Clicking the active one
 * clears it. Every state has its button, 0 included: a state that comes and goes would move the
 * buttons after it, and the toolbar under them (a layout shift on a refresh).
 */
function StateCounts({ backends, query, onChange }: { backends: FleetBackend[]; query: FleetQuery; onChange: (q: FleetQuery) => void }) {
  const present = new Map(stateCounts(backends).map((c) => [c.state, c.count]));
  const counts = BACKEND_STATES.map((state) => ({ state, count: present.get(state) ?? 0 }));
  return (
    <div className="state-counts" role="group" aria-label="Backends by state" data-testid="state-counts">
      <button type="button" aria-pressed={query.state === ""} onClick={() => onChange({ ...query, state: "" })} data-testid="count-all">
        All <span className="n">{backends.length}</span>
      </button>
      {counts.map(({ state, count }) => (
        <button
          key={state}
          type="button"
          className={count ? `tone-${STATE_TONE[state]}` : "zero"}
          aria-pressed={query.state === state}
          onClick={() => onChange({ ...query, state: query.state === state ? "" : state })}
          data-testid={`count-${state}`}
        >
          {stateLabel(state)} <span className="n">{count}</span>
        </button>
      ))}
    </div>
  );
}

const TABLE_HEADS: Array<{ col: TableColumn | null; label: string; numeric?: boolean }> = [
  { col: null, label: "Backend" },
  { col: "state", label: "State" },
  { col: "engine", label: "Engine" },
  { col: "running", label: "Running", numeric: true },
  { col: "waiting", label: "Waiting", numeric: true },
  { col: "steps", label: "Steps/s", numeric: true },
  { col: "tokens", label: "Gen tok/s", numeric: true },
  { col: "since", label: "Since", numeric: true },
];

/**
 * A row's backend link followed inside the app (no page load), as <Link> would. The rows carry
 * plain <a>s: a <Link> per row is a client component with its own hooks, and each one on screen
 * asks the server for its backend page's payload (prefetch) right after the load, 16 at 720 px,
 * while the page itself is still being answered. One handler on the table instead; a click with a
 * modifier key or another button keeps the browser's own meaning (new tab, new window).
 */
function followRowLink(e: React.MouseEvent, push: (href: string) => void) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element).closest?.("a[href]");
  const href = a?.getAttribute("href");
  if (!a || !href?.startsWith("/") || a.getAttribute("target")) return;
  e.preventDefault();
  push(href);
}

/**
 * One row per backend, for fleets a wall of cards cannot show. Fixed column widths (each row a
 * grid of the same columns, app/globals.css) and tabular numbers, so a figure changing on refresh
 * never moves a column or the row under the pointer. The explicit roles keep it a table for
 * assistive technology: the rows are grids so that those off screen skip layout (content-visibility).
 */
function FleetTable({ backends, now, query, onChange }: { backends: FleetBackend[]; now: number; query: FleetQuery; onChange: (q: FleetQuery) => void }) {
  const router = useRouter();
  return (
    <div className="table-wrap fleet-table-wrap" data-testid="fleet-table-wrap">
      <table className="fleet-table" role="table" data-testid="fleet-table" onClick={(e) => followRowLink(e, router.push)}>
        <thead role="rowgroup">
          <tr role="row">
            {TABLE_HEADS.map((h) => (
              <th
                key={h.label}
                role="columnheader"
                className={h.numeric ? "num" : undefined}
                aria-sort={h.col && query.col === h.col ? (query.dir === "asc" ? "ascending" : "descending") : undefined}
              >
                {h.col ? (
                  <button type="button" className="link" onClick={() => onChange({ ...query, ...nextSort(query, h.col!) })} data-testid={`sort-${h.col}`}>
                    {h.label}
                    {query.col === h.col ? (query.dir === "asc" ? " ▲" : " ▼") : ""}
                  </button>
                ) : (
                  h.label
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody role="rowgroup">
          {backends.map((b) => (
            <tr key={b.id} role="row" data-testid={`fleet-row-${b.id}`} data-state={b.state}>
              <td role="cell" className="id-cell">
                <a href={`/backends/${encodeURIComponent(b.id)}`} title={b.url}>
                  {b.id}
                </a>
              </td>
              <td role="cell">
                <StateBadge state={b.state} testId={`row-state-${b.id}`} />
                {b.crashLoop ? (
                  <>
                    {" "}
                    <span className="badge tone-bad" data-testid={`row-crash-loop-${b.id}`} title={`${b.crashLoop.restarts} new processes not restarted by stepwatch`}>
                      crash loop
                    </span>
                  </>
                ) : null}
              </td>
              <td role="cell">{engineLabel(b) ?? "—"}</td>
              <td role="cell" className="num">{formatCount(b.running)}</td>
              <td role="cell" className="num">{formatCount(b.waiting)}</td>
              <td role="cell" className="num">{formatRate(b.stepsPerSecond)}</td>
              <td role="cell" className="num">{formatRate(b.generationTokensPerSecond)}</td>
              <td role="cell" className="num">{formatAgo(b.since, now)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One of the toolbar's "all, or one of these" filters; not drawn when the fleet offers no choice. */
function FilterSelect({ name, label, all, value, options, onChange }: { name: string; label: string; all: string; value: string; options: string[]; onChange: (v: string) => void }) {
  if (options.length === 0) return null;
  return (
    <div>
      <label htmlFor={`fleet-${name}`}>{label}</label>
      <select id={`fleet-${name}`} value={value} onChange={(e) => onChange(e.target.value)} data-testid={`fleet-${name}`}>
        <option value="">{all}</option>
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </div>
  );
}

function FleetToolbar({ query, onChange, backends }: { query: FleetQuery; onChange: (q: FleetQuery) => void; backends: FleetBackend[] }) {
  const models = distinct(backends.map((b) => b.model));
  const engines = distinct(backends.map(engineOf));
  const labels = distinct(backends.flatMap(labelTexts));
  const keys = labelKeys(backends);
  // The select holds one label; a URL may ask several (?label=a:1&label=b:2), shown as the first.
  const label = query.labels[0] ? labelFilterText(query.labels[0]) : "";
  const set = (patch: Partial<FleetQuery>) => onChange({ ...query, ...patch });
  return (
    <div className="filters fleet-filters" data-testid="fleet-filters">
      <div>
        <label htmlFor="fleet-search">Search</label>
        <input id="fleet-search" type="search" placeholder="id, model or URL" value={query.q} onChange={(e) => set({ q: e.target.value })} data-testid="fleet-search" />
      </div>
      <div>
        <label htmlFor="fleet-state">State</label>
        <select id="fleet-state" value={query.state} onChange={(e) => set({ state: e.target.value as FleetQuery["state"] })} data-testid="fleet-state">
          <option value="">All states</option>
          <option value="attention">Needs attention</option>
          {BACKEND_STATES.map((st) => (
            <option key={st} value={st}>
              {stateLabel(st)}
            </option>
          ))}
        </select>
      </div>
      <FilterSelect name="engine" label="Engine" all="All engines" value={query.engine} options={engines} onChange={(engine) => set({ engine })} />
      <FilterSelect name="model" label="Model" all="All models" value={query.model} options={models} onChange={(model) => set({ model })} />
      <FilterSelect name="label" label="Label" all="All labels" value={label} options={labels} onChange={(l) => set({ labels: [parseLabelFilter(l)].filter((f) => f !== null) })} />
      <div className="view-toggle" role="group" aria-label="View">
        {(["cards", "table"] as const).map((v) => (
          <button key={v} type="button" aria-pressed={query.view === v} onClick={() => set({ view: v })} data-testid={`fleet-view-${v}`}>
            {v === "cards" ? "Cards" : "Table"}
          </button>
        ))}
      </div>
      {/* The table sorts by its column headers and lists every backend in one list. */}
      {query.view === "cards" ? (
        <>
          <div>
            <label htmlFor="fleet-sort">Sort</label>
            <select id="fleet-sort" value={query.sort} onChange={(e) => set({ sort: e.target.value === "name" ? "name" : "attention" })} data-testid="fleet-sort">
              <option value="attention">Needs attention first</option>
              <option value="name">Name</option>
            </select>
          </div>
          <label className="check">
            <input type="checkbox" checked={query.group && !query.groupLabel} onChange={(e) => set({ group: e.target.checked, groupLabel: "" })} data-testid="fleet-group" />
            Group by model
          </label>
          {keys.length > 0 ? (
            <div>
              <label htmlFor="fleet-group-label">Group by label</label>
              <select id="fleet-group-label" value={query.groupLabel} onChange={(e) => set({ groupLabel: e.target.value, group: false })} data-testid="fleet-group-label">
                <option value="">None</option>
                {keys.map((k) => (
                  <option key={k}>{k}</option>
                ))}
              </select>
            </div>
          ) : null}
        </>
      ) : null}
    </div>
  );
}

export function FleetView({ initial, viewer }: { initial: FleetSeed | null; viewer: Viewer | null }) {
  const operator = viewer?.name ?? null;
  // Decoded once: SWR shows it until the first answer of its own.
  const [first] = useState(() => (initial ? fleetFromSeed(initial) : undefined));
  const { data, error, mutate } = useSWR<FleetResponse>("/api/fleet", getJson, {
    ...FLEET_POLLING,
    fallbackData: first,
    revalidateOnFocus: true,
  });
  const router = useRouter();
  const path = usePathname();
  const params = useSearchParams();
  const [query, setQuery] = useState<FleetQuery>(() => parseFleetQuery(params));
  // The sparklines' points only where there are sparklines: the table of 500 rows needs none.
  const { data: recent } = useSWR<FleetRecentResponse>(query.view === "cards" ? "/api/fleet/recent" : null, getJson, { ...polling(SPARK_REFRESH_MS), revalidateOnFocus: true });
  const [restarting, setRestarting] = useState<string | null>(null);
  const [flash, setFlash] = useState<string | null>(null);
  const { fmt } = useTimeZone();
  const now = data?.generatedAt ?? Date.now();
  const all = useMemo(() => data?.backends ?? [], [data]);
  const dialogBackend = restarting ? all.find((b) => b.id === restarting) : undefined;
  const lastRead = all.reduce<number | null>((m, b) => (b.lastReadAt !== null && (m === null || b.lastReadAt > m) ? b.lastReadAt : m), null);
  const filtered = useMemo(() => filterFleet(all, query), [all, query]);
  const shown = useMemo(() => (query.view === "table" ? sortTable(filtered, query.col, query.dir) : sortFleet(filtered, query.sort)), [filtered, query]);
  const sections = useMemo(() => fleetSections(shown, query), [shown, query]);
  const hydrated = useHydrated();
  const poll = (data as (FleetResponse & { pollIntervalSeconds?: number }) | undefined)?.pollIntervalSeconds;

  const title = attentionTitle(all);
  useEffect(() => {
    document.title = title;
  }, [title]);

  function changeQuery(q: FleetQuery) {
    setQuery(q);
    router.replace(`${path}${fleetQueryString(q)}`, { scroll: false });
  }

  const card = (b: FleetBackend) => <BackendCard key={b.id} b={b} points={recent?.backends[b.id] ?? NO_POINTS} now={now} viewer={viewer} onRestart={() => setRestarting(b.id)} />;

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
      <ConfigErrorBanner error={data?.configError} />
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
          {lastRead ? `last read ${fmt(lastRead)}` : "not read yet"}
          {poll ? ` · each backend is read every ${poll} s` : ""} · this page {refreshText(FLEET_POLLING)}
        </span>
      </div>
      {all.length > 0 ? <StateCounts backends={all} query={query} onChange={changeQuery} /> : null}
      {all.length > 1 ? <FleetToolbar query={query} onChange={changeQuery} backends={all} /> : null}
      {!data ? (
        <p className="empty">Loading…</p>
      ) : all.length === 0 ? (
        <p className="empty">No backends configured. Add them to stepwatch.config.json.</p>
      ) : shown.length === 0 ? (
        <p className="empty" data-testid="fleet-none-match">
          No backend matches these filters ({all.length} in the fleet).{" "}
          <button type="button" className="link" onClick={() => changeQuery({ ...query, q: "", state: "", engine: "", model: "", labels: [] })}>
            Clear filters
          </button>
        </p>
      ) : query.view === "table" ? (
        <FleetTable backends={hydrated ? shown : shown.slice(0, FIRST_SCREEN.rows)} now={now} query={query} onChange={changeQuery} />
      ) : (
        (hydrated ? sections : firstScreenOf(sections, FIRST_SCREEN.cards)).map((g) => (
          <section key={g.key} className={g.heading !== null ? "fleet-group" : undefined} data-testid={g.heading !== null ? "fleet-group-section" : undefined}>
            {g.heading !== null ? (
              <h2>
                {g.heading} <span className="muted small">{g.count}</span>
              </h2>
            ) : null}
            <div className="grid" data-testid="fleet-grid">
              {g.backends.map(card)}
            </div>
          </section>
        ))
      )}
      {data && data.proxies.length > 0 ? (
        <section className="section">
          <h2>Proxies</h2>
          <div className="proxies">
            {data.proxies.map((p) => (
              <div className="proxy" key={p.id} data-testid={`proxy-${p.id}`}>
                <span className="id">{p.id}</span>
                <ProxyBadge state={p.state} />
                <FrontedBackends p={p} />
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
