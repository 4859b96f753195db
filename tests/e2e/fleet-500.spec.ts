/**
 * The fleet page at 500 backends, in Chromium: its own simulator fleet (`sim/cli.ts --count 500`)
 * and its own `next start` (bench/dashboard.ts `startApp`: a config of b000..b499, its own SQLite
 * file), beside the stack of playwright.config.ts. Asserts what a person sees: every backend on
 * the page, and no layout shift while it loads and refreshes (CLS from PerformanceObserver
 * 'layout-shift', the Web Vitals sum). The load figures (navigation timing, first contentful
 * paint) are written to tests/e2e/artifacts/fleet-500.json and reported in bench/RESULTS.md, never
 * asserted: tests never assert timings.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { startSimulatorFleet, type Child } from "../../bench/child";
import { startApp, type App } from "../../bench/dashboard";
import type { FleetResponse } from "../../lib/api/types";
import { FIRST_SCREEN } from "../../lib/ui/fleet";
import { ARTIFACTS, TMP } from "./support/stack";

const COUNT = 500;
/** Backends given long requests before the page opens: their figures move on every refresh. */
const LOADED = 10;
/** Refreshes (GET /api/fleet answers) watched for layout shift after the load. */
const REFRESHES = 4;
/**
 * "CLS == 0 or tiny" (Web Vitals calls under 0.1 good). What this page did wrong measured 0.0076
 * (a state's count button coming and going, moving the toolbar) to 0.64 (rows reordered by how long
 * they had been idle) and 0.43 (45 backends with one failed read jumping to the top); after the
 * fixes, at most 0.00001 (a count gaining a digit), and once 0.0018 (the sub-line of busy cards,
 * cause not found).
 */
const CLS_LIMIT = 0.005;

let sims: Child | null = null;
let app: App | null = null;
let urls: string[] = [];

/** Installed before any script of the page: every layout shift not caused by input, with what moved. */
function observeShifts(): void {
  const w = window as unknown as { __shifts: Array<{ value: number; at: number; sources: string[] }> };
  w.__shifts = [];
  const describe = (n: Node | null | undefined): string => {
    if (!n) return "?";
    const el = n instanceof Element ? n : n.parentElement;
    if (!el) return n.nodeName;
    const id = el.closest("[data-testid]")?.getAttribute("data-testid");
    return `${el.tagName.toLowerCase()}${el.className && typeof el.className === "string" ? `.${el.className.split(" ").join(".")}` : ""}${id ? ` in ${id}` : ""}`;
  };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries() as Array<PerformanceEntry & { value: number; hadRecentInput: boolean; sources?: Array<{ node?: Node }> }>) {
      if (!e.hadRecentInput) w.__shifts.push({ value: e.value, at: Math.round(e.startTime), sources: (e.sources ?? []).map((s) => describe(s.node)) });
    }
  }).observe({ type: "layout-shift", buffered: true });
}

interface Load {
  view: string;
  responseEndMs: number;
  domContentLoadedMs: number;
  firstContentfulPaintMs: number | null;
  loadEventMs: number;
  /** Navigation start until every backend is in the DOM (server-rendered: by the first paint). */
  allShownMs: number;
  htmlBytes: number;
  transferBytes: number;
  cls: number;
  shifts: Array<{ value: number; at: number; sources: string[] }>;
  /** Backends neither idle nor busy at the end (a read failed on the busy machine): what a shift may come from. */
  unsettled: string[];
  /** Every backend seen neither idle nor busy in an answer the page received, with when (ms after the load began). */
  seenUnsettled: string[];
}

async function loadAndWatch(page: Page, url: string, view: string, each: string): Promise<Load> {
  const t0 = Date.now();
  const seenUnsettled = new Set<string>();
  page.on("response", (r) => {
    if (new URL(r.url()).pathname !== "/api/fleet" || r.status() !== 200) return;
    void r
      .json()
      .then((f: FleetResponse) => f.backends.filter((b) => b.state !== "idle" && b.state !== "busy").forEach((b) => seenUnsettled.add(`${b.id} ${b.state} at ~${Date.now() - t0} ms`)))
      .catch(() => {});
  });
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await expect(page.locator(each)).toHaveCount(COUNT, { timeout: 30_000 });
  const allShownMs = Date.now() - t0;
  await page.waitForLoadState("load", { timeout: 30_000 });
  // A few refreshes of the list, each a new answer (the watcher reads every second).
  for (let i = 0; i < REFRESHES; i++) {
    await page.waitForResponse((r) => new URL(r.url()).pathname === "/api/fleet", { timeout: 60_000 });
  }
  // Two frames after the last answer: its render and any shift it causes are observed.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const m = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    const fcp = performance.getEntriesByName("first-contentful-paint")[0];
    const res = performance.getEntriesByType("resource") as PerformanceResourceTiming[];
    const shifts = (window as unknown as { __shifts: Array<{ value: number; at: number; sources: string[] }> }).__shifts;
    return {
      responseEndMs: Math.round(nav.responseEnd),
      domContentLoadedMs: Math.round(nav.domContentLoadedEventEnd),
      firstContentfulPaintMs: fcp ? Math.round(fcp.startTime) : null,
      loadEventMs: Math.round(nav.loadEventEnd),
      htmlBytes: nav.decodedBodySize,
      transferBytes: nav.transferSize + res.reduce((s, r) => s + r.transferSize, 0),
      shifts,
      cls: shifts.reduce((s, x) => s + x.value, 0),
    };
  });
  const fleet = (await (await page.request.get(`${new URL(url).origin}/api/fleet`)).json()) as FleetResponse;
  const unsettled = fleet.backends.filter((b) => b.state !== "idle" && b.state !== "busy").map((b) => `${b.id} ${b.state}`);
  return { view, allShownMs, ...m, unsettled, seenUnsettled: [...seenUnsettled] };
}

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({}, testInfo) => {
  // 500 listening simulators and a watcher's first read of each: minutes on a busy 2-core machine.
  testInfo.setTimeout(240_000);
  const workDir = path.join(TMP, "fleet-500");
  fs.mkdirSync(workDir, { recursive: true });
  const fleet = await startSimulatorFleet(COUNT, 120_000);
  sims = fleet.child;
  urls = fleet.urls;
  app = await startApp({ urls, workDir, name: "fleet-500", pollIntervalSeconds: 2 });
  for (const u of urls.slice(0, LOADED)) {
    const res = await fetch(`${u}/_sim/load`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ requests: 3, maxTokens: 200_000 }) });
    expect(res.ok).toBe(true);
  }
  // Past the first reads ("unknown") and settled: what is measured is a fleet refreshing, not one starting.
  await expect
    .poll(
      async () => {
        const f = (await (await fetch(`${app!.base}/api/fleet`)).json()) as FleetResponse;
        return f.backends.filter((b) => b.state !== "idle" && b.state !== "busy").map((b) => `${b.id} ${b.state}`);
      },
      { timeout: 120_000, intervals: [1000] },
    )
    .toEqual([]);
});

test.afterAll(async () => {
  await app?.stop();
  await sims?.stop();
});

test("500 backends: every one shown, table and cards, and nothing shifts while the page loads and refreshes", async ({ browser }, testInfo) => {
  // Four loads, each watched through a few refreshes, on a machine whose 2 cores are shared.
  testInfo.setTimeout(720_000);
  const base = app!.base;
  const loads: Load[] = [];
  // Written after every load, so a failed run still leaves what it measured.
  const write = () => {
    const out = { measuredAt: new Date().toISOString(), backends: COUNT, chromium: browser.version(), loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100), cpus: os.cpus().length, loads };
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    fs.writeFileSync(path.join(ARTIFACTS, "fleet-500.json"), `${JSON.stringify(out, null, 2)}\n`);
    return out;
  };
  // A fresh context per load (no cache): the first is the server's first render of the page.
  const once = async (view: "table" | "cards") => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    try {
      const page = await ctx.newPage();
      await page.addInitScript(observeShifts);
      const l = await loadAndWatch(page, `${base}/${view === "table" ? "?view=table" : ""}`, view, view === "table" ? '[data-testid^="fleet-row-"]' : '[data-testid^="backend-card-"]');
      loads.push(l);
      write();
      console.log(`fleet-500 ${l.view}: responseEnd ${l.responseEndMs} ms, DCL ${l.domContentLoadedMs} ms, FCP ${l.firstContentfulPaintMs} ms, load ${l.loadEventMs} ms, all shown ${l.allShownMs} ms, HTML ${l.htmlBytes} B, transfer ${l.transferBytes} B, CLS ${l.cls} (load average ${os.loadavg()[0].toFixed(2)})`);
      return l;
    } finally {
      await ctx.close();
    }
  };
  // The server renders the first screen of rows or cards, the browser the rest once it has hydrated
  // (lib/ui/fleet.ts FIRST_SCREEN; every one shown is asserted by loadAndWatch).
  const served = async (q: string) => (await (await fetch(`${base}/${q}`)).text()).match(/data-testid="(?:fleet-row|backend-card)-b\d{3}"/g) ?? [];
  expect(await served("?view=table")).toEqual(Array.from({ length: FIRST_SCREEN.rows }, (_, i) => `data-testid="fleet-row-b${String(i).padStart(3, "0")}"`));
  expect(await served("")).toHaveLength(FIRST_SCREEN.cards);
  // The first of each is the first load of that view after the server's own warm-up render
  // (lib/api/warm-up.ts); the second, the same again.
  await once("table");
  await once("table");
  await once("cards");
  await once("cards");
  const out = write();
  await testInfo.attach("fleet-500", { body: JSON.stringify(out, null, 2), contentType: "application/json" });
  console.log(`fleet-500: load average ${out.loadAverage.join(" / ")} on ${out.cpus} CPUs`);
  // Behaviour, not timing: a refresh that moves a row or a card is a bug at any speed.
  for (const l of loads) expect(l.cls, `${l.view}: layout shifts ${JSON.stringify(l.shifts.slice(0, 10))}; seen neither idle nor busy meanwhile: ${l.seenUnsettled.join(", ") || "none"}`).toBeLessThanOrEqual(CLS_LIMIT);
});
