// Type-checked by `npm run typecheck` (tsc), not run: a provider request's system is a string
// or text blocks (PROTOCOL.md), as the daemon takes and answers it. The generated types said
// `{ [k: string]: unknown }`, so neither of these compiled and a result's system was no string.
import type { AssembleResult, CountParams, TrimParams, TrimResult } from "../src";

const asString: TrimParams = { format: "anthropic", messages: [], system: "You are terse." };
const asBlocks: CountParams = {
  format: "anthropic",
  messages: [],
  system: [{ type: "text", text: "You are terse.", cache_control: { type: "ephemeral" } }],
};
const instructions: TrimParams = { format: "responses", messages: [], system: "Be brief." };

export function systemText(result: TrimResult | AssembleResult): string {
  const system = result.system;
  if (typeof system === "string") return system;
  return (system ?? []).map((block) => block.text).join("\n");
}

// @ts-expect-error a block is a text block: its type is "text"
const notText: TrimParams = { messages: [], system: [{ type: "image", text: "x" }] };
// @ts-expect-error nor an object of any shape
const notBlocks: CountParams = { system: { text: "x" } };

export const examples = [asString, asBlocks, instructions, notText, notBlocks];
