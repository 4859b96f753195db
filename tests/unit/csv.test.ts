import { describe, expect, it } from "vitest";
import { csvResponse, isoTime, toCsv } from "@/lib/api/csv";
import { historyCsv } from "@/lib/api/exports";
import type { HistoryResponse } from "@/lib/api/types";
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
