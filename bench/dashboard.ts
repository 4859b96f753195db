/**
 * Benchmark 4: how fast the dashboard answers, against a real `next start` (the production
 * build) whose watcher polls 100 simulated backends (one simulator child process):
 * - GET /api/fleet latency under 50 concurrent clients, against 1 client as the comparison;
 * - GET /api/backends/b000/history over 7 days (the database holds 7 days of b000: 48 h raw,
 *   the rest per-minute rollups, built by bench/storage.ts), against 1 hour;
 * - the fleet page in Debian's Chromium (Playwright): until every card is shown, cold and warm.
 * All traffic goes to 127.0.0.1, bounded in count and time.
 */
import { freePort } from "../sim/free-port";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { Pool } from "undici";
import { startChild, startSimulatorFleet, type Child } from "./child";
import { percentile, round } from "./stats";
import { runHttpLoad, type LoadAsk, type LoadStats } from "./http-load";
import { HISTORY_RUNS } from "./storage";

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

/** Sources whose change makes .next stale. */
const BUILD_INPUTS = ["app", "components", "lib", "db", "next.config.ts", "instrumentation.ts", "tsconfig.json", "package.json"];

function newestMtime(p: string): number {
  if (!fs.existsSync(p)) return 0;
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const e of fs.readdirSync(p)) newest = Math.max(newest, newestMtime(path.join(p, e)));
  return newest;
}

/**
 * Builds only when .next is missing or older than a source, under a lock (two builds in one .next
 * break each other). Returns what it did.
 */
export function ensureBuild(log: (m: string) => void): string {
  const buildId = path.join(".next", "BUILD_ID");
  const built = fs.existsSync(buildId) ? fs.statSync(buildId).mtimeMs : 0;
  const newest = Math.max(...BUILD_INPUTS.map(newestMtime));
  if (built && built >= newest) return "existing build (.next newer than every source)";
  log(built ? "dashboard: .next is older than the sources: building" : "dashboard: no .next build: building");
  fs.mkdirSync(".tmp", { recursive: true });
  execFileSync("flock", [path.join(".tmp", "build.lock"), "npx", "next", "build"], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
    timeout: 600_000,
  });
  return built ? "rebuilt (.next was older than the sources)" : "built (.next was missing)";
}


async function waitFor<T>(what: string, deadlineMs: number, f: () => Promise<T | null>): Promise<T> {
  const end = Date.now() + deadlineMs;
  let last = "";
  while (Date.now() < end) {
    try {
      const v = await f();
      if (v !== null) return v;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} not ready within ${deadlineMs} ms${last ? ` (${last})` : ""}`);
}

/** What the ETag does: the status and body length of a request that sends back the ETag it got. */
async function etagCheck(pool: Pool, urlPath: string): Promise<DashboardResult["fleet"]["etag"]> {
  const first = await pool.request({ path: urlPath, method: "GET" });
  await first.body.arrayBuffer();
  const etag = first.headers.etag;
  if (typeof etag !== "string") return undefined;
  const again = await pool.request({ path: urlPath, method: "GET", headers: { "if-none-match": etag } });
  const body = await again.body.arrayBuffer();
  return { value: etag, notModifiedStatus: again.statusCode, notModifiedBodyBytes: body.byteLength };
}

async function gzipBytes(pool: Pool, urlPath: string): Promise<number | undefined> {
  const res = await pool.request({ path: urlPath, method: "GET", headers: { "accept-encoding": "gzip" } });
  const body = await res.body.arrayBuffer();
  return res.headers["content-encoding"] === "gzip" ? body.byteLength : undefined;
}

export interface PageLoad {
  /** Navigation start to every one of the 100 cards in the DOM. */
  allCardsMs: number;
  domContentLoadedMs: number;
  loadMs: number;
  transferBytes: number;
}

export interface DashboardResult {
  build: string;
  backends: number;
  fleet: {
    oneClient: LoadStats;
    fiftyClients: LoadStats;
    /** 50 clients as browsers (gzip, If-None-Match). */
    fiftyConditional?: LoadStats;
    /**
     * 50 clients on GET /api/session (a 34-byte answer, no watcher data): what next start itself
     * answers per second in the same window, the floor /api/fleet is compared with.
     */
    fiftyFloor?: LoadStats;
    /** The answer's size with Accept-Encoding: gzip, when the server compressed it. */
    gzipBytes?: number;
    etag?: { value: string; notModifiedStatus: number; notModifiedBodyBytes: number };
  };
  history: { sevenDays: LoadStats & { points: number }; oneHour: LoadStats & { points: number } };
  page: { chromium: string; cold: PageLoad; warm: { runs: number; allCardsMsP50: number; allCardsMsMax: number; loadMsP50: number } } | { error: string };
  nextServerRssMb: number | null;
}

export function rssMbOf(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? round(Number(m[1]) / 1024, 1) : null;
  } catch {
    return null;
  }
}

async function pageLoads(base: string, backends: number, warmRuns: number): Promise<DashboardResult["page"]> {
  const { chromium } = await import("@playwright/test");
  const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS, timeout: 60_000 });
  try {
    const version = browser.version();
    const once = async (): Promise<PageLoad> => {
      const ctx = await browser.newContext();
      try {
        const page = await ctx.newPage();
        const t0 = Date.now();
        await page.goto(base + "/", { waitUntil: "domcontentloaded", timeout: 30_000 });
        await page.waitForFunction((n) => document.querySelectorAll('[data-testid^="backend-card-"]').length >= n, backends, { timeout: 30_000 });
        const allCardsMs = Date.now() - t0;
        await page.waitForLoadState("load", { timeout: 30_000 });
        const nav = await page.evaluate(() => {
          const e = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
          const res = performance.getEntriesByType("resource") as PerformanceResourceTiming[];
          return { dcl: e.domContentLoadedEventEnd, load: e.loadEventEnd, bytes: e.transferSize + res.reduce((s, r) => s + r.transferSize, 0) };
        });
        return { allCardsMs, domContentLoadedMs: round(nav.dcl, 1), loadMs: round(nav.load, 1), transferBytes: nav.bytes };
      } finally {
        await ctx.close();
      }
    };
    const cold = await once();
    const warm: PageLoad[] = [];
    for (let i = 0; i < warmRuns; i++) warm.push(await once());
    return {
      chromium: version,
      cold,
      warm: {
        runs: warmRuns,
        allCardsMsP50: percentile(warm.map((w) => w.allCardsMs), 50),
        allCardsMsMax: Math.max(...warm.map((w) => w.allCardsMs)),
        loadMsP50: percentile(warm.map((w) => w.loadMs), 50),
      },
    };
  } finally {
    await browser.close();
  }
}

export interface App {
  base: string;
  child: Child;
  /** Keep-alive connections to the app, up to `connections` at once. */
  pool: Pool;
  /** Closes the pool, then stops next start (SIGTERM, SIGKILL after 10 s). */
  stop(): Promise<void>;
}

/**
 * The real app: `next start` (the production build) on a free 127.0.0.1 port with its own config
 * and SQLite file in `workDir`, its watcher polling `urls` (ids b000, b001, ...) every
 * `pollIntervalSeconds`. Resolves once /api/fleet shows every backend read once.
 */
export async function startApp(opts: {
  urls: string[];
  workDir: string;
  name: string;
  pollIntervalSeconds: number;
  /** A database to start from (copied), else an empty one. */
  dbFrom?: string;
  connections?: number;
}): Promise<App> {
  const configPath = path.join(opts.workDir, `${opts.name}.config.json`);
  fs.writeFileSync(
    configPath,
    JSON.stringify({ pollIntervalSeconds: opts.pollIntervalSeconds, backends: opts.urls.map((url, i) => ({ id: `b${String(i).padStart(3, "0")}`, url })) }),
  );
  const dbPath = path.join(opts.workDir, `${opts.name}.db`);
  if (opts.dbFrom) fs.copyFileSync(opts.dbFrom, dbPath);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // next-server itself (no npm/npx wrapper), so its pid, CPU and memory are its own.
  const child = startChild(process.execPath, [path.join("node_modules", "next", "dist", "bin", "next"), "start", "-p", String(port), "-H", "127.0.0.1"], {
    env: { ...process.env, STEPWATCH_CONFIG: configPath, STEPWATCH_DB: dbPath, NEXT_TELEMETRY_DISABLED: "1", NODE_ENV: "production" },
  });
  const pool = new Pool(base, { connections: opts.connections ?? 64 });
  const stop = async () => {
    await pool.close();
    await child.stop(10_000);
  };
  try {
    await waitFor(`next start with ${opts.urls.length} read backends`, 90_000, async () => {
      if (child.proc.exitCode !== null) throw new Error(`next start exited (${child.proc.exitCode}): ${child.output().slice(-2000)}`);
      const res = await pool.request({ path: "/api/fleet", method: "GET" });
      const json = (await res.body.json()) as { backends?: Array<{ lastReadAt: number | null }> };
      return res.statusCode === 200 && json.backends?.length === opts.urls.length && json.backends.every((b) => b.lastReadAt !== null) ? true : null;
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { base, child, pool, stop };
}

export async function runDashboardBench(opts: { historyDbPath: string; workDir: string; quick?: boolean; log?: (m: string) => void }): Promise<DashboardResult> {
  const log = opts.log ?? (() => {});
  const build = ensureBuild(log);
  const backends = 100;
  const { child: sim, urls } = await startSimulatorFleet(backends, 60_000);
  let app: App | null = null;
  try {
    app = await startApp({ urls, workDir: opts.workDir, name: "dashboard", pollIntervalSeconds: 5, dbFrom: opts.historyDbPath });
    const { pool, base } = app;
    const seconds = opts.quick ? 4 : 15;
    // Each load test runs in a fresh process of its own (bench/http-load-loop.ts says why).
    const load = (urlPath: string, clients: number, secs: number, maxRequests: number, more: Partial<LoadAsk> = {}) =>
      runHttpLoad({ base, path: urlPath, clients, seconds: secs, maxRequests, ...more });
    await load("/api/fleet", 4, 1, 200); // warm up the route
    const oneClient = await load("/api/fleet", 1, seconds, 20_000);
    const fiftyClients = await load("/api/fleet", 50, seconds, 50_000);
    const fiftyConditional = await load("/api/fleet", 50, seconds, 50_000, { asBrowser: true });
    // next start's own floor, same window and load: a route that does next to nothing (34 B).
    const fiftyFloor = await load("/api/session", 50, seconds, 50_000);
    const etag = await etagCheck(pool, "/api/fleet");
    const gzip = await gzipBytes(pool, "/api/fleet");

    const to = Date.now();
    const hist = async (range: number, runs: number) => {
      const p = `/api/backends/b000/history?from=${to - range}&to=${to}`;
      const res = await pool.request({ path: p, method: "GET" });
      const json = (await res.body.json()) as { count?: number; points?: unknown[] };
      const stats = await load(p, 1, 30, runs);
      return { ...stats, points: json.count ?? json.points?.length ?? 0 };
    };
    const sevenDays = await hist(7 * DAY, opts.quick ? 10 : HISTORY_RUNS);
    const oneHour = await hist(HOUR, opts.quick ? 10 : HISTORY_RUNS);

    let page: DashboardResult["page"];
    try {
      page = await pageLoads(base, backends, opts.quick ? 3 : 5);
    } catch (e) {
      page = { error: (e as Error).message.split("\n")[0] };
    }
    return {
      build,
      backends,
      fleet: { oneClient, fiftyClients, fiftyConditional, fiftyFloor, ...(gzip !== undefined ? { gzipBytes: gzip } : {}), ...(etag ? { etag } : {}) },
      history: { sevenDays, oneHour },
      page,
      nextServerRssMb: rssMbOf(app.child.proc.pid),
    };
  } finally {
    await app?.stop();
    await sim.stop();
  }
}
