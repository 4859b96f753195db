/**
 * What contrib/ ships, checked by the real tools: the alert rules by `promtool check rules` and
 * their unit tests by `promtool test rules`, the scrape config example by `promtool check config`;
 * the rules and the Grafana dashboard only name series the export really has, and the dashboard
 * colours every state of the one list.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BACKEND_STATES, STATE_INFO, type Health } from "@/lib/core/states";
import { StepwatchMetrics } from "@/lib/api/export/metrics";
import { parsePrometheus } from "@/lib/metrics/prometheus";
import { assertPromtool, promtool } from "../support/promtool";

const CONTRIB = path.resolve(__dirname, "../../contrib");
const RULES = path.join(CONTRIB, "prometheus/stepwatch-rules.yml");
const RULES_TEST = path.join(CONTRIB, "prometheus/stepwatch-rules.test.yml");
const EXAMPLE = path.join(CONTRIB, "prometheus/prometheus.example.yml");
const DASHBOARD = path.join(CONTRIB, "grafana/stepwatch-dashboard.json");
/** The dashboard colours a state by its health in STATE_INFO, as the UI's badges do. */
const HEALTH_COLOUR: Record<Health, string> = { yes: "green", watch: "yellow", no: "red", unknown: "gray" };

/** Family names the export has (every metric registered, values or not). */
async function exportedFamilies(): Promise<Set<string>> {
  const m = new StepwatchMetrics({ defaultMetrics: false });
  return new Set(parsePrometheus(await m.render()).types.keys());
}

/** stepwatch_* names used in PromQL text, histogram sample suffixes mapped to their family. */
function namesIn(text: string): string[] {
  const names = new Set<string>();
  for (const [n] of text.matchAll(/\bstepwatch_[a-z_]+/g)) names.add(n.replace(/_(bucket|count|sum)$/, ""));
  return [...names].sort();
}

describe("contrib/prometheus", () => {
  it("the alert rules pass promtool check rules and their unit tests pass promtool test rules", async () => {
    assertPromtool();
    const check = await promtool(["check", "rules", RULES]);
    expect(check.stdout + check.stderr).toContain("SUCCESS: 9 rules found");
    expect(check.code).toBe(0);
    const test = await promtool(["test", "rules", RULES_TEST]);
    expect({ code: test.code, out: test.stdout + test.stderr }).toMatchObject({ code: 0, out: expect.stringContaining("SUCCESS") });
  });

  it("promtool test rules fails when a rule stops matching its tests (the tests can fail)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-rules-"));
    try {
      const rules = fs.readFileSync(RULES, "utf8");
      const broken = rules.replace('stepwatch_backend_state{state="stuck"} == 1', 'stepwatch_backend_state{state="stalled"} == 1');
      expect(broken).not.toBe(rules);
      fs.writeFileSync(path.join(dir, "stepwatch-rules.yml"), broken);
      fs.copyFileSync(RULES_TEST, path.join(dir, "stepwatch-rules.test.yml"));
      const test = await promtool(["test", "rules", path.join(dir, "stepwatch-rules.test.yml")]);
      expect(test.code).not.toBe(0);
      expect(test.stdout + test.stderr).toContain("StepwatchBackendStuck");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the silence tests can fail: a stuck rule that ignores acknowledgement and maintenance pages for them", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-rules-"));
    try {
      const rules = fs.readFileSync(RULES, "utf8");
      const unsilenced = rules.replace(/(stepwatch_backend_state\{state="stuck"\} == 1)\n\s+unless[^\n]*\n[^\n]*\n/, "$1\n");
      expect(unsilenced).not.toBe(rules);
      fs.writeFileSync(path.join(dir, "stepwatch-rules.yml"), unsilenced);
      fs.copyFileSync(RULES_TEST, path.join(dir, "stepwatch-rules.test.yml"));
      const test = await promtool(["test", "rules", path.join(dir, "stepwatch-rules.test.yml")]);
      expect(test.code).not.toBe(0);
      // The extra alerts are the silenced backends.
      expect(test.stdout + test.stderr).toMatch(/backend="(acked|maint)"/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("every rule has a runbook_url into docs/runbooks.md, each to a section that exists", () => {
    const rules = fs.readFileSync(RULES, "utf8");
    const runbooks = fs.readFileSync(path.resolve(CONTRIB, "../docs/runbooks.md"), "utf8");
    // GitHub's anchor of "## StepwatchBackendStuck" is "#stepwatchbackendstuck".
    const sections = new Set([...runbooks.matchAll(/^## (\w+)$/gm)].map((m) => m[1].toLowerCase()));
    const alerts = [...rules.matchAll(/- alert: (\w+)[\s\S]*?runbook_url: (\S+)/g)];
    expect(alerts.length).toBe([...rules.matchAll(/- alert: /g)].length);
    for (const [, alert, url] of alerts) {
      expect(url, alert).toBe(`https://github.com/stepwatch/stepwatch/blob/main/docs/runbooks.md#${alert.toLowerCase()}`);
      expect(sections, alert).toContain(alert.toLowerCase());
    }
  });

  it("names the nine alerts and only series the export has", async () => {
    const rules = fs.readFileSync(RULES, "utf8");
    expect([...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1])).toEqual([
      "StepwatchBackendStuck",
      "StepwatchBackendDown",
      "StepwatchBackendCrashLoop",
      "StepwatchRestartFailed",
      "StepwatchNotScraping",
      "StepwatchNoLeader",
      "StepwatchOverloaded",
      "StepwatchProxyBackendsUnhealthy",
      "StepwatchNotificationChannelFailing",
    ]);
    const families = await exportedFamilies();
    for (const n of namesIn(rules)) expect(families, n).toContain(n);
  });

  it("the scrape config example is a valid Prometheus config with the rules", async () => {
    assertPromtool();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sw-promcfg-"));
    try {
      // The token file must exist for promtool; the rules file is found next to the config.
      const token = path.join(dir, "token");
      fs.writeFileSync(token, "t".repeat(32));
      fs.writeFileSync(path.join(dir, "prometheus.yml"), fs.readFileSync(EXAMPLE, "utf8").replace("/etc/prometheus/stepwatch-metrics.token", token));
      fs.copyFileSync(RULES, path.join(dir, "stepwatch-rules.yml"));
      const check = await promtool(["check", "config", path.join(dir, "prometheus.yml")]);
      expect({ code: check.code, out: check.stdout + check.stderr }).toMatchObject({ code: 0, out: expect.stringContaining("SUCCESS: 9 rules found") });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("contrib/grafana", () => {
  const dash = JSON.parse(fs.readFileSync(DASHBOARD, "utf8")) as {
    panels: Array<{
      type: string;
      title: string;
      targets?: Array<{ expr: string }>;
      fieldConfig?: { overrides: Array<{ matcher: { id: string; options: string }; properties: Array<{ id: string; value: unknown }> }> };
    }>;
    annotations: { list: Array<{ name: string; expr?: string; tagKeys?: string }> };
  };

  it("queries only series the export has", async () => {
    const families = await exportedFamilies();
    const exprs = [...dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)), ...dash.annotations.list.flatMap((a) => (a.expr ? [a.expr] : []))];
    expect(exprs.length).toBeGreaterThan(5);
    const used = namesIn(exprs.join("\n"));
    for (const n of used) expect(families, n).toContain(n);
    expect(used).toContain("stepwatch_backend_state");
  });

  it("has the fleet state timeline, colouring every state of lib/core/states.ts by its health, exactly once", () => {
    const timeline = dash.panels.find((p) => p.type === "state-timeline");
    expect(timeline?.targets?.[0].expr).toContain("stepwatch_backend_state");
    const colours = timeline!.fieldConfig!.overrides
      .filter((o) => o.matcher.id === "byRegexp")
      .map((o) => ({ re: new RegExp(o.matcher.options), colour: (o.properties[0].value as { fixedColor: string }).fixedColor }));
    for (const state of BACKEND_STATES) {
      // The row's display name is "{{backend}} {{state}}".
      const hits = colours.filter((c) => c.re.test(`gb10-a ${state}`)).map((c) => c.colour);
      expect(hits, `state "${state}" needs one colour (${HEALTH_COLOUR[STATE_INFO[state].health]}) in ${DASHBOARD}`).toEqual([HEALTH_COLOUR[STATE_INFO[state].health]]);
    }
  });

  it("draws prompt and generation tokens per second on separate axes (prompt on the right)", () => {
    const panel = dash.panels.find((p) => p.title === "Tokens per second")!;
    const prompt = panel.targets!.find((t) => t.expr.includes("stepwatch_backend_prompt_tokens_per_second")) as { refId?: string };
    const right = panel.fieldConfig!.overrides.find((o) => o.matcher.id === "byFrameRefID" && o.matcher.options === prompt.refId);
    expect(right?.properties).toContainEqual({ id: "custom.axisPlacement", value: "right" });
  });

  it("shows restarts as annotations with their outcome", () => {
    const a = dash.annotations.list.find((x) => x.name === "Restarts");
    expect(a?.expr).toContain("stepwatch_restarts_total");
    expect(a?.tagKeys).toBe("backend,outcome");
  });
});
