/**
 * The Configuration page's forms as text fields and back: labels one `key:value` per line (the
 * spelling of the fleet page's label filter and chips), a proxy's backends as a list of ids. Pure:
 * only the form's own shape is checked here (a line without a colon, a key twice); what a key or a
 * value may be is the config schema's, on the server, whose problems name the field.
 */
import type { Labels } from "../core/labels";

/** The labels as the form shows them: one `key:value` per line, by key. */
export function labelsText(labels: Labels): string {
  return Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}:${v}`)
    .join("\n");
}

/**
 * The form's labels text as the config's object. Blank lines are skipped; the key and value are
 * trimmed (a space typed after the colon is not part of the value). A problem names the field
 * (`labels: ...`) as the server's do.
 */
export function parseLabelsText(text: string): { labels: Labels; problems: string[] } {
  const labels: Labels = {};
  const problems: string[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const at = line.indexOf(":");
    if (at < 0) {
      problems.push(`labels: line ${i + 1} "${line}" is not key:value`);
      return;
    }
    const key = line.slice(0, at).trim();
    if (Object.hasOwn(labels, key)) problems.push(`labels: ${key} is given twice`);
    labels[key] = line.slice(at + 1).trim();
  });
  return { labels, problems };
}

/** "a, b c" -> ["a", "b", "c"]: a proxy's backends as typed (ids hold neither commas nor spaces). */
export function parseIdList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}
