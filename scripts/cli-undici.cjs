'use strict'
/**
 * What the bundled CLI (scripts/build-cli.ts) gets for `import ... from "undici"`: the two
 * dispatchers lib/net/http.ts uses (Agent, Client), required from their own files; http.ts sends
 * through their `dispatch` with a handler of its own, so undici's request() API (its Readable
 * answer) is not needed either. undici's index requires all of undici at load (fetch, WebSocket,
 * EventSource, the cache and mock agents, every interceptor): 1 MB of the 1.17 MB bundle, evaluated
 * on every start of a probe that uses none of it. The app (Next) and the tests use undici itself;
 * tests/integration/cli-bundle.test.ts runs the bundle this builds.
 */
const Dispatcher = require('undici/lib/dispatcher/dispatcher')
const Agent = require('undici/lib/dispatcher/agent')
const Client = require('undici/lib/dispatcher/client')

module.exports = { Agent, Client, Dispatcher }
