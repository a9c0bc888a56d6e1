/**
 * What the status bar says about a budget: the text `ctx 42.1k / 128k (33%)`, the severity
 * (warning from 70%, error from 90%) and the tooltip breakdown by layer. Pure functions: no
 * vscode here, so the rules are unit-tested directly.
 */
import type { Budget } from "@ctxlayer/client";

export const WARNING_PERCENT = 70;
export const ERROR_PERCENT = 90;

export type Severity = "ok" | "warning" | "error";

/** 950 -> "950", 42_100 -> "42.1k", 128_000 -> "128k", 1_048_576 -> "1.05M". A figure
 * that rounds up to the next unit takes it: 999_600 reads "1M", not "1000k" (a 1M window less
 * a small answer reserve is such a budget), 999.6 reads "1k". */
export function compact(n: number): string {
  if (Math.round(n) < 1000) return String(Math.round(n));
  const k = n / 1000;
  const thousands = k >= 100 ? Math.round(k).toString() : trimZero(k.toFixed(1));
  if (Number(thousands) < 1000) return thousands + "k";
  return trimZero((n / 1_000_000).toFixed(2)) + "M";
}

function trimZero(s: string): string {
  return s.replace(/\.0+$/, "").replace(/(\.\d*?)0+$/, "$1");
}

/** The daemon's percent as the status bar shows it: whole (89.5 reads 90%). */
export function shownPercent(budget: Budget): number {
  return Math.round(budget.percent); // the daemon's: the editor computes no percentages
}

export function statusText(budget: Budget): string {
  return `ctx ${compact(budget.used)} / ${compact(budget.limit)} (${shownPercent(budget)}%)`;
}

/** By the percent as shown: a figure that reads "(90%)" is an error, whatever decimal the
 * daemon sent (89.5 was a warning). */
export function severity(budget: Budget): Severity {
  const p = shownPercent(budget);
  if (p >= ERROR_PERCENT) return "error";
  if (p >= WARNING_PERCENT) return "warning";
  return "ok";
}

const LAYER_NAMES: [keyof Budget["byLayer"], string][] = [
  ["system", "System"],
  ["workspace", "Workspace"],
  ["rules", "Rules"],
  ["working", "Working memory"],
  ["history", "History"],
];

/** Markdown tooltip: one row per layer, the model, and where the next compaction happens
 * when the daemon says so. */
export function tooltip(budget: Budget, source: string): string {
  const rows = LAYER_NAMES.map(
    ([key, label]) => `| ${label} | ${(budget.byLayer[key] ?? 0).toLocaleString("en-US")} |`,
  );
  return [
    `**ctxlayer** · ${budget.model} · ${source}`,
    "",
    "| Layer | Tokens |",
    "| --- | ---: |",
    ...rows,
    `| **Total** | **${budget.used.toLocaleString("en-US")} / ${budget.limit.toLocaleString("en-US")}** |`,
    "",
    ...compactionLines(budget),
    "Click to show the context.",
  ].join("\n");
}

/** The daemon's compaction threshold, or nothing: a budget without one (null or absent) has
 * no threshold the editor could honestly name, so it guesses none. */
function compactionLines(budget: Budget): string[] {
  const next = budget.nextCompactionAt;
  if (next == null) return [];
  const left = Math.max(0, next - budget.used);
  return [
    budget.used >= next
      ? `History compaction is due (threshold ${next.toLocaleString("en-US")} tokens).`
      : `Next compaction at ${next.toLocaleString("en-US")} tokens (${left.toLocaleString("en-US")} to go).`,
    "",
  ];
}

/** The daemon's error band (a fraction of the count: 0.02 is ±2%) as whole percents, as the
 * Neovim plugin shows it; undefined when there is none or it rounds to 0%. */
export function errorBandText(band: number | null | undefined): string | undefined {
  if (band == null) return undefined;
  const percent = Math.round(band * 100);
  return percent > 0 ? `±${percent}%` : undefined;
}

/** The status text of a live chat: `ctx 12.3k / 128k (9%)`, then the last turn's cache hit. */
export function liveText(budget: Budget): string {
  const cached = budget.cachedTokens ? ` · ${compact(budget.cachedTokens)} cached` : "";
  return statusText(budget) + cached;
}

export const IDLE_TEXT = "ctx · no live chat";

function sourceName(source: string): string {
  if (source === "gateway") return "the gateway";
  if (source === "prepare") return "a ctxlayer model";
  return "@ctxlayer";
}

/** Markdown tooltip of a live chat: its conversation, layers, cache, error band, compaction. */
export function liveTooltip(chat: {
  conversationId: string;
  source: string;
  budget: Budget;
}): string {
  const b = chat.budget;
  const lines = tooltip(b, `${sourceName(chat.source)}, conversation \`${chat.conversationId}\``)
    .split("\n")
    .slice(0, -1); // the click line is ours below
  const extra: string[] = [];
  extra.push(
    b.cachedTokens != null
      ? `Cached by the provider on the last turn: ${b.cachedTokens.toLocaleString("en-US")} tokens.`
      : "The provider has not reported cached tokens for this chat yet.",
  );
  const band = errorBandText(b.errorBand);
  if (band) extra.push(`Counts are within ${band} of the provider's.`);
  return [...lines, ...extra, "", "Click to inspect this chat."].join("\n");
}

/** Tooltip while no chat is live: how to get one, and the workspace's own figure. */
export function idleTooltip(
  workspace: Budget | undefined,
  gateway?: { openai: string; anthropic: string } | null,
): string {
  return [
    "**ctxlayer** · no chat has sent a request through ctxlayer yet.",
    "",
    "Pick a **ctxlayer ·** model in the chat, ask **@ctxlayer**, or point a chat tool at the gateway.",
    "",
    ...(gateway
      ? [`Gateway: OpenAI base URL \`${gateway.openai}\`, Anthropic base URL \`${gateway.anthropic}\`.`, ""]
      : []),
    workspace
      ? `The workspace context alone: ${workspace.used.toLocaleString("en-US")} tokens (${workspace.model}).`
      : "The workspace context is not measured yet.",
    "",
    "Click to show the workspace context.",
  ].join("\n");
}
