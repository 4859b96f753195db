/**
 * Each bench section is a module `bench/run.ts` imports and a script `npx tsx bench/<section>.ts`
 * runs alone; this is the one "when this file is the script" tail they share.
 */
import path from "node:path";

/**
 * When `file` (the caller's `__filename`) is the script node was started with, run the section and
 * print its result as JSON (or through `print`); a failure is printed and exits 1. Imported by
 * bench/run.ts, it does nothing.
 */
export function runWhenMain<T>(file: string, run: () => Promise<T>, print: (r: T) => void = (r) => console.log(JSON.stringify(r, null, 2))): void {
  if (!process.argv[1] || path.resolve(process.argv[1]) !== path.resolve(file)) return;
  run().then(
    (r) => {
      print(r);
      // A section may leave a server's keep-alive socket or a timer behind; the result is out.
      process.exit(0);
    },
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
