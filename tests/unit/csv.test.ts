import { describe, expect, it } from "vitest";
import { csvResponse, isoTime, toCsv } from "@/lib/api/csv";

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
