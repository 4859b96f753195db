import { describe, expect, it } from "vitest";
import { publicUrl } from "@/lib/net/public-url";

describe("publicUrl: a configured URL as anyone who can read the dashboard may see it", () => {
  it.each([
    ["http://127.0.0.1:8000", "http://127.0.0.1:8000"],
    ["https://vllm.internal:8443/v1", "https://vllm.internal:8443/v1"],
    ["http://[::1]:8000", "http://[::1]:8000"],
  ])("leaves %s as configured", (url, shown) => {
    expect(publicUrl(url)).toBe(shown);
  });

  it.each([
    ["user:password", "http://ops:hunter2@10.0.0.11:8000", "http://***@10.0.0.11:8000"],
    ["a user alone", "http://deploy-token@10.0.0.11:8000/v1", "http://***@10.0.0.11:8000/v1"],
    ["a password alone", "http://:hunter2@10.0.0.11", "http://***@10.0.0.11"],
    ["a query", "http://10.0.0.11:9000/restart?token=abc&x=1", "http://10.0.0.11:9000/restart?***"],
    ["a query at the root", "http://10.0.0.11:9000/?token=abc", "http://10.0.0.11:9000/?***"],
    ["everything", "https://u:p@hooks.example/r?token=abc#sig=1", "https://***@hooks.example/r?***#***"],
  ])("hides %s behind a visible ***", (_what, url, shown) => {
    expect(publicUrl(url)).toBe(shown);
    for (const secret of ["hunter2", "deploy-token", "abc", "sig=1", "u:p"]) expect(publicUrl(url)).not.toContain(secret);
  });

  it("shows nothing of a string that is not an http(s) URL (fails closed)", () => {
    expect(publicUrl("not a url")).toBe("***");
    expect(publicUrl("ops:hunter2@10.0.0.11")).toBe("***"); // parses, as a URL of the scheme "ops:"
  });
});
