/**
 * The house's floor plan, as rules a test holds (tests/unit/architecture.test.ts runs this with
 * `depcruise`, type-only imports included). One rule per layer: what it may not import. Read it
 * bottom up; CONTRIBUTING.md "The floor plan" says the same in words and points here.
 *
 *   lib/core/                       the vocabulary: imports nothing of the repository
 *   lib/net/                        HTTP and addresses                       -> core
 *   lib/metrics/                    the exposition format                    -> core, net
 *   lib/engines/                    one adapter per engine                   -> core, net, metrics
 *   lib/check/                      read, probe, judge (pure classifier)     -> the above
 *   lib/config.ts                   the config schema                        -> core, net
 *   db/                             schema, queries, migrations              -> core
 *   lib/{watcher,notify,oncall,restart,auth,outages,cluster}  features            -> the above, each other
 *   lib/cli/                        the CLI's entry points                   -> measure/judge, config, auth
 *   lib/api/                        the route surface and the export         -> all of the above, the root
 *   lib/runtime.ts, lib/reload.ts   the root: builds every dependency
 *   app/, instrumentation.ts, proxy.ts   Next's entry points
 *   components/, lib/ui/            client code                              -> core, lib/api/types.ts
 *   sim/                            the engine simulators, apart from the product
 */
const CORE = "^lib/core/";
const NET = "^lib/net/";
const METRICS = "^lib/metrics/";
const ENGINES = "^lib/engines/";
const CHECK = "^lib/check/";
const CONFIG = "^lib/config\\.ts$";
const DB = "^db/";
const FEATURES = "^lib/(watcher|notify|oncall|restart|auth|outages|cluster)(/|\\.ts$)";
const CLI = "^lib/cli/";
const SURFACE = "^lib/api/";
const ROOT = "^lib/(runtime|reload)\\.ts$";
const APP = "^(app/|instrumentation\\.ts$|proxy\\.ts$)";
const CLIENT = "^(components/|lib/ui/)";
const SIM = "^sim/";
const REPO = "^(lib|db|app|components|sim)/|^(instrumentation|proxy)\\.ts$";

const either = (...xs) => xs.map((x) => `(${x})`).join("|");

/** A layer may import only what is listed; everything else of the repository is forbidden. */
function layer(name, from, allowed, comment) {
  return {
    name: `layer-${name}`,
    comment,
    severity: "error",
    from: { path: from },
    to: { path: REPO, pathNot: either(from, ...allowed) },
  };
}

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import circle means two modules are one: pull the shared word down into lib/core.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    layer("core", CORE, [], "The vocabulary floor imports nothing else of the repository and is safe for client code."),
    layer("net", NET, [CORE], "HTTP and address handling know no engine, no check, no storage."),
    layer("metrics", METRICS, [CORE, NET], "The exposition parser and the latency extraction know no engine adapter or check."),
    layer("engines", ENGINES, [CORE, NET, METRICS], "An adapter reads its engine's exposition; it never judges or stores."),
    layer("check", CHECK, [CORE, NET, METRICS, ENGINES], "Read, probe, judge: no storage, no features, no config file."),
    layer("config", CONFIG, [CORE, NET], "The config schema is words and validation only."),
    layer("db", DB, [CORE], "db/ imports only the vocabulary: no API types, no features."),
    layer("features", FEATURES, [CORE, NET, METRICS, ENGINES, CHECK, CONFIG, DB, FEATURES],
      "Features take narrow collaborators: never the runtime, never the API layer, never UI code."),
    layer("cli", CLI, [CORE, NET, METRICS, ENGINES, CHECK, CONFIG, "^lib/auth/password\\.ts$"],
      "The CLI runs the same check as the watcher, without the server."),
    layer("surface", SURFACE, [CORE, NET, METRICS, ENGINES, CHECK, CONFIG, DB, FEATURES, ROOT],
      "The route surface (and the export) is the only code besides the root and app/ that reaches the runtime."),
    layer("root", ROOT, [CORE, NET, METRICS, ENGINES, CHECK, CONFIG, DB, FEATURES, SURFACE, "^sim/demo\\.ts$"],
      "The root builds every dependency; it may start the demo fleet, never any other simulator code."),
    layer("app", APP, [CORE, NET, CONFIG, SURFACE, ROOT, CLIENT, "^lib/auth/"],
      "Pages and routes call the surface; they never touch db/, the watcher or a verb's internals."),
    layer("client", CLIENT, [CORE, "^lib/api/types\\.ts$"],
      "Client code sees the vocabulary and the API's wire types, never server modules."),
    layer("sim", SIM, [], "The simulators stand apart from the product: they import nothing of it."),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|\\.next)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".mjs", ".js"] },
  },
};
