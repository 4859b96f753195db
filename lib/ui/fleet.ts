/**
 * Fleet-size views, pure and tested: search, filters (state, engine, model, labels), "needs
 * attention" first, grouping by model or by a label key, and the tab title that counts what needs attention. The order of
 * attention comes from the one list of states (STATE_INFO's health), so a new state sorts itself.
 */
import { ENGINE_LABELS } from "../core/engine";
import type { FleetBackend, FleetResponse, FleetSeed } from "../api/types";
import { fromColumnRows } from "../core/columns";
import { LABEL_KEY_RE } from "../core/labels";
import { BACKEND_STATES, STATE_INFO, type BackendState, type Health } from "../core/states";

export type FleetSort = "attention" | "name";
/** Cards (the default, with sparklines) or one dense row per backend: 500 cards are 60,000 px tall. */
export type FleetLayout = "cards" | "table";
/** The table's sortable columns. */
export const TABLE_COLUMNS = ["state", "engine", "running", "waiting", "steps", "tokens", "since"] as const;
export type TableColumn = (typeof TABLE_COLUMNS)[number];
export type SortDir = "asc" | "desc";
/** "" all; "attention" everything not healthy; or one state. */
export type StateFilter = "" | "attention" | BackendState;

export interface FleetQuery {
  q: string;
  state: StateFilter;
  engine: string;
  model: string;
  /** `?label=site:ams` (repeatable): a backend shows when it carries every one of these. */
  labels: LabelFilter[];
  sort: FleetSort;
  /** Group by model (`?group=model`). */
  group: boolean;
  /** Group by this label key instead (`?group=label:site`), "" for none. */
  groupLabel: string;
  view: FleetLayout;
  /** The table's sort column; null keeps the attention order. */
  col: TableColumn | null;
  dir: SortDir;
}

export interface LabelFilter {
  key: string;
  value: string;
}

export const EMPTY_QUERY: FleetQuery = { q: "", state: "", engine: "", model: "", labels: [], sort: "attention", group: false, groupLabel: "", view: "cards", col: null, dir: "asc" };

const HEALTH_RANK: Record<Health, number> = { no: 0, watch: 1, unknown: 2, yes: 3 };

/**
 * States that ask nothing of anyone: parked on purpose (sleeping) or never judgeable (no-metrics,
 * an Ollama that exports none). They sort after the healthy ones, or an Ollama fleet's permanent
 * "No metrics" cards would push every healthy backend below the fold. `unknown` (a first or one
 * failed read) is not quiet: it may be the start of a "down", so it sorts among the healthy ones
 * (attentionRank), not after them.
 */
export const QUIET_STATES: ReadonlySet<BackendState> = new Set<BackendState>(["sleeping", "no-metrics"]);

function healthOf(state: string): Health {
  return (STATE_INFO as Record<string, { health: Health } | undefined>)[state]?.health ?? "unknown";
}

/** The backend's engine when the fleet payload names one (vllm, llama.cpp, ...), else null. */
/** The engine's kind (`vllm`, `llamacpp`...: the filter's value), null until one answered. */
export function engineOf(b: FleetBackend): string | null {
  return b.engine ?? null;
}

/** The engine's name as people write it ("llama.cpp", "vLLM"), for the card. */
export function engineLabel(b: FleetBackend): string | null {
  return b.engine ? ENGINE_LABELS[b.engine] : null;
}

/**
 * States that are no verdict yet, ranked with the healthy ones: `unknown` (a first read, or one
 * failed read: a down takes two, and rises then) and `stalled` (one read without progress: it
 * becomes `stuck` past stuckAfterSeconds, and rises then, or progress resumes). Ranking them above
 * the healthy moved a row to the top and back on every such read, the whole table with it: 45 of
 * 500 with one failed read at once on a busy watcher (a layout shift of 0.43), and a busy backend
 * whose simulator was starved for a read (0.17; tests/e2e/fleet-500.spec.ts). The counts bar, the
 * "Needs attention" filter and the row's badge still show them.
 */
const NOT_YET_A_VERDICT: ReadonlySet<BackendState> = new Set<BackendState>(["unknown", "stalled"]);

/** Lower is more urgent: unhealthy, then "watch", then healthy (and NOT_YET_A_VERDICT), then quiet. */
export function attentionRank(b: Pick<FleetBackend, "state" | "restartRecommended">): number {
  const rank = QUIET_STATES.has(b.state) ? HEALTH_RANK.yes + 1 : NOT_YET_A_VERDICT.has(b.state) ? HEALTH_RANK.yes : HEALTH_RANK[healthOf(b.state)];
  return rank * 2 + (b.restartRecommended ? 0 : 1);
}

/** Healthy, quiet or no verdict yet: nothing to look at, so nothing about it (how long it has been idle) orders it. */
function settled(b: Pick<FleetBackend, "state">): boolean {
  return QUIET_STATES.has(b.state) || NOT_YET_A_VERDICT.has(b.state) || healthOf(b.state) === "yes";
}

export function needsAttention(b: Pick<FleetBackend, "state">): boolean {
  const h = healthOf(b.state);
  return h === "no" || h === "watch";
}

/** `site:ams` -> {site, ams}, split at the first colon (a value may hold one); null for a key no config allows. */
export function parseLabelFilter(s: string): LabelFilter | null {
  const i = s.indexOf(":");
  if (i < 0) return null;
  const key = s.slice(0, i);
  return LABEL_KEY_RE.test(key) ? { key, value: s.slice(i + 1) } : null;
}

export function labelFilterText(f: LabelFilter): string {
  return `${f.key}:${f.value}`;
}

export function parseFleetQuery(sp: { get(name: string): string | null; getAll?(name: string): string[] }): FleetQuery {
  const state = sp.get("state") ?? "";
  const group = sp.get("group") ?? "";
  const labelKey = group.startsWith("label:") ? group.slice("label:".length) : "";
  const labels = (sp.getAll ? sp.getAll("label") : [sp.get("label") ?? ""]).map(parseLabelFilter).filter((f): f is LabelFilter => f !== null);
  return {
    q: sp.get("q") ?? "",
    state: state === "attention" || state in STATE_INFO ? (state as StateFilter) : "",
    engine: sp.get("engine") ?? "",
    model: sp.get("model") ?? "",
    labels,
    sort: sp.get("sort") === "name" ? "name" : "attention",
    group: group === "model",
    groupLabel: LABEL_KEY_RE.test(labelKey) ? labelKey : "",
    view: sp.get("view") === "table" ? "table" : "cards",
    col: (TABLE_COLUMNS as readonly string[]).includes(sp.get("col") ?? "") ? (sp.get("col") as TableColumn) : null,
    dir: sp.get("dir") === "desc" ? "desc" : "asc",
  };
}

/** The query as URL parameters, defaults left out, so a shared link holds the view. */
export function fleetQueryString(f: FleetQuery): string {
  const p = new URLSearchParams();
  if (f.q) p.set("q", f.q);
  if (f.state) p.set("state", f.state);
  if (f.engine) p.set("engine", f.engine);
  if (f.model) p.set("model", f.model);
  for (const l of f.labels) p.append("label", labelFilterText(l));
  if (f.sort !== "attention") p.set("sort", f.sort);
  // One grouping at a time; a label key wins (the toolbar clears the other when one is chosen).
  if (f.groupLabel) p.set("group", `label:${f.groupLabel}`);
  else if (f.group) p.set("group", "model");
  if (f.view !== "cards") p.set("view", f.view);
  if (f.col) p.set("col", f.col);
  if (f.col && f.dir !== "asc") p.set("dir", f.dir);
  const s = p.toString();
  return s ? `?${s}` : "";
}

export function filterFleet(backends: FleetBackend[], f: FleetQuery): FleetBackend[] {
  const q = f.q.trim().toLowerCase();
  return backends.filter((b) => {
    if (q && ![b.id, b.url, b.model ?? "", engineOf(b) ?? "", ...labelTexts(b)].some((s) => s.toLowerCase().includes(q))) return false;
    if (f.state === "attention" && !needsAttention(b)) return false;
    if (f.state && f.state !== "attention" && b.state !== f.state) return false;
    if (f.engine && engineOf(b) !== f.engine) return false;
    if (f.model && (b.model ?? "") !== f.model) return false;
    if (f.labels.some((l) => labelsOf(b)[l.key] !== l.value)) return false;
    return true;
  });
}

export function sortFleet(backends: FleetBackend[], sort: FleetSort): FleetBackend[] {
  const byName = (a: FleetBackend, b: FleetBackend) => a.id.localeCompare(b.id);
  if (sort === "name") return [...backends].sort(byName);
  // Within a rank of problems the longest in its state first: the oldest problem is the one to
  // look at. Healthy and quiet backends by name: idle <-> busy is the pulse of a serving fleet, and
  // ordering by it would move rows and cards under the reader on every refresh (a layout shift,
  // tests/e2e/fleet-500.spec.ts).
  const byAge = (a: FleetBackend, b: FleetBackend) => (settled(a) ? 0 : (a.since ?? Infinity) - (b.since ?? Infinity));
  return [...backends].sort((a, b) => attentionRank(a) - attentionRank(b) || byAge(a, b) || byName(a, b));
}

export interface FleetGroup {
  /** The model name, or null for backends that name none. */
  model: string | null;
  backends: FleetBackend[];
}

/** Groups in the order of their most urgent member (the input is already sorted). */
export function groupByModel(sorted: FleetBackend[]): FleetGroup[] {
  const groups = new Map<string | null, FleetBackend[]>();
  for (const b of sorted) {
    const k = b.model ?? null;
    groups.set(k, [...(groups.get(k) ?? []), b]);
  }
  return [...groups].map(([model, backends]) => ({ model, backends }));
}

/** A backend's labels; {} for an object built without them (a partial fixture). */
export function labelsOf(b: Pick<FleetBackend, "labels">): Record<string, string> {
  return b.labels ?? {};
}

/** `site:ams` for each label, sorted by key: what the card shows and the filter's options name. */
export function labelTexts(b: Pick<FleetBackend, "labels">): string[] {
  return Object.entries(labelsOf(b))
    .sort(([a], [c]) => a.localeCompare(c))
    .map(([key, value]) => labelFilterText({ key, value }));
}

/** Every label key in the fleet, sorted: the "group by" choices. */
export function labelKeys(backends: Array<Pick<FleetBackend, "labels">>): string[] {
  return distinct(backends.flatMap((b) => Object.keys(labelsOf(b))));
}

export interface LabelGroup {
  /** The label's value, or null for backends without that key. */
  value: string | null;
  backends: FleetBackend[];
}

/**
 * Grouped by one label key's value, in the order of each group's most urgent member (the input is
 * already sorted), like groupByModel; the backends without the key come last, whatever their state:
 * a group named "no site" above "ams" would read as a site.
 */
export function groupByLabel(sorted: FleetBackend[], key: string): LabelGroup[] {
  const groups = new Map<string | null, FleetBackend[]>();
  for (const b of sorted) {
    const v = labelsOf(b)[key] ?? null;
    const g = groups.get(v);
    if (g) g.push(b);
    else groups.set(v, [b]);
  }
  const all = [...groups].map(([value, backends]) => ({ value, backends }));
  return [...all.filter((g) => g.value !== null), ...all.filter((g) => g.value === null)];
}

/** Distinct non-empty values, sorted, for a filter's options. */
export function distinct(values: Array<string | null>): string[] {
  return [...new Set(values.filter((v): v is string => !!v))].sort();
}

/**
 * "2 stuck, 1 down · stepwatch": the unhealthy states counted, so a background tab says that
 * something needs attention. Only "no" health counts: a stall that resolves on the next read must
 * not make the title flicker.
 */
export function attentionTitle(backends: Array<Pick<FleetBackend, "state">>, suffix = "stepwatch"): string {
  const counts = new Map<string, number>();
  for (const b of backends) if (healthOf(b.state) === "no") counts.set(b.state, (counts.get(b.state) ?? 0) + 1);
  const parts = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([s, n]) => `${n} ${s}`);
  return parts.length ? `${parts.join(", ")} · ${suffix}` : suffix;
}

/** Each state present in the fleet and how many backends are in it, in the one list's order (the counts bar). */
export function stateCounts(backends: Array<Pick<FleetBackend, "state">>): Array<{ state: BackendState; count: number }> {
  const n = new Map<BackendState, number>();
  for (const b of backends) n.set(b.state, (n.get(b.state) ?? 0) + 1);
  return BACKEND_STATES.filter((s) => n.has(s)).map((state) => ({ state, count: n.get(state)! }));
}

const COLUMN_VALUE: Record<TableColumn, (b: FleetBackend) => number | string | null> = {
  state: (b) => attentionRank(b),
  engine: (b) => engineLabel(b),
  running: (b) => b.running,
  waiting: (b) => b.waiting,
  steps: (b) => b.stepsPerSecond,
  tokens: (b) => b.generationTokensPerSecond,
  since: (b) => b.since,
};

/**
 * The table sorted by a column. A missing value (no engine yet, a down backend's figures) goes last
 * in either direction: "most waiting first" must not open on a screen of dashes. Ties keep the
 * attention order, then the name. `since` ascending is the oldest first (the longest in its state).
 */
export function sortTable(backends: FleetBackend[], col: TableColumn | null, dir: SortDir): FleetBackend[] {
  const base = sortFleet(backends, "attention");
  if (!col) return dir === "desc" ? base.reverse() : base;
  const value = COLUMN_VALUE[col];
  const pos = new Map(base.map((b, i) => [b.id, i]));
  const sign = dir === "desc" ? -1 : 1;
  return [...base].sort((a, b) => {
    const va = value(a);
    const vb = value(b);
    if (va === null || vb === null) return va === vb ? pos.get(a.id)! - pos.get(b.id)! : va === null ? 1 : -1;
    const c = typeof va === "string" || typeof vb === "string" ? String(va).localeCompare(String(vb)) : va - vb;
    return c * sign || pos.get(a.id)! - pos.get(b.id)!;
  });
}

/** Clicking a column header: the same column flips its direction, a new one starts ascending. */
export function nextSort(q: Pick<FleetQuery, "col" | "dir">, col: TableColumn): Pick<FleetQuery, "col" | "dir"> {
  return q.col === col ? { col, dir: q.dir === "asc" ? "desc" : "asc" } : { col, dir: "asc" };
}

/** What the cards view draws: one section per group, `heading` null when the query groups nothing. */
export interface FleetSection {
  key: string;
  heading: string | null;
  backends: FleetBackend[];
  /** How many backends the section has, also when `backends` holds only its first screen (firstScreenOf). */
  count: number;
}

export function fleetSections(sorted: FleetBackend[], q: Pick<FleetQuery, "group" | "groupLabel">): FleetSection[] {
  if (q.groupLabel) return groupByLabel(sorted, q.groupLabel).map((g) => ({ key: g.value ?? "", heading: g.value ?? `No ${q.groupLabel} label`, backends: g.backends, count: g.backends.length }));
  if (q.group) return groupByModel(sorted).map((g) => ({ key: g.model ?? "", heading: g.model ?? "No model named", backends: g.backends, count: g.backends.length }));
  return [{ key: "", heading: null, backends: sorted, count: sorted.length }];
}

/**
 * How many rows or cards the server renders of a long fleet: more than the tallest screen shows
 * (a table row is 40-45 px, a card ~230 px in columns of 320 px or more). The page's first paint
 * waits for its HTML, and at 500 backends rendering and sending every row was most of it; the rest
 * are rendered by the browser right after it has taken the page over, below the fold, where
 * nothing on screen moves (tests/e2e/fleet-500.spec.ts).
 */
export const FIRST_SCREEN = { rows: 60, cards: 24 } as const;

/** The first `budget` backends of `sections` in page order (a section cut where the budget ends, later ones left out). */
export function firstScreenOf(sections: FleetSection[], budget: number): FleetSection[] {
  const out: FleetSection[] = [];
  let left = budget;
  for (const s of sections) {
    if (left <= 0) break;
    out.push(s.backends.length <= left ? s : { ...s, backends: s.backends.slice(0, left) });
    left -= s.backends.length;
  }
  return out;
}

/** The server's first answer (FleetSeed, backends as columns) back as the FleetResponse GET /api/fleet answers. */
export function fleetFromSeed(seed: FleetSeed): FleetResponse {
  return { ...seed, backends: fromColumnRows(seed.backends) };
}
