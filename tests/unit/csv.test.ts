import { describe, expect, it } from "vitest";
import { csvCell, csvResponse, isoTime, toCsv } from "@/lib/api/csv";
import { historyCsv, outagesCsv, restartsCsv } from "@/lib/api/exports";
import type { HistoryResponse, RestartEventDTO } from "@/lib/api/types";
import { figureColumn, HISTORY_FIGURES, toColumns, type HistoryPoint } from "@/lib/core/history";

describe("CSV export", () => {
  it("quotes what needs quoting and defuses spreadsheet formulas", () => {
    const rows = [{ a: "plain", b: 1.5, c: null }, { a: 'say "hi", then\nleave', b: Number.NaN, c: "=HYPERLINK(\"x\")" }];
    const csv = toCsv(rows, [
      { header: "a", value: (r) => r.a },
      { header: "b", value: (r) => r.b },
      { header: "c", value: (r) => r.c },
    ]);
    expect(csv).toBe('a,b,c\r\nplain,1.5,\r\n"say ""hi"", then\nleave",,"\'=HYPERLINK(""x"")"\r\n');
  });
  it("writes times as ISO UTC and answers as a download", async () => {
    expect(isoTime(Date.UTC(2026, 11, 1, 3, 19, 4))).toBe("2026-12-01T03:19:04.000Z");
    expect(isoTime(null)).toBe("");
    const res = csvResponse("a\r\n", "history gb10/a.csv");
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="history_gb10_a.csv"');
    expect(await res.text()).toBe("a\r\n");
  });
});

describe("the restarts CSV", () => {
  it("says who started a restart, when, under which lease epoch, and its evidence bundle, after the columns it always had", () => {
    const ev: RestartEventDTO = {
      id: 7, backendId: "gb10", requestedAt: Date.UTC(2026, 11, 1, 3, 19, 4), requestedBy: "ana", note: null, stateAtRequest: "stuck", healthyAtRequest: false,
      runningAtRequest: 2, waitingAtRequest: 5, evidence: { reasons: [], readings: [] }, overrideCooldown: false, confirmedHealthy: false, action: "command: systemctl restart vllm",
      commandExitCode: 0, commandOutput: "", commandError: null, commandFinishedAt: Date.UTC(2026, 11, 1, 3, 19, 9), recoveredAt: null, downtimeSeconds: null,
      startedAt: Date.UTC(2026, 11, 1, 3, 19, 5), startedBy: "replica-b", startedEpoch: 3, outcome: null, resolvedAt: null, resolution: null, evidenceId: 12,
    };
    const [header, row] = restartsCsv([ev]).split("\r\n");
    expect(header.split(",").slice(-6)).toEqual(["outcome", "resolution", "started_utc", "started_by", "started_epoch", "evidence_id"]);
    expect(row.split(",").slice(-6)).toEqual(["pending", "", "2026-12-01T03:19:05.000Z", "replica-b", "3", "12"]);
  });
});

describe("the history CSV", () => {
  const base = { running: 1, waiting: 0, stepsPerSecond: 2.5, generationTokensPerSecond: 40, promptTokensPerSecond: 120, kvCacheUsage: 0.25 };
  const history = (points: HistoryPoint[]): HistoryResponse => ({
    backendId: "gb10",
    from: 0,
    to: 1,
    resolution: "raw",
    bucketSeconds: null,
    count: points.length,
    columns: toColumns(points, true),
    transitions: [],
    restarts: [],
  });

  it("has a column for every history figure, after the columns it always had, and a latency figure reaches its row", () => {
    const at = Date.UTC(2026, 11, 1, 3, 19, 4);
    const lines = historyCsv(
      history([
        { at, state: "busy", ...base, ttftP95: 0.123456789, successOtherPerSecond: 0.5 },
        // A llama.cpp point: no latency figures, empty cells.
        { at: at + 5000, state: "idle", ...base },
      ]),
    ).split("\r\n");
    const header = lines[0].split(",");
    // What a consumer read before the latency figures reached the CSV stays where it was.
    expect(header.slice(0, 8)).toEqual(["time_utc", "state", "running", "waiting", "steps_per_second", "generation_tokens_per_second", "prompt_tokens_per_second", "kv_cache_usage"]);
    for (const f of HISTORY_FIGURES) expect(header, f).toContain(figureColumn(f));
    expect(header).toHaveLength(2 + HISTORY_FIGURES.length);
    const row = (i: number) => Object.fromEntries(lines[i].split(",").map((v, k) => [header[k], v]));
    // Every digit stored (the JSON rounds to three).
    expect(row(1)).toMatchObject({ time_utc: "2026-12-01T03:19:04.000Z", state: "busy", kv_cache_usage: "0.25", ttft_p95: "0.123456789", success_other_per_second: "0.5", ttft_p50: "" });
    expect(row(2)).toMatchObject({ state: "idle", running: "1", ttft_p95: "", success_other_per_second: "" });
  });
});

/**
 * How a spreadsheet reads one CSV line with a given list separator: quoted fields are one cell
 * (RFC 4180, "" is a quote) when the quote opens the cell, anything else is cut at every separator
 * and line break. Excel and LibreOffice in a
 * ";" locale (German, French, ...) cut at ";", in an English one at ",".
 */
function spreadsheetCells(line: string, sep: string): string[] {
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    let cur = "";
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) break;
        if (line[i] === '"' && line[i + 1] === '"') (cur += '"'), (i += 2);
        else if (line[i] === '"') {
          i++;
          break;
        } else cur += line[i++];
      }
      // After the closing quote a spreadsheet keeps reading to the separator as part of the cell.
      while (i < line.length && line[i] !== sep) cur += line[i++];
    } else while (i < line.length && line[i] !== sep && line[i] !== "\n" && line[i] !== "\r") cur += line[i++];
    cells.push(cur);
    if (i >= line.length) return cells;
    i++; // the separator, or an unquoted line break (a new row: its first cell starts here too)
  }
}

/** A cell a spreadsheet would run: it starts (after spaces) with a formula character. */
const runs = (c: string) => /^[ ]*[=+\-@\t\r\uff1d\uff0b\uff0d\uff20]/.test(c);

describe("CSV cells are safe in ',' and ';' (and tab) locales", () => {
  const HOSTILE = [
    ";=cmd|' /C calc'!A0",
    "redirected to http://x.example/;=cmd|' /C calc'!A0",
    'http://a.example/";=HYPERLINK("http://evil.example")',
    "x,=1+1",
    "x;+1+1",
    "x;-1+1",
    "x;@SUM(A1)",
    "x\t=1+1",
    "x\r=1+1",
    "x\n=1+1",
    "=1+1",
    "+1",
    "-1",
    "@SUM(A1:A2)",
    "\t=1+1",
    "\r=1+1",
    "  =1+1",
    "\uff1d1+1",
    "x';=1+1",
    "';=1+1",
    '"";=1+1',
    'a"b;=c',
  ];
  it.each(HOSTILE)("%j stays one cell that runs nothing", (hostile) => {
    const csv = toCsv([{ cause: hostile, n: -5 }], [
      { header: "cause", value: (r) => r.cause },
      { header: "n", value: (r) => r.n },
    ]);
    // Line breaks inside a quoted field are part of the field: read the whole record.
    const record = csv.slice(csv.indexOf("\r\n") + 2, -2);
    for (const sep of [",", ";", "\t"]) {
      const cells = spreadsheetCells(record, sep);
      for (const c of cells) if (c !== "-5") expect(runs(c), `${sep} locale: ${JSON.stringify(c)} in ${JSON.stringify(record)}`).toBe(false);
    }
    // In the file's own "," reading, the text comes back whole (behind the guard's ').
    const cells = spreadsheetCells(record, ",");
    expect(cells).toHaveLength(2);
    // The text is all there; the guard only adds a ' before what would run.
    expect(cells[0].replace(/'/g, "")).toBe(hostile.replace(/'/g, ""));
    expect(cells[1]).toBe("-5"); // numbers are numbers, never prefixed
  });

  it("the outages export: a backend's redirect target in the cause stays one quoted cell", () => {
    const cause = "GET /metrics answered 302 to http://evil.example/a;=cmd|' /C calc'!A0";
    const csv = outagesCsv([{ backendId: "b1", state: "down", cause, start: 0, end: 1000, durationSeconds: 1, states: ["down"], maintenanceSeconds: 0, inMaintenance: false, exitedNotRestarted: true }]);
    const [header, record] = csv.split("\r\n");
    // A column added to the outages goes last: a spreadsheet reading them by place still works.
    expect(header).toBe("backend,state,start_utc,end_utc,duration_seconds,cause,states,maintenance_seconds,in_maintenance,exited_not_restarted");
    expect(record.endsWith(",0,no,yes")).toBe(true);
    expect(record).toContain('"GET /metrics answered 302 to http://evil.example/a;\'=cmd|\' /C calc\'!A0"');
    for (const sep of [",", ";"]) for (const c of spreadsheetCells(record, sep)) expect(runs(c), `${sep}: ${c}`).toBe(false);
  });

  it("plain cells stay unquoted; numbers and times are not touched", () => {
    expect(csvCell("plain text")).toBe("plain text");
    expect(csvCell(-1.5)).toBe("-1.5");
    expect(csvCell("2026-12-01T03:19:04.000Z")).toBe("2026-12-01T03:19:04.000Z");
    expect(csvCell("a;b")).toBe('"a;b"');
    expect(csvCell("-1")).toBe(`"'-1"`);
    expect(csvCell("a;b;=c")).toBe(`"a;b;'=c"`);
    expect(csvCell("a\n -1")).toBe(`"a\n' -1"`);
  });
});
