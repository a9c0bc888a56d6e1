/**
 * The `ctxlayer_workspace` language model tool: any chat's model can ask for the workspace
 * segment (tree, git state, agent files, selected files) with its hash, the same text
 * ctxlayer puts in its cacheable system layer. Owns only the tool; ctx/segment does the work.
 */
import type { CtxlayerClient, WorkspaceSegment } from "@ctxlayer/client";
import * as api from "./vscodeapi";

export const TOOL_NAME = "ctxlayer_workspace";

export interface WorkspaceToolInput {
  /** Only these parts of the segment (tree, git, agentFiles, files); all when absent. */
  parts?: string[];
}

/** The tool's text: a header with the hash and counts, then the segment (or the parts asked). */
export function segmentText(segment: WorkspaceSegment, parts?: readonly string[]): string {
  const chosen = parts?.length ? segment.parts.filter((p) => parts.includes(p.name)) : undefined;
  const unknown = (parts ?? []).filter((p) => !segment.parts.some((s) => s.name === p));
  if (unknown.length) {
    throw new Error(
      `parts: ${unknown.map((u) => JSON.stringify(u)).join(", ")} unknown; ` +
        `known: ${segment.parts.map((p) => p.name).join(", ")}`,
    );
  }
  const body = chosen ? chosen.map((p) => p.text).join("\n\n") : segment.text;
  const tokens = chosen ? chosen.reduce((n, p) => n + p.tokens, 0) : segment.tokens;
  return (
    `Workspace segment ${segment.hash} (version ${segment.version}, ${tokens} tokens, ` +
    `updated ${segment.updatedAt}):\n\n${body}`
  );
}

export function registerWorkspaceTool(client: () => CtxlayerClient): api.Disposable {
  return api.registerTool<WorkspaceToolInput>(TOOL_NAME, {
    async invoke(options) {
      const segment = await client().segment();
      return new api.LanguageModelToolResult([
        new api.LanguageModelTextPart(segmentText(segment, options.input?.parts)),
      ]);
    },
    prepareInvocation() {
      return { invocationMessage: "Reading the workspace segment from ctxlayer" };
    },
  });
}
