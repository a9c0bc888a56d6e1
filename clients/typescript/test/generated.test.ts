// Fails when src/protocol.generated.ts no longer matches `ctxlayer schema`.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
// @ts-ignore -- plain ESM script without type declarations
import { generate, outputPath, readSchema } from "../scripts/generate-types.mjs";

describe("generated protocol types", () => {
  it("match the daemon's schema (run `npm run generate` if this fails)", async () => {
    const expected = await generate(readSchema());
    expect(readFileSync(outputPath, "utf8")).toBe(expected);
  });

  it("cover every request method of the schema", () => {
    const schema = readSchema();
    const text = readFileSync(outputPath, "utf8");
    for (const method of Object.keys(schema.requests)) {
      expect(text).toContain(JSON.stringify(method));
    }
  });

  it("detects a changed schema", async () => {
    const schema = readSchema();
    schema.$defs.Budget.properties.extraField = { type: "integer" };
    const changed = await generate(schema);
    expect(changed).toContain("extraField");
    expect(readFileSync(outputPath, "utf8")).not.toBe(changed);
  });
});
