'use strict'
/**
 * What the bundled CLI (scripts/build-cli.ts) gets for undici's `./tree` (lib/core/util.js): a tree
 * that knows no header name. undici builds a ternary search tree of ~100 well-known header names at
 * load, only to hand back an interned lower-case copy of a header name it receives; when the tree
 * does not know a name, util.js lower-cases the bytes itself (`value.toString('latin1').toLowerCase()`),
 * the same string. Building it was ~20% of a probe's start (a CPU profile of `stepwatch --help`),
 * for a CLI that reads a handful of answers. The app (Next) and the tests use undici itself.
 */
module.exports = { tree: { lookup: () => null } }
