/**
 * Rows of objects as one list of keys and one array of values per row: the fleet page's
 * server-rendered first answer (lib/api/fleet.ts getFleetSeed). 500 backends as objects repeat
 * their 29 keys 500 times, more than half of the bytes; React's payload carries every one of them
 * into the HTML a second time beside the rendered rows. A key a row lacks travels as `undefined`
 * (React's payload keeps it) and comes back absent, so the round trip gives the same objects.
 */
export interface ColumnRows<T> {
  keys: Array<keyof T & string>;
  rows: unknown[][];
}

export function toColumnRows<T extends object>(items: readonly T[]): ColumnRows<T> {
  const seen = new Set<string>();
  for (const it of items) for (const k of Object.keys(it)) seen.add(k);
  const keys = [...seen] as Array<keyof T & string>;
  return { keys, rows: items.map((it) => keys.map((k) => (it as Record<string, unknown>)[k])) };
}

export function fromColumnRows<T>(t: ColumnRows<T>): T[] {
  return t.rows.map((row) => {
    const o: Record<string, unknown> = {};
    t.keys.forEach((k, i) => {
      if (row[i] !== undefined) o[k] = row[i];
    });
    return o as T;
  });
}
