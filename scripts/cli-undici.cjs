'use strict'
/**
 * What the bundled CLI (scripts/build-cli.ts) gets for `import ... from "undici"`: the three things
 * lib/net/http.ts uses (Agent, Client, request), required from their own files. undici's index
 * requires all of undici at load (fetch, WebSocket, EventSource, the cache and mock agents, every
 * interceptor): 1 MB of the 1.17 MB bundle, evaluated on every start of a probe that uses none of it.
 * `request` is index.js's makeDispatcher(api.request), kept to what lib/net/http.ts calls (a URL
 * and options with a dispatcher). The app (Next) and the tests use undici itself;
 * tests/integration/cli-bundle.test.ts runs the bundle this builds.
 */
const Dispatcher = require('undici/lib/dispatcher/dispatcher')
const api = require('undici/lib/api')
const Agent = require('undici/lib/dispatcher/agent')
const Client = require('undici/lib/dispatcher/client')
const util = require('undici/lib/core/util')
const { InvalidArgumentError } = require('undici/lib/core/errors')
const { getGlobalDispatcher } = require('undici/lib/global')

// As undici's index does: the dispatchers' request(), stream(), ... methods.
Object.assign(Dispatcher.prototype, api)

function request (url, opts) {
  if (!url || (typeof url !== 'string' && typeof url !== 'object')) throw new InvalidArgumentError('invalid url')
  if (opts != null && typeof opts !== 'object') throw new InvalidArgumentError('invalid opts')
  opts = opts || {}
  const parsed = util.parseURL(url)
  const dispatcher = opts.dispatcher || getGlobalDispatcher()
  return api.request.call(dispatcher, {
    ...opts,
    origin: parsed.origin,
    path: parsed.search ? `${parsed.pathname}${parsed.search}` : parsed.pathname,
    method: opts.method || (opts.body ? 'PUT' : 'GET')
  })
}

module.exports = { Agent, Client, Dispatcher, request }
