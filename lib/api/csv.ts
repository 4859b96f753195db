/**
 * CSV for the export links (`?format=csv` on the history, outages and restarts endpoints).
 * Hand-written: RFC 4180 is a few lines (quote a field holding a comma, quote or line break;
 * double inner quotes), and no CSV package guards spreadsheets against formulas: a cell that
 * starts with = + - @ (a reason text or a note typed by an operator) is prefixed with ' so a
 * spreadsheet shows it instead of running it. Times are ISO 8601 UTC, so every tool reads them.
 */
export type CsvValue = string | number | boolean | null | undefined;

export interface CsvColumn<T> {
  header: string;
  value: (row: T) => CsvValue;
}

function cell(v: CsvValue): string {
  if (v === null || v === undefined) return "";
  let s = typeof v === "number" ? (Number.isFinite(v) ? String(v) : "") : String(v);
  if (typeof v === "string" && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv<T>(rows: T[], columns: Array<CsvColumn<T>>): string {
  const lines = [columns.map((c) => cell(c.header)).join(",")];
  for (const r of rows) lines.push(columns.map((c) => cell(c.value(r))).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

/** ms since epoch as ISO 8601 UTC; empty for null. */
export function isoTime(at: number | null | undefined): string {
  return at === null || at === undefined || !Number.isFinite(at) ? "" : new Date(at).toISOString();
}

/** A CSV answer the browser saves under `filename`. */
export function csvResponse(body: string, filename: string): Response {
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`,
      "cache-control": "no-store",
    },
  });
}
