/**
 * Answers the daemon's ctx/summarize with the editor's own language model (vscode.lm). When
 * no model is available it answers with an error, and the daemon uses its offline summary.
 */
import type { SummarizeParams, SummarizeResult } from "@ctxlayer/client";

export type EditorModel = (prompt: string) => Promise<string | undefined>;

export function summaryPrompt(params: SummarizeParams): string {
  const transcript = params.messages
    .map((m) => `[${m.role}${m.id ? ` ${m.id}` : ""}]\n${m.content}`)
    .join("\n\n");
  return (
    `${params.instructions}\n\nKeep the summary under ${params.maxTokens} tokens.\n\n` +
    `Conversation:\n\n${transcript}`
  );
}

export async function summarize(
  params: SummarizeParams,
  model: EditorModel,
): Promise<SummarizeResult> {
  const text = await model(summaryPrompt(params));
  if (text === undefined || text.trim() === "") {
    throw new Error("no editor language model is available; use the offline summary");
  }
  return { text: text.trim() };
}
