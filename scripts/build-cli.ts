/**
 * `npm run build:cli`: lib/cli/check.ts and what it imports as one file, dist/stepwatch.cjs (the
 * package's `stepwatch` bin), runnable with `node` alone (a Kubernetes exec probe copies this one
 * file into an image). Minified, and with the undici parts lib/net/http.ts uses instead of its
 * index (scripts/cli-undici.cjs): a probe starts this file every few seconds, and what it parses and
 * evaluates at start is most of its cost (bench/cli-start.ts, bench/RESULTS.md section 8).
 * `stepwatch replay|advise` (lib/cli/replay.ts) is a second file beside it, dist/stepwatch-replay.cjs,
 * loaded only by those commands: they read an installed stepwatch's database through its
 * better-sqlite3 and config, so they never run from the lone file of a probe image, and the config's
 * zod schemas they bring were more than half of the one file (900 KB with them, 386 KB without;
 * +7 MB RSS and ~20 ms of CPU at every start of a probe).
 * `--metafile` also writes dist/stepwatch.meta.json (what each input adds, for `esbuild --analyze`).
 */
import { chmodSync } from "node:fs";
import path from "node:path";
import { build, type Plugin } from "esbuild";

const ROOT = path.resolve(__dirname, "..");
const SHIM = path.join(ROOT, "scripts/cli-undici.cjs");

const NO_H2 = path.join(ROOT, "scripts/cli-undici-no-h2.cjs");
const NO_TREE = path.join(ROOT, "scripts/cli-undici-no-tree.cjs");
const UNDICI_LIB = path.join("undici", "lib");

/**
 * `undici` (exactly; its own files stay themselves) -> the shim, except inside the shim; the
 * Client's HTTP/2 half and the header-name tree -> stubs (scripts/cli-undici-no-h2.cjs and
 * cli-undici-no-tree.cjs say why).
 */
const leanUndici: Plugin = {
  name: "lean-undici",
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, (args) => (args.importer === SHIM ? undefined : { path: SHIM }));
    b.onResolve({ filter: /^\.\/client-h2\.js$/ }, (args) => (args.importer.endsWith(path.join(UNDICI_LIB, "dispatcher", "client.js")) ? { path: NO_H2 } : undefined));
    b.onResolve({ filter: /^\.\/tree$/ }, (args) => (args.importer.endsWith(path.join(UNDICI_LIB, "core", "util.js")) ? { path: NO_TREE } : undefined));
  },
};

/** The check's `import("./replay")` -> the sibling file, required at run time (only by replay|advise). */
const REPLAY_FILE = "stepwatch-replay.cjs";
const replayApart: Plugin = {
  name: "replay-apart",
  setup(b) {
    b.onResolve({ filter: /^\.\/replay$/ }, (args) => (args.importer === path.join(ROOT, "lib/cli/check.ts") ? { path: `./${REPLAY_FILE}`, external: true } : undefined));
  },
};

const COMMON = {
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  minify: true,
  // Stack traces of a probe's crash still name stepwatch's functions.
  keepNames: true,
  logLevel: "warning",
} as const;

async function main(): Promise<void> {
  const outfile = path.join(ROOT, "dist/stepwatch.cjs");
  const meta = process.argv.includes("--metafile");
  const result = await build({
    ...COMMON,
    entryPoints: [path.join(ROOT, "lib/cli/check.ts")],
    outfile,
    banner: { js: "#!/usr/bin/env node" },
    plugins: [leanUndici, replayApart],
    metafile: meta,
  });
  await build({
    ...COMMON,
    entryPoints: [path.join(ROOT, "lib/cli/replay.ts")],
    outfile: path.join(ROOT, "dist", REPLAY_FILE),
    plugins: [leanUndici],
    // replay/advise open the SQLite file through an installed stepwatch's better-sqlite3 (a native
    // module cannot be bundled).
    external: ["better-sqlite3"],
  });
  if (meta && result.metafile) {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(path.join(ROOT, "dist/stepwatch.meta.json"), JSON.stringify(result.metafile));
  }
  chmodSync(outfile, 0o755);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
