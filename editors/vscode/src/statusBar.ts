/**
 * The status-bar item: the live chat (the conversation that last sent a request through
 * ctxlayer) with its colour and tooltip; while there is none it says so, with the workspace's
 * own figure in the tooltip; or a problem.
 */
import type { Budget } from "@ctxlayer/client";
import { IDLE_TEXT, idleTooltip, liveText, liveTooltip, severity } from "./budgetView";
import type { BudgetSink, LiveChat } from "./controller";
import * as api from "./vscodeapi";

export class BudgetStatusItem implements BudgetSink {
  readonly item: api.StatusBarItem;
  private live: LiveChat | undefined;
  private workspace: Budget | undefined;
  /** The gateway's base URLs when the daemon runs one (from its initialize announcement). */
  gateway: { openai: string; anthropic: string } | null | undefined;

  constructor() {
    this.item = api.createStatusBarItem("ctxlayer.budget");
    this.item.name = "ctxlayer budget";
    this.item.command = "ctxlayer.showContext";
    this.showStarting();
    this.item.show();
  }

  /** The daemon is (re)starting: the spinner, until it runs or says why not. */
  showStarting(): void {
    this.live = undefined;
    this.item.text = "ctx $(sync~spin)";
    this.item.tooltip = "ctxlayer: starting the daemon";
    this.item.backgroundColor = undefined;
  }

  showBudget(budget: Budget, _source: string): void {
    this.workspace = budget;
    if (this.live) return;
    this.item.text = IDLE_TEXT;
    this.item.tooltip = api.markdown(idleTooltip(budget, this.gateway));
    this.item.backgroundColor = undefined;
  }

  showLive(chat: LiveChat | undefined): void {
    this.live = chat;
    if (!chat) {
      if (this.workspace) this.showBudget(this.workspace, "workspace");
      return;
    }
    this.item.text = liveText(chat.budget);
    this.item.tooltip = api.markdown(liveTooltip(chat));
    const level = severity(chat.budget);
    this.item.backgroundColor =
      level === "error"
        ? api.themeColor("statusBarItem.errorBackground")
        : level === "warning"
          ? api.themeColor("statusBarItem.warningBackground")
          : undefined;
  }

  showProblem(text: string, detail: string): void {
    this.live = undefined;
    this.item.text = `$(warning) ${text}`;
    this.item.tooltip = `ctxlayer: ${detail}`;
    this.item.backgroundColor = api.themeColor("statusBarItem.errorBackground");
  }

  dispose(): void {
    this.item.dispose();
  }
}
