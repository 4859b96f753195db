import { describe, expect, it } from "vitest";
import { editedConfig } from "@/lib/api/config-edit";
import { ConfigError, parseConfig } from "@/lib/config";

// The pure edit of the file's JSON (lib/api/config-edit.ts): labels come over HTTP like any other
// field and are checked by the same schema; the dashboard's form sends none, so a PUT keeps them.
const file = () => ({
  backends: [{ id: "a", url: "http://127.0.0.1:1", labels: { site: "ams", gpu: "h100" }, restart: { command: ["/bin/true"] } }],
});

describe("editedConfig and labels", () => {
  it("POST takes a backend's labels as written, and the schema loads them", () => {
    const { json } = editedConfig(file(), { kind: "backend", op: "add", body: { id: "b", url: "http://127.0.0.1:2", labels: { team: "search" } } });
    expect(parseConfig(json, "t.json").backends[1].labels).toEqual({ team: "search" });
  });

  it("PUT without labels keeps the file's; PUT with labels replaces them; labels null removes them", () => {
    const kept = editedConfig(file(), { kind: "backend", op: "update", id: "a", body: { url: "http://127.0.0.1:3" } }).json as any;
    expect(kept.backends[0].labels).toEqual({ site: "ams", gpu: "h100" });
    const replaced = editedConfig(file(), { kind: "backend", op: "update", id: "a", body: { url: "http://127.0.0.1:3", labels: { site: "fra" } } }).json as any;
    expect(replaced.backends[0].labels).toEqual({ site: "fra" });
    const removed = editedConfig(file(), { kind: "backend", op: "update", id: "a", body: { url: "http://127.0.0.1:3", labels: null } }).json as any;
    expect(removed.backends[0]).not.toHaveProperty("labels");
    expect(parseConfig(removed, "t.json").backends[0].labels).toEqual({});
  });

  it("a bad label from a request fails the schema naming the field (the route's 422)", () => {
    const { json } = editedConfig(file(), { kind: "backend", op: "add", body: { id: "b", url: "http://127.0.0.1:2", labels: { "GPU type": "h100" } } });
    try {
      parseConfig(json, "t.json");
      expect.unreachable("a bad key loaded");
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).problems.join("\n")).toMatch(/^backends\[1\]\.labels\.GPU type: a label key must be/m);
    }
  });
});
