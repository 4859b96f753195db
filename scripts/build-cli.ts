/**
 * `npm run build:cli`: lib/cli/check.ts and what it imports as one file, dist/stepwatch.cjs (the
 * package's `stepwatch` bin), runnable with `node` alone (a Kubernetes exec probe copies this one
 * file into an image). Minified, and with undici's three parts lib/net/http.ts uses instead of its
 * index (scripts/cli-undici.cjs): a probe starts this file every few seconds, and what it parses and
 * evaluates at start is most of its cost (bench/cli-start.ts, bench/RESULTS.md section 8).
 * `--metafile` also writes dist/stepwatch.meta.json (what each input adds, for `esbuild --analyze`).
 */
import { chmodSync } from "node:fs";
import path from "node:path";
import { build, type Plugin } from "esbuild";

const ROOT = path.resolve(__dirname, "..");
const SHIM = path.join(ROOT, "scripts/cli-undici.cjs");

/** `undici` (exactly; its own files stay themselves) -> the shim, except inside the shim. */
const leanUndici: Plugin = {
  name: "lean-undici",
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, (args) => (args.importer === SHIM ? undefined : { path: SHIM }));
  },
};

async function main(): Promise<void> {
  const outfile = path.join(ROOT, "dist/stepwatch.cjs");
  const meta = process.argv.includes("--metafile");
  const result = await build({
    entryPoints: [path.join(ROOT, "lib/cli/check.ts")],
    outfile,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    minify: true,
    // Stack traces of a probe's crash still name stepwatch's functions.
    keepNames: true,
    banner: { js: "#!/usr/bin/env node" },
    plugins: [leanUndici],
    metafile: meta,
    logLevel: "warning",
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
