/**
 * The house's direction, held by a test: dependency-cruiser (the field's tool) over the product's
 * folders with the rules of .dependency-cruiser.cjs (no import circle; one rule per layer). A red
 * run lists every import that runs against the table; CONTRIBUTING.md "The floor plan" says what
 * each layer may import.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import { cruise, type ICruiseResult, type IConfiguration } from "dependency-cruiser";

const ROOT = path.resolve(__dirname, "../..");
const rules = createRequire(__filename)(path.join(ROOT, ".dependency-cruiser.cjs")) as IConfiguration;
const PRODUCT = ["lib", "db", "app", "components", "sim", "instrumentation.ts", "proxy.ts"];

async function violationsIn(baseDir: string, folders: string[]): Promise<string[]> {
  const cwd = process.cwd();
  process.chdir(baseDir);
  try {
    const { output } = await cruise(folders, {
      validate: true,
      ruleSet: rules,
      ...rules.options,
      tsConfig: fs.existsSync(path.join(baseDir, "tsconfig.json")) ? { fileName: "tsconfig.json" } : undefined,
    });
    const summary = (output as ICruiseResult).summary;
    return summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (circle: ${v.cycle.map((c) => c.name).join(" -> ")})` : ""}`);
  } finally {
    process.chdir(cwd);
  }
}

describe("the floor plan (.dependency-cruiser.cjs)", () => {
  it("has no import circle and no import against the layer table", async () => {
    const found = await violationsIn(ROOT, PRODUCT);
    expect(found, `imports against the floor plan:\n${found.join("\n")}`).toEqual([]);
  }, 120_000);

  describe("the rules themselves fire", () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "stepwatch-arch-"));
    afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(tmp, file)), { recursive: true });
      fs.writeFileSync(path.join(tmp, file), text);
    };

    it("on a word of the vocabulary that reaches up, a db module that imports a feature, a feature that reaches the runtime, client code that imports the server, and a circle", async () => {
      write("tsconfig.json", `{ "compilerOptions": { "strict": true } }\n`);
      write("lib/core/states.ts", `import { x } from "../api/types";\nexport const s = x;\n`);
      write("lib/api/types.ts", `export const x = 1;\n`);
      write("db/queries/readings.ts", `import { w } from "../../lib/watcher/index";\nexport const r = w;\n`);
      write("lib/watcher/index.ts", `import { rt } from "../runtime";\nexport const w = rt;\n`);
      write("lib/runtime.ts", `export const rt = 1;\n`);
      write("components/View.tsx", `import { r } from "../db/queries/readings";\nexport const v = r;\n`);
      write("lib/check/a.ts", `import { b } from "./b";\nexport const a = b;\n`);
      write("lib/check/b.ts", `import { a } from "./a";\nexport const b = a;\n`);
      const found = await violationsIn(tmp, ["lib", "db", "components"]);
      const rulesHit = new Set(found.map((f) => f.split(":")[0]));
      expect([...rulesHit].sort()).toEqual(["layer-client", "layer-core", "layer-db", "layer-features", "no-circular"]);
      expect(found).toContain("layer-core: lib/core/states.ts -> lib/api/types.ts");
      expect(found).toContain("layer-db: db/queries/readings.ts -> lib/watcher/index.ts");
      expect(found).toContain("layer-features: lib/watcher/index.ts -> lib/runtime.ts");
      expect(found).toContain("layer-client: components/View.tsx -> db/queries/readings.ts");
    }, 60_000);
  });
});
