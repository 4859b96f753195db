/**
 * CSV for the export links (`?format=csv` on the history, outages and restarts endpoints).
 * Hand-written: RFC 4180 is a few lines (quote a field holding a comma, quote or line break;
 * double inner quotes), and no CSV package guards spreadsheets against formulas (OWASP "CSV
 * Injection"): a text cell that starts with = + - @, a tab or a carriage return (also after
 * leading spaces or quotes, and their full-width forms) is prefixed with ' so a spreadsheet shows
 * it instead of running it. The guard must hold wherever a spreadsheet may START a cell, and that
 * is not only where this file does: where the locale's list separator is ";" (German, French, ...
 * Excel and LibreOffice) the file's "," and its quotes mean nothing, every ";" starts a new cell
 * and every line break a new row, so "x;=cmd|..." inside a quoted field still becomes a cell
 * "=cmd|...". So the same ' also goes right after every ";", tab and line break inside a text
 * cell that a formula character follows (after spaces or quotes). And every field holding a ";",
 * a ",", a quote (either kind), a tab or a line break is quoted, so in the "," reading it is one
 * cell. * Times are ISO 8601 UTC, so every tool reads them.
 */
export type CsvValue = string | number | boolean | null | undefined;

export interface CsvColumn<T> {
  header: string;
  value: (row: T) => CsvValue;
}

/** A formula character (ASCII or full-width), after any spaces or quotes: what a spreadsheet runs. */
const FORMULA = String.raw`[ "]*[=+\-@\t\r\uff1d\uff0b\uff0d\uff20]`;
const FORMULA_START = new RegExp(`^${FORMULA}`);
/** A cell start in some locale inside the text (";", tab, a line break) with a formula after it. */
const FORMULA_INSIDE = new RegExp(`([;\t\r\n])(?=${FORMULA})`, "g");
/** Separators of every locale (",", ";", tab), quotes and line breaks: such a field is quoted. */
const NEEDS_QUOTES = /[",;'\t\r\n]/;

export function csvCell(v: CsvValue): string {
  if (v === null || v === undefined) return "";
  let s = typeof v === "number" ? (Number.isFinite(v) ? String(v) : "") : String(v);
  if (typeof v !== "number") {
    s = s.replace(FORMULA_INSIDE, "$1'");
    if (FORMULA_START.test(s)) s = `'${s}`;
  }
  return NEEDS_QUOTES.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv<T>(rows: T[], columns: Array<CsvColumn<T>>): string {
  const lines = [columns.map((c) => csvCell(c.header)).join(",")];
  for (const r of rows) lines.push(columns.map((c) => csvCell(c.value(r))).join(","));
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
