/**
 * The commands of the palette: Show context, Set mode, Add rule, Refresh, Copy assembled
 * prompt, Restart, Show logs. Each failure ends in one message that says what to do.
 */
import { CtxlayerError, type ModeInfo } from "@ctxlayer/client";
import { modeRoom } from "./announcement";
import type { BudgetController, ControllerSettings, LiveChat } from "./controller";
import { errorText } from "./errors";
import * as api from "./vscodeapi";

export interface CommandDeps {
  controller: BudgetController;
  restart(): Promise<unknown>;
  log: api.LogOutputChannel;
}

/** The modes to offer, as the daemon announced them (its table, its default). */
export function modeItems(
  modes: Record<string, ModeInfo | undefined>,
  defaultMode: string | undefined,
  suggested: { mode: string; reason: string } | undefined,
): { label: string; description?: string; detail: string }[] {
  return Object.entries(modes).map(([mode, info]) => {
    const notes = [
      mode === defaultMode ? "default" : "",
      suggested?.mode === mode ? `suggested: ${suggested.reason}` : "",
    ].filter(Boolean);
    return {
      label: mode,
      description: notes.length ? notes.join(" · ") : undefined,
      detail: info ? modeRoom(info) : "",
    };
  });
}

/** The daemon's error kinds that say something of the request, not of the daemon. */
const ANSWERS = ["unknown_session", "invalid", "pinned_over_budget", "outside_workspace"];

/** Run a command body; on failure log it and show one actionable message. */
async function guarded(deps: CommandDeps, what: string, body: () => Promise<unknown>) {
  try {
    await body();
  } catch (err) {
    const text = `ctxlayer: ${what} failed: ${errorText(err)}`;
    deps.log.error(text);
    // a daemon's answer about the request (a chat not in memory, a bad value) is no failure
    // of the daemon: restarting it would not help, so it is not offered
    const answered = err instanceof CtxlayerError && ANSWERS.includes(err.kind);
    const choice = await api.showError(text, "Show Logs", ...(answered ? [] : ["Restart"]));
    if (choice === "Show Logs") deps.log.show();
    if (choice === "Restart") await deps.restart();
  }
}

/** The open inspector tabs, one per chat (key: conversation, else session, else workspace). */
const panels = new Map<string, api.InspectorPanel>();

function chatKey(chat: LiveChat | undefined): string {
  return chat ? chat.conversationId || chat.sessionId || "workspace" : "workspace";
}

/** Open (or bring forward) the inspector tab of `chat` (default: the live chat). */
export async function showContext(deps: CommandDeps, chat?: LiveChat): Promise<void> {
  await guarded(deps, "Show context", async () => {
    const html = await deps.controller.inspectorHtml(chat ?? deps.controller.live);
    // read after: a live chat whose session was closed is forgotten, its page the workspace's
    const target = chat ?? deps.controller.live;
    const key = chatKey(target);
    let panel = panels.get(key);
    if (panel) {
      panel.reveal();
    } else {
      panel = api.createInspectorPanel(target ? `ctxlayer · chat ${key.slice(0, 12)}` : "ctxlayer context");
      panels.set(key, panel);
      const subscription = deps.controller.onLive((live) => {
        // the tab refreshes while open, when its chat's figures change
        if (chatKey(live) !== key) return;
        deps.controller.inspectorHtml(live).then(
          (fresh) => panel && (panel.webview.html = fresh),
          (err) => deps.log.warn(`inspector refresh: ${errorText(err)}`),
        );
      });
      panel.onDidDispose(() => {
        subscription.dispose();
        panels.delete(key);
      });
    }
    panel.webview.html = html;
  });
}

export async function setMode(deps: CommandDeps): Promise<void> {
  await guarded(deps, "Set mode", async () => {
    const { controller } = deps;
    const announcement = controller.announcement;
    if (!announcement) throw new Error("the ctxlayer daemon is not running: run `ctxlayer: Restart`");
    const items = modeItems(announcement.modes, announcement.defaultMode, controller.suggestion);
    const pick = await api.showQuickPick(items, "ctxlayer mode");
    if (!pick) return;
    // the session first, so the settings listener sees the mode already applied
    await deps.controller.setMode(pick.label as ControllerSettings["mode"]);
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

/** Say that a chat's older turns were summarized; the button opens the inspector on it. */
export async function compactionNotice(deps: CommandDeps, text: string, chat?: LiveChat): Promise<void> {
  // the daemon's line already says "ctxlayer: ..."
  const choice = await api.showInfoWith(text, "Show context");
  if (choice === "Show context") await showContext(deps, chat);
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
