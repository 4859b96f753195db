'use strict'
/**
 * What the bundled CLI (scripts/build-cli.ts) gets for undici's `./client-h2.js`: nothing. A
 * Client speaks HTTP/2 only when made with `allowH2` and the server picks h2 over TLS; lib/net/http.ts
 * never asks it, and the real file's `require('node:http2')` (with tls and crypto) was ~15% of the
 * bundle's start (bench/cli-start.ts). The app (Next) and the tests use undici itself.
 */
module.exports = function connectH2 () {
  throw new Error('HTTP/2 is not in the stepwatch CLI bundle (lib/net/http.ts never sets allowH2)')
}
