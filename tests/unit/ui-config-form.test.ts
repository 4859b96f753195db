import { describe, expect, it } from "vitest";
import { labelsText, parseIdList, parseLabelsText } from "@/lib/ui/config-form";

describe("the Configuration page's form fields", () => {
  it("shows labels one key:value per line, by key, and reads them back", () => {
    const labels = { site: "ams", gpu: "h100", team: "search: infra" };
    expect(labelsText(labels)).toBe("gpu:h100\nsite:ams\nteam:search: infra");
    expect(parseLabelsText(labelsText(labels))).toEqual({ labels, problems: [] });
    expect(labelsText({})).toBe("");
    expect(parseLabelsText("  \n")).toEqual({ labels: {}, problems: [] });
  });
  it("trims around the colon and skips blank lines", () => {
    expect(parseLabelsText(" site : ams \n\ngpu:h100\n")).toEqual({ labels: { site: "ams", gpu: "h100" }, problems: [] });
  });
  it("names the field for a line without a colon and a key given twice; what a key may be is the schema's", () => {
    expect(parseLabelsText("site:ams\nh100").problems).toEqual(['labels: line 2 "h100" is not key:value']);
    expect(parseLabelsText("site:ams\nsite:fra").problems).toEqual(["labels: site is given twice"]);
    // Left to the server's schema, which names backends[i].labels.Site.
    expect(parseLabelsText("Site:ams")).toEqual({ labels: { Site: "ams" }, problems: [] });
  });
  it("reads a proxy's backends as ids separated by commas or spaces", () => {
    expect(parseIdList(" gpu-1, gpu-2  gpu-3,,")).toEqual(["gpu-1", "gpu-2", "gpu-3"]);
    expect(parseIdList("")).toEqual([]);
  });
});
