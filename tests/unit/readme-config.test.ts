/** The configuration example in README.md is a real, valid config (docs that drift are a bug). */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseConfig } from "@/lib/config";

describe("README configuration example", () => {
  it("parses, with its env: secrets and scrypt placeholder filled in", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const block = /### Configuration[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const json = JSON.parse(block!.replace('"scrypt:..."', '"env:ALICE_PASSWORD"'));
    const config = parseConfig(json, "README.md", {
      env: {
        VLLM_KEY: "k", RESTART_TOKEN: "t", ALICE_PASSWORD: "p", BOB_PASSWORD: "b", CI_TOKEN: "ci-token-0123456789abcdef01234567",
        HOOK_TOKEN: "h", SLACK_WEBHOOK_URL: "https://hooks.slack.com/services/T/B/X", NTFY_TOKEN: "n", SMTP_PASSWORD: "s",
      },
    });
    expect(config.backends.map((b) => b.id)).toEqual(["gb10-a", "gb10-b", "embed", "llama", "ollama"]);
    expect(config.backends.map((b) => [b.engine, b.probe])).toEqual([
      ["auto", "auto"],
      ["auto", "auto"],
      ["vllm", "embeddings"],
      ["llamacpp", "auto"],
      ["ollama", "auto"],
    ]);
    expect(config.startupGraceSeconds).toBe(600);
    expect(config.backends[0].labels).toEqual({ site: "ams", gpu: "gb10", team: "search" });
    expect(config.backends[0].restart).toMatchObject({ kind: "command", command: ["systemctl", "restart", "vllm"] });
    expect(config.proxies.map((p) => p.id)).toEqual(["lb"]);
    expect(config.notifications.channels.map((c) => c.type)).toEqual(["webhook", "slack", "ntfy", "email"]);
    expect(config.backends[1].unattended).toEqual({ afterSeconds: 300, maxPerDay: 2 });
    expect(config.maintenance).toHaveLength(1);
    expect(config.operators.map((o) => o.role)).toEqual(["operator", "viewer"]);
    expect(config.tokens).toEqual([{ name: "ci", token: "ci-token-0123456789abcdef01234567", role: "operator" }]);
    expect(config.server.trustProxy).toEqual(["127.0.0.1"]);
  });
});
