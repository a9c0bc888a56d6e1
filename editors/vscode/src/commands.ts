/**
 * The commands of the palette: Show context, Set mode, Add rule, Refresh, Copy assembled
 * prompt, Restart, Show logs. Each failure ends in one message that says what to do.
 */
import type { BudgetController } from "./controller";
import { errorText } from "./errors";
import * as api from "./vscodeapi";

export interface CommandDeps {
  controller: BudgetController;
  restart(): Promise<unknown>;
  log: api.LogOutputChannel;
}

const MODES: { mode: "short" | "deep" | "debug"; detail: string }[] = [
  { mode: "short", detail: "quick questions: small rule and working-memory shares (2,000 tokens)" },
  { mode: "deep", detail: "refactoring and implementation: larger shares (8,000 tokens)" },
  { mode: "debug", detail: "bugs and stack traces: working memory first (4,000 tokens)" },
];

/** Run a command body; on failure log it and show one actionable message. */
async function guarded(deps: CommandDeps, what: string, body: () => Promise<unknown>) {
  try {
    await body();
  } catch (err) {
    const text = `ctxlayer: ${what} failed: ${errorText(err)}`;
    deps.log.error(text);
    const choice = await api.showError(text, "Show Logs", "Restart");
    if (choice === "Show Logs") deps.log.show();
    if (choice === "Restart") await deps.restart();
  }
}

export async function showContext(deps: CommandDeps): Promise<void> {
  await guarded(deps, "Show context", async () => {
    const html = await deps.controller.inspectorHtml();
    const panel = api.createInspectorPanel("ctxlayer context");
    panel.webview.html = html;
  });
}

export async function setMode(deps: CommandDeps): Promise<void> {
  await guarded(deps, "Set mode", async () => {
    const suggested = deps.controller.suggestion;
    const items = MODES.map((m) => ({
      label: m.mode,
      description: suggested?.mode === m.mode ? `suggested: ${suggested.reason}` : undefined,
      detail: m.detail,
    }));
    const pick = await api.showQuickPick(items, "ctxlayer mode");
    if (!pick) return;
    // the session first, so the settings listener sees the mode already applied
    await deps.controller.setMode(pick.label as "short" | "deep" | "debug");
    await api.updateSetting("mode", pick.label);
  });
}

export async function addRule(deps: CommandDeps): Promise<void> {
  await guarded(deps, "Add rule", async () => {
    const text = await api.showInputBox(
      "A long-term rule, in the imperative",
      "Never use `any` in TypeScript",
    );
    if (!text?.trim()) return;
    const result = await deps.controller.addRule(text.trim());
    if (result.warning) void api.showInfo(`ctxlayer: ${result.warning}`);
  });
}

export async function refresh(deps: CommandDeps): Promise<void> {
  await guarded(deps, "Refresh", () => deps.controller.refresh());
}

export async function copyAssembled(deps: CommandDeps): Promise<void> {
  await guarded(deps, "Copy assembled prompt", async () => {
    const text = await deps.controller.assembledText();
    await api.copyToClipboard(text);
    void api.showInfo(`ctxlayer: copied the assembled prompt (${text.length} characters)`);
  });
}

export function register(deps: CommandDeps): api.Disposable[] {
  return [
    api.registerCommand("ctxlayer.showContext", () => showContext(deps)),
    api.registerCommand("ctxlayer.setMode", () => setMode(deps)),
    api.registerCommand("ctxlayer.addRule", () => addRule(deps)),
    api.registerCommand("ctxlayer.refresh", () => refresh(deps)),
    api.registerCommand("ctxlayer.copyAssembled", () => copyAssembled(deps)),
    api.registerCommand("ctxlayer.restart", () => deps.restart()),
    api.registerCommand("ctxlayer.showLogs", () => deps.log.show()),
  ];
}
