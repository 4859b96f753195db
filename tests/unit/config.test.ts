import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, DEFAULTS, jsonProblem, loadConfig, parseConfig, parseConfigText, resolveConfigPath } from "@/lib/config";

const env = { KEY: "sk-secret", PW: "hunter2", PWHASH: "scrypt:abc$def", HOOK: "tok" };

function valid(): Record<string, any> {
  return {
    pollIntervalSeconds: 2,
    backends: [
      { id: "gb10", url: "http://127.0.0.1:8000/", apiKey: "env:KEY", model: "m", restart: { command: ["systemctl", "restart", "vllm"] } },
      { id: "b2", url: "http://127.0.0.1:8001", restart: { webhook: { url: "http://127.0.0.1:9/hook", headers: { Authorization: "env:HOOK" } } } },
    ],
    proxies: [{ id: "lb", url: "http://127.0.0.1:9000" }],
    operators: [{ name: "ana", password: "env:PW" }, { name: "bo", password: "scrypt:xyz" }],
  };
}

function problems(json: unknown, opts = {}): string[] {
  try {
    parseConfig(json, "test.json", { env, ...opts });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error("expected a ConfigError");
}

describe("parseConfig", () => {
  it("accepts the README's configuration shape, fills defaults and resolves env secrets", () => {
    const c = parseConfig(valid(), "test.json", { env });
    expect(c.pollIntervalSeconds).toBe(2);
    expect(c.stuckAfterSeconds).toBe(DEFAULTS.stuckAfterSeconds);
    expect(c.retention).toEqual({ rawHours: 48, rollupDays: 90 });
    expect(c.history).toEqual({ replayDays: 7 });
    expect(c.backends[0].url).toBe("http://127.0.0.1:8000");
    expect(c.backends[0].apiKey).toBe("sk-secret");
    expect(c.backends[0].restart).toEqual({ kind: "command", command: ["systemctl", "restart", "vllm"], timeoutSeconds: DEFAULTS.restartCommandTimeoutSeconds });
    expect(c.backends[1].restart).toEqual({
      kind: "webhook",
      url: "http://127.0.0.1:9/hook",
      method: "POST",
      headers: { Authorization: "tok" },
      timeoutSeconds: DEFAULTS.webhookTimeoutSeconds,
    });
    expect(c.operators[0].password).toEqual({ kind: "plain", value: "hunter2", source: "env" });
    expect(c.operators[1].password).toEqual({ kind: "scrypt", hash: "scrypt:xyz" });
    expect(c.warnings).toEqual([]);
  });

  it("lists every variable an env: secret was read from, so restart commands can be run without them", () => {
    const j = valid();
    j.proxies[0].apiKey = "env:KEY"; // named twice, listed once
    expect(parseConfig(j, "t", { env }).secretEnvNames).toEqual(["HOOK", "KEY", "PW"]);
    expect(parseConfig({}, "t", { env }).secretEnvNames).toEqual([]);
  });

  it("a proxy may name the backends it fronts", () => {
    const j = valid();
    j.proxies[0].backends = ["gb10", "b2"];
    expect(parseConfig(j, "t", { env }).proxies[0].backends).toEqual(["gb10", "b2"]);
    expect(parseConfig(valid(), "t", { env }).proxies[0].backends).toBeUndefined();
  });

  it("a JSON syntax error names where, never quoting the file (it holds secrets)", () => {
    for (const text of ['{"apiKey": sk-live-secret-123}', 'x{"apiKey": "sk-live-secret-123"}', '{\n  "apiKey": "sk-live-secret-123" x\n}', '{"apiKey": "sk-live-secret-123']) {
      let p: string[] = [];
      try {
        parseConfigText(text, "f.json", { env });
      } catch (e) {
        p = (e as ConfigError).problems;
      }
      expect(p).toHaveLength(1);
      expect(p[0]).toMatch(/^not valid JSON: /);
      expect(p[0]).not.toContain("secret");
    }
    expect(jsonProblem("Expected ',' or '}' after property value in JSON at position 33", '{\n  "apiKey": "sk-live-secret-123" x\n}')).toBe(
      "Expected ',' or '}' after property value at line 2, column 32",
    );
  });

  it("a webhook takes its own timeoutSeconds", () => {
    const j = valid();
    j.backends[1].restart.webhook.timeoutSeconds = 5;
    expect(parseConfig(j, "t", { env }).backends[1].restart).toMatchObject({ kind: "webhook", timeoutSeconds: 5 });
  });

  it("an env var may hold a scrypt hash", () => {
    const j = valid();
    j.operators = [{ name: "ana", password: "env:PWHASH" }];
    expect(parseConfig(j, "t", { env }).operators[0].password).toEqual({ kind: "scrypt", hash: "scrypt:abc$def" });
  });

  it("an empty object is a valid config with every default", () => {
    const c = parseConfig({}, "t", { env });
    expect(c.backends).toEqual([]);
    expect(c.recoveryTimeoutSeconds).toBe(900);
    expect(c.startupGraceSeconds).toBe(600);
  });

  it("engine and probe default to auto per backend", () => {
    const c = parseConfig({ backends: [{ id: "a", url: "http://h:1" }, { id: "b", url: "http://h:2", engine: "sglang", probe: "none" }] }, "t", { env });
    expect(c.backends.map((b) => [b.engine, b.probe])).toEqual([
      ["auto", "auto"],
      ["sglang", "none"],
    ]);
  });

  it("a clear-text password is refused, except for the demo config, and then flagged", () => {
    const j = valid();
    j.operators = [{ name: "ana", password: "plain" }];
    expect(problems(j)).toEqual([expect.stringMatching(/^operators\[0\]\.password: must be "env:NAME"/)]);
    const c = parseConfig(j, "demo", { env, allowInlinePasswords: true });
    expect(c.operators[0].password).toEqual({ kind: "plain", value: "plain", source: "inline" });
    expect(c.warnings[0]).toMatch(/clear-text/);
  });

  // Every field wrong in turn: the message names that field.
  const cases: Array<[string, (j: Record<string, any>) => void, RegExp]> = [
    ["pollIntervalSeconds", (j) => (j.pollIntervalSeconds = 0), /^pollIntervalSeconds: /],
    ["stuckAfterSeconds", (j) => (j.stuckAfterSeconds = "120"), /^stuckAfterSeconds: /],
    ["probeTimeoutSeconds", (j) => (j.probeTimeoutSeconds = -1), /^probeTimeoutSeconds: /],
    ["idleProbeSeconds", (j) => (j.idleProbeSeconds = null), /^idleProbeSeconds: /],
    ["readThreads", (j) => (j.readThreads = 1.5), /^readThreads: must be "auto" or a whole number from 0 to 16$/],
    ["readThreads too many", (j) => (j.readThreads = 17), /^readThreads: must be "auto" or a whole number from 0 to 16$/],
    ["readThreads word", (j) => (j.readThreads = "all"), /^readThreads: must be "auto" or a whole number from 0 to 16$/],
    ["restartCooldownSeconds", (j) => (j.restartCooldownSeconds = -5), /^restartCooldownSeconds: /],
    ["recoveryTimeoutSeconds", (j) => (j.recoveryTimeoutSeconds = "x"), /^recoveryTimeoutSeconds: /],
    ["retention.rawHours", (j) => (j.retention = { rawHours: 0 }), /^retention\.rawHours: /],
    ["retention.rollupDays", (j) => (j.retention = { rollupDays: "90" }), /^retention\.rollupDays: /],
    ["retention unknown", (j) => (j.retention = { days: 3 }), /^retention\.days: unknown field$/],
    ["history.replayDays negative", (j) => (j.history = { replayDays: -1 }), /^history\.replayDays: /],
    ["history.replayDays over 31", (j) => (j.history = { replayDays: 32 }), /^history\.replayDays: /],
    ["history.replayDays a fraction", (j) => (j.history = { replayDays: 1.5 }), /^history\.replayDays: /],
    ["backends", (j) => (j.backends = {}), /^backends: /],
    ["backends[1].url", (j) => (j.backends[1].url = "not a url"), /^backends\[1\]\.url: Invalid URL$/],
    ["backends[0].url scheme", (j) => (j.backends[0].url = "ftp://x"), /^backends\[0\]\.url: Invalid URL$/],
    ["backends[0].id", (j) => (j.backends[0].id = "a b/c"), /^backends\[0\]\.id: must be/],
    ["backends[0].id missing", (j) => delete j.backends[0].id, /^backends\[0\]\.id: /],
    ["backends[1].id duplicate", (j) => (j.backends[1].id = "gb10"), /^backends\[1\]\.id: "gb10" is already used by backends\[0\]$/],
    ["proxies[0].id duplicate of a backend", (j) => (j.proxies[0].id = "b2"), /^proxies\[0\]\.id: "b2" is already used/],
    ["backends[0].apiKey missing env", (j) => (j.backends[0].apiKey = "env:NOPE"), /^backends\[0\]\.apiKey: environment variable NOPE is not set$/],
    ["backends[0].apiKey type", (j) => (j.backends[0].apiKey = 5), /^backends\[0\]\.apiKey: /],
    ["backends[0].model", (j) => (j.backends[0].model = ""), /^backends\[0\]\.model: /],
    ["backends[0] unknown field", (j) => (j.backends[0].urll = "x"), /^backends\[0\]\.urll: unknown field$/],
    ["backends[0].restart.command", (j) => (j.backends[0].restart = { command: [] }), /^backends\[0\]\.restart\.command: /],
    ["backends[0].restart.command as a string", (j) => (j.backends[0].restart = { command: "systemctl restart" }), /^backends\[0\]\.restart\.command: /],
    ["backends[0].restart.timeoutSeconds", (j) => (j.backends[0].restart.timeoutSeconds = 0), /^backends\[0\]\.restart\.timeoutSeconds: /],
    ["backends[0].restart neither", (j) => (j.backends[0].restart = {}), /^backends\[0\]\.restart: give exactly one of command or webhook$/],
    ["backends[1].restart.webhook.url", (j) => (j.backends[1].restart.webhook.url = "nope"), /^backends\[1\]\.restart\.webhook\.url: Invalid URL$/],
    ["backends[1].restart.webhook.method", (j) => (j.backends[1].restart.webhook.method = "DELETE"), /^backends\[1\]\.restart\.webhook\.method: /],
    ["backends[1].restart.webhook.headers", (j) => (j.backends[1].restart.webhook.headers = { X: "env:NOPE" }), /^backends\[1\]\.restart\.webhook\.headers\.X: environment variable NOPE/],
    ["backends[1].restart.webhook.timeoutSeconds", (j) => (j.backends[1].restart.webhook.timeoutSeconds = 0), /^backends\[1\]\.restart\.webhook\.timeoutSeconds: /],
    ["backends[1].restart.timeoutSeconds beside a webhook", (j) => (j.backends[1].restart.timeoutSeconds = 5), /^backends\[1\]\.restart\.timeoutSeconds: only applies to command; a webhook takes webhook\.timeoutSeconds$/],
    ["backends[1].restart.webhook unknown", (j) => (j.backends[1].restart.webhook.body = "x"), /^backends\[1\]\.restart\.webhook\.body: unknown field$/],
    ["proxies[0].url", (j) => (j.proxies[0].url = "127.0.0.1:9000"), /^proxies\[0\]\.url: Invalid URL$/],
    ["proxies[0].apiKey", (j) => (j.proxies[0].apiKey = "env:bad-name"), /^proxies\[0\]\.apiKey: /],
    ["proxies[0].backends unknown id", (j) => (j.proxies[0].backends = ["gb10", "gone"]), /^proxies\[0\]\.backends\[1\]: no backend "gone" in backends$/],
    ["proxies[0].backends type", (j) => (j.proxies[0].backends = "gb10"), /^proxies\[0\]\.backends: /],
    ["proxies[0] unknown", (j) => (j.proxies[0].restart = { command: ["x"] }), /^proxies\[0\]\.restart: unknown field$/],
    ["operators[0].name", (j) => (j.operators[0].name = ""), /^operators\[0\]\.name: /],
    ["operators[1].name duplicate", (j) => (j.operators[1].name = "ana"), /^operators\[1\]\.name: "ana" appears twice$/],
    ["operators[0].password env", (j) => (j.operators[0].password = "env:NOPE"), /^operators\[0\]\.password: environment variable NOPE is not set$/],
    ["top-level unknown", (j) => (j.backend = []), /^backend: unknown field$/],
    ["startupGraceSeconds", (j) => (j.startupGraceSeconds = -1), /^startupGraceSeconds: /],
    ["backends[0].engine", (j) => (j.backends[0].engine = "triton"), /^backends\[0\]\.engine: .*"vllm"/],
    ["backends[0].probe", (j) => (j.backends[0].probe = "ping"), /^backends\[0\]\.probe: .*"embeddings"/],
  ];
  it.each(cases)("names %s", (_name, mutate, re) => {
    const j = valid();
    mutate(j);
    const p = problems(j);
    expect(p.length).toBeGreaterThan(0);
    expect(p.some((line) => re.test(line)), p.join("\n")).toBe(true);
  });

  const TOKEN = "scrape-token-0123456789abcdef0123";
  it("metrics.bearerToken is optional, and only ever \"env:NAME\" of 32+ characters", () => {
    expect(parseConfig({}, "t", { env: {} }).metrics).toEqual({ bearerToken: null });
    expect(parseConfig({ metrics: { bearerToken: "env:SCRAPE" } }, "t", { env: { SCRAPE: TOKEN } }).metrics).toEqual({ bearerToken: TOKEN });
    expect(() => parseConfig({ metrics: { bearerToken: TOKEN } }, "t", { env: {} })).toThrow(/metrics\.bearerToken: must be "env:NAME"/);
    expect(() => parseConfig({ metrics: { bearerToken: "env:SCRAPE" } }, "t", { env: {} })).toThrow(/metrics\.bearerToken: environment variable SCRAPE is not set/);
    expect(() => parseConfig({ metrics: { bearerToken: "env:SCRAPE" } }, "t", { env: { SCRAPE: "short" } })).toThrow(/metrics\.bearerToken: the token must be at least 32/);
    expect(() => parseConfig({ metrics: { token: "x" } }, "t", { env: {} })).toThrow(/metrics\.token: unknown field/);
  });

  it("security fields: defaults, and errors that name the field", () => {
    const c = parseConfig({}, "t", { env });
    expect(c.access).toEqual({ read: "public" });
    expect(c.server).toEqual({ trustProxy: [], allowedHosts: [] });
    expect(c.tokens).toEqual([]);
    const ok = parseConfig(
      { ...valid(), tokens: [{ name: "ci", token: "env:KEY" }], access: { read: "signed-in" }, auth: { proxyHeader: "X-Forwarded-User" }, server: { trustProxy: ["10.0.0.0/8", "::1"] } },
      "t",
      { env: { ...env, KEY: "a-token-of-32-characters-0123456" } },
    );
    expect(ok.tokens).toEqual([{ name: "ci", token: "a-token-of-32-characters-0123456", role: "operator" }]);
    expect(ok.secretEnvNames).toContain("KEY");
    expect(ok.auth.proxyHeader).toBe("x-forwarded-user");
    expect(ok.operators[0].role).toBe("operator");
    // Reading needs sign-in, but the Prometheus export has no token of its own: said at start.
    expect(ok.warnings).toEqual([
      expect.stringMatching(/^access\.read is "signed-in" but metrics\.bearerToken is unset/),
      // A user header on the word of a /8 and the loopback, with no proof it passed the proxy.
      expect.stringMatching(/^auth\.proxyHeader is believed from server\.trustProxy 10\.0\.0\.0\/8, ::1 without auth\.proxy\.secretHeader/),
    ]);
    const scraped = parseConfig({ ...valid(), access: { read: "signed-in" }, metrics: { bearerToken: "env:KEY" } }, "t", { env: { ...env, KEY: "a-token-of-32-characters-0123456" } });
    expect(scraped.warnings).toEqual([]);
    expect(problems({ server: { trustProxy: ["proxy.local"] } })).toEqual([expect.stringMatching(/^server\.trustProxy\[0\]: .*not an IP address/)]);
    expect(problems({ server: { allowedHosts: ["http://x"] } })).toEqual([expect.stringMatching(/^server\.allowedHosts\[0\]: /)]);
    expect(problems({ tokens: [{ name: "ci", token: "inline-token-000000000" }] })).toEqual([expect.stringMatching(/^tokens\[0\]\.token: must be "env:NAME"/)]);
    expect(problems({ tokens: [{ name: "ci", token: "env:KEY" }] })).toEqual([expect.stringMatching(/^tokens\[0\]\.token: .*at least 32/)]);
    // 31 characters (accepted when the floor was 16) is refused, naming the field; 32 is enough.
    const short = "0123456789abcdef0123456789abcde";
    expect(problems({ tokens: [{ name: "ci", token: "env:KEY" }] }, { env: { ...env, KEY: short } })).toEqual([expect.stringMatching(/^tokens\[0\]\.token: the token must be at least 32 characters/)]);
    expect(parseConfig({ tokens: [{ name: "ci", token: "env:KEY" }] }, "t", { env: { KEY: `${short}f` } }).tokens[0].token).toBe(`${short}f`);
    expect(problems({ auth: { proxyHeader: "X-User" } })).toEqual([expect.stringMatching(/^auth\.proxyHeader: needs server\.trustProxy/)]);
    // A /0 trusts the whole internet as a proxy: refused, naming the field.
    expect(problems({ server: { trustProxy: ["127.0.0.1", "0.0.0.0/0"] } })).toEqual([expect.stringMatching(/^server\.trustProxy\[1\]: a \/0 range/)]);
    expect(problems({ server: { trustProxy: ["::/0"] } })).toEqual([expect.stringMatching(/^server\.trustProxy\[0\]: a \/0 range/)]);
    // The proof a proxy adds: a secret header, only "env:NAME", at least 32 characters; no warning then.
    const secretEnv = { env: { ...env, PROXY: "a-proxy-secret-of-32-characters-0" } };
    const proven = parseConfig(
      { ...valid(), auth: { proxyHeader: "X-Forwarded-User", proxy: { secretHeader: "X-Proxy-Secret", secret: "env:PROXY" } }, server: { trustProxy: ["127.0.0.1"] } },
      "t",
      secretEnv,
    );
    expect(proven.auth.proxy).toEqual({ secretHeader: "x-proxy-secret", secret: "a-proxy-secret-of-32-characters-0" });
    expect(proven.warnings).toEqual([]);
    expect(proven.audit.retentionDays).toBe(400);
    expect(problems({ auth: { proxyHeader: "X-U", proxy: { secretHeader: "X-S", secret: "written-in-the-file-0123456789abcdef" } }, server: { trustProxy: ["127.0.0.1"] } })).toEqual([
      expect.stringMatching(/^auth\.proxy\.secret: must be "env:NAME"/),
    ]);
    // A key pasted after "env:" is malformed: the field is named, the value never quoted.
    const pasted = problems({ ...valid(), backends: [{ id: "b", url: "http://10.0.0.1:8000", apiKey: "env:sk-live-PASTED-KEY-123" }], operators: [{ name: "o", password: "env:hunter2 pasted" }] });
    expect(pasted).toEqual([expect.stringMatching(/^backends\[0\]\.apiKey: malformed env reference/), expect.stringMatching(/^operators\[0\]\.password: malformed env reference/)]);
    expect(pasted.join("\n")).not.toMatch(/PASTED|hunter2|sk-live/);
    expect(problems({ auth: { proxy: { secretHeader: "X-S", secret: "env:PROXY" } } }, secretEnv)).toEqual([expect.stringMatching(/^auth\.proxy: proves the requests of auth\.proxyHeader/)]);
    expect(problems({ access: { read: "everyone" } })[0]).toMatch(/^access\.read: /);
    expect(problems({ operators: [{ name: "a", password: "env:PW", role: "admin" }] })[0]).toMatch(/^operators\[0\]\.role: /);
  });

  it("reports several problems at once", () => {
    const j = valid();
    j.backends[1].url = "x";
    j.proxies[0].url = "y";
    expect(problems(j)).toEqual(["backends[1].url: Invalid URL", "proxies[0].url: Invalid URL"]);
  });
});

describe("loadConfig / resolveConfigPath", () => {
  it("names the file when it is missing or not JSON", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-cfg-"));
    const f = path.join(dir, "c.json");
    expect(() => loadConfig(f)).toThrow(/c\.json[\s\S]*cannot read/);
    fs.writeFileSync(f, "{ nope");
    expect(() => loadConfig(f)).toThrow(/not valid JSON/);
    fs.writeFileSync(f, JSON.stringify({ backends: [{ id: "a", url: "http://127.0.0.1:1" }] }));
    expect(loadConfig(f, { env: {} }).backends[0].id).toBe("a");
  });

  it("STEPWATCH_CONFIG, else ./stepwatch.config.json, else null (demo)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-cfg-"));
    expect(resolveConfigPath({}, dir)).toBeNull();
    fs.writeFileSync(path.join(dir, "stepwatch.config.json"), "{}");
    expect(resolveConfigPath({}, dir)).toBe(path.join(dir, "stepwatch.config.json"));
    expect(resolveConfigPath({ STEPWATCH_CONFIG: "x/other.json" }, dir)).toBe(path.join(dir, "x/other.json"));
    expect(resolveConfigPath({ STEPWATCH_DEMO: "1", STEPWATCH_CONFIG: "x/other.json" }, dir)).toBeNull();
  });
});

describe("backends[].labels", () => {
  const withLabels = (labels: unknown) => {
    const c = valid();
    c.backends[1].labels = labels;
    return c;
  };

  it("carries string labels, and none is an empty map", () => {
    const c = parseConfig(withLabels({ site: "ams", gpu: "h100", team_2: "search" }), "test.json", { env });
    expect(c.backends[1].labels).toEqual({ site: "ams", gpu: "h100", team_2: "search" });
    expect(c.backends[0].labels).toEqual({});
  });

  it("refuses a bad key, naming the backend's labels and the key", () => {
    for (const key of ["Site", "2gpu", "gpu-type", "a".repeat(33), ""]) {
      const p = problems(withLabels({ [key]: "x" }));
      expect(p.join("\n"), key).toMatch(/^backends\[1\]\.labels.*label key must be/m);
    }
  });

  it("refuses a value that is not a string, empty, or longer than 64 characters, naming the label", () => {
    expect(parseConfig(withLabels({ site: "a".repeat(64) }), "test.json", { env }).backends[1].labels.site).toHaveLength(64);
    expect(problems(withLabels({ site: "a".repeat(65) })).join("\n")).toMatch(/^backends\[1\]\.labels\.site: .*at most 64 characters/m);
    expect(problems(withLabels({ site: "" })).join("\n")).toMatch(/^backends\[1\]\.labels\.site: /m);
    expect(problems(withLabels({ gpus: 8 })).join("\n")).toMatch(/^backends\[1\]\.labels\.gpus: /m);
    expect(problems(withLabels(["ams"])).join("\n")).toMatch(/^backends\[1\]\.labels: /m);
  });

  it("refuses more than 16 labels on one backend", () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "v"]));
    expect(Object.keys(parseConfig(withLabels(many(16)), "test.json", { env }).backends[1].labels)).toHaveLength(16);
    expect(problems(withLabels(many(17))).join("\n")).toMatch(/^backends\[1\]\.labels: at most 16 labels per backend/m);
  });
});
